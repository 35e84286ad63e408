// Command bench runs spindle's bundled benchmarks and prints a
// perf_tests-style table: for every case the median, median absolute
// deviation, minimum and maximum time per unit over several runs, the
// allocations, executor tasks, instructions and cycles per unit, the case
// it is compared with and the ratio to it, measured in the same process;
// then a summary of where spindle wins and loses against the best
// non-spindle case.
//
// Usage:
//
//	go run ./bench [-bench REGEXP] [-runs N] [-time D] [-alloc heap|slab] [-peers]
//	               [-json FILE] [-plot DIR] [-compare OLD.json] [-in FILE] [-list]
//
// -peers adds the cases of the nested module bench/peers (other projects
// doing the same jobs), run by `go test` in a subprocess. -plot writes one
// SVG chart per group, drawn by the nested module bench/plot (gonum/plot);
// -compare prints benchstat's comparison with an earlier -json run, by the
// nested module bench/stat (golang.org/x/perf), which also reads the peers'
// output: the library's go.mod names none of these. -in reads the figures
// of an earlier -json run instead of running, for -plot and -compare.
//
// The same cases run under `go test -bench . ./bench` (see bench_test.go).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// groupOrder lists the groups of docs/design.md ("The bundled benchmarks") in the
// order the runner runs and prints them.
var groupOrder = []string{"Chain", "Post", "Parallel", "Immediate", "Channel", "Merge", "Hooks", "Alloc", "Service", "HTTP", "Group", "Semaphore", "Shard", "Net", "Web", "TLS", "Files"}

// hwc holds the hardware counters main opens; nil when the kernel refuses
// them and under `go test`, where the meter then reports no inst/cycles.
var hwc *hwCounters

// config holds the command-line settings (see the flags in run).
type config struct {
	bench, jsonPath, peersDir, plotDir, compare, in string
	runs                                            int
	perRun                                          time.Duration
	list, peers                                     bool
}

func main() { os.Exit(run()) }

// run is main's body. It returns the exit status: 0 when every case ran,
// 1 when one failed or was skipped, 2 for bad usage.
func run() int {
	testing.Init()
	var cfg config
	flag.StringVar(&cfg.bench, "bench", ".", "run the cases whose \"Group/Name\" or \"BenchmarkGroup/Name\" matches `regexp` (unanchored)")
	flag.IntVar(&cfg.runs, "runs", 5, "measured runs per case, after one short warm-up run")
	flag.DurationVar(&cfg.perRun, "time", 200*time.Millisecond, "target `duration` of each run (sets -test.benchtime)")
	flag.StringVar(&cfg.jsonPath, "json", "", "also write every figure as JSON to `file` (\"-\": stdout, the table then goes to stderr)")
	flag.BoolVar(&cfg.list, "list", false, "print the names of the selected cases and exit")
	flag.BoolVar(&cfg.peers, "peers", false, "also run the peers (bench/peers: other projects doing the same jobs) with go test in a subprocess")
	flag.StringVar(&cfg.peersDir, "peers-dir", "", "`directory` of the bench/peers module (default: found from the working directory's module)")
	flag.StringVar(&cfg.plotDir, "plot", "", "write one SVG chart per group into `directory` (drawn by bench/plot)")
	flag.StringVar(&cfg.compare, "compare", "", "compare the figures with an earlier -json report `file`, by benchstat (bench/stat)")
	flag.StringVar(&cfg.in, "in", "", "read the figures from a -json report `file` instead of running (for -plot and -compare)")
	flag.Func("alloc", "how the cases' executors allocate futures: `heap` or slab (executor.WithAllocation)", setAllocation)
	flag.Usage = usage
	flag.Parse()
	re, err := regexp.Compile(cfg.bench)
	switch {
	case flag.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", flag.Args())
	case cfg.runs < 1:
		err = errors.New("-runs must be at least 1")
	case cfg.perRun <= 0:
		err = errors.New("-time must be positive")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}

	var env environment
	var sums []caseSummary
	status := 0
	if cfg.in != "" {
		if env, sums, err = readJSONFile(cfg.in); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 2
		}
		sums = slices.DeleteFunc(sums, func(s caseSummary) bool { return !re.MatchString(fullName(s.Case)) })
		linkBaselines(sums)
	} else if env, sums, status = runSuite(cfg, re); cfg.list || len(sums) == 0 {
		return status // else the peers failed: print what ran, then fail
	}

	table := io.Writer(os.Stdout)
	if cfg.jsonPath == "-" {
		table = os.Stderr
	}
	writeTable(table, env, sums)
	step := func(on bool, name string, do func() error) {
		if on {
			if err := do(); err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s: %v\n", name, err)
				status = 1
			}
		}
	}
	step(cfg.compare != "", "-compare", func() error { return compare(table, cfg, env, sums) })
	step(cfg.plotDir != "", "-plot", func() error { return writePlots(cfg.plotDir, env, sums) })
	step(cfg.jsonPath != "", "-json", func() error { return writeJSONFile(cfg.jsonPath, env, sums) })
	if slices.ContainsFunc(sums, func(s caseSummary) bool { return s.Status != statusOK }) {
		status = 1
	}
	return status
}

// runSuite runs (or, with -list, lists) the selected cases of the suite
// and, with -peers, of bench/peers. code is non-zero when nothing could
// run (2: usage) or the peers could not run (1).
func runSuite(cfg config, re *regexp.Regexp) (env environment, sums []caseSummary, code int) {
	selected := selectCases(cases, re)
	if len(selected) == 0 && !cfg.peers {
		fmt.Fprintf(os.Stderr, "bench: no case matches -bench %q (%d registered)\n", cfg.bench, len(cases))
		return env, nil, 2
	}
	// The counters cover every thread of the process (see perf_linux.go);
	// locking first starts the runtime's template thread before they are
	// opened, and keeps the main goroutine on the thread it started on.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	env = environment{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Runs: cfg.runs, PerRun: cfg.perRun,
		Alloc: allocation.String(), Date: time.Now().UTC().Format(time.RFC3339)}
	if h, err := openHWCounters(); err != nil {
		env.Counters = err.Error()
	} else if !cfg.list {
		hwc = h
		defer func() { h.close(); hwc = nil }()
	}
	start := time.Now()
	for i, c := range selected {
		s := caseSummary{Case: c}
		if !cfg.list {
			s = measure(c, cfg, i, len(selected), os.Stderr)
		}
		sums = append(sums, s)
	}
	if cfg.peers {
		peerSums, notes, err := runPeers(cfg, re, os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			code = 1
		}
		sums, env.Notes = append(sums, peerSums...), notes
	}
	if cfg.list {
		for _, s := range sums {
			fmt.Println(fullName(s.Case))
		}
		return env, nil, code
	}
	linkBaselines(sums)
	fmt.Fprintf(os.Stderr, "bench: %d cases in %v\n", len(sums), time.Since(start).Round(100*time.Millisecond))
	if len(sums) == 0 {
		fmt.Fprintf(os.Stderr, "bench: no case matches -bench %q\n", cfg.bench)
		return env, nil, 2
	}
	return env, sums, code
}

// usage prints the runner's own flags (the testing package's -test.*
// flags are accepted too).
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: go run ./bench [flags]\n\nflags:\n")
	own := flag.NewFlagSet("bench", flag.ContinueOnError)
	own.SetOutput(out)
	flag.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") {
			own.Var(f.Value, f.Name, f.Usage)
		}
	})
	own.PrintDefaults()
}

// measure runs case c once as warm-up (a tenth of the run time) and then
// cfg.runs times, reporting progress on progress, and summarizes the runs.
// testing.Benchmark drops a failed or skipped round's message, so the round
// itself records how it ended.
func measure(c benchCase, cfg config, idx, total int, progress io.Writer) caseSummary {
	fmt.Fprintf(progress, "[%*d/%d] %s: warm-up", len(fmt.Sprint(total)), idx+1, total, fullName(c))
	status := statusOK
	round := func(b *testing.B) {
		defer func() {
			switch {
			case b.Failed():
				status = statusFailed
			case b.Skipped():
				status = statusSkipped
			}
		}()
		c.Fn(b)
	}
	setBenchtime := func(d time.Duration) { // -test.benchtime, which testing.Benchmark reads for every call
		if err := flag.Set("test.benchtime", d.String()); err != nil {
			panic("bench: setting test.benchtime: " + err.Error())
		}
	}
	setBenchtime(max(cfg.perRun/10, time.Microsecond))
	testing.Benchmark(round)
	var runs []runFigures
	setBenchtime(cfg.perRun)
	for r := 1; r <= cfg.runs && status == statusOK; r++ {
		fmt.Fprintf(progress, ", run %d/%d", r, cfg.runs)
		if res := testing.Benchmark(round); res.N > 0 && status == statusOK {
			runs = append(runs, figuresFromResult(res, c.Unit, metricOf(c)))
		} else if status == statusOK {
			status = statusFailed // no iteration ran
		}
	}
	s := summarize(c, runs, status)
	if s.Status == statusOK {
		fmt.Fprintf(progress, ": %s/%s\n", fmtValue(metricOf(c), s.Median), c.Unit)
	} else {
		fmt.Fprintf(progress, ": %s\n", s.Status)
	}
	return s
}
