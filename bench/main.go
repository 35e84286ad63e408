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
// SVG chart per group. -in reads the figures of an earlier -json run instead
// of running, for -plot and -compare.
//
// The same cases run under `go test -bench . ./bench` (see bench_test.go).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// groupOrder lists the groups of DESIGN.md ("The bundled benchmarks") in the
// order the runner runs and prints them.
var groupOrder = []string{"Chain", "Post", "Parallel", "Immediate", "Channel", "Merge", "Hooks", "Alloc", "Service", "HTTP", "Group", "Semaphore", "Shard", "Net"}

// hwc holds the hardware counters main opens; nil when the kernel refuses
// them and under `go test`, where the Meter then reports no inst/cycles.
var hwc *hwCounters

// config holds the command-line settings.
type config struct {
	bench    string        // regexp over "Group/Name"
	runs     int           // measured runs per case
	perRun   time.Duration // -test.benchtime of each measured run
	jsonPath string        // "" none, "-" stdout
	list     bool
	peers    bool   // also run bench/peers
	peersDir string // where bench/peers is; "" to find it
	plotDir  string // "" no charts
	compare  string // an earlier -json report to compare with
	in       string // read the figures from this -json report instead of running
}

// main parses the flags, runs the selected cases and exits with run's status.
func main() {
	os.Exit(run())
}

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
	flag.StringVar(&cfg.plotDir, "plot", "", "write one SVG chart per group into `directory`")
	flag.StringVar(&cfg.compare, "compare", "", "compare the figures with an earlier -json report `file`: change of the medians and its p-value")
	flag.StringVar(&cfg.in, "in", "", "read the figures from a -json report `file` instead of running (for -plot and -compare)")
	flag.Func("alloc", "how the cases' executors allocate futures: `heap` or slab (executor.WithAllocation)", setAllocation)
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q\n", flag.Args())
		usage()
		return 2
	}
	if cfg.runs < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs must be at least 1")
		return 2
	}
	if cfg.perRun <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -time must be positive")
		return 2
	}
	re, err := regexp.Compile(cfg.bench)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: bad -bench: %v\n", err)
		return 2
	}

	var env environment
	var sums []caseSummary
	status := 0
	if cfg.in != "" {
		env, sums, err = readJSONFile(cfg.in)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 2
		}
		var keep []caseSummary
		for _, s := range sums {
			if re.MatchString(fullName(s.Case)) {
				keep = append(keep, s)
			}
		}
		sums = keep
		linkBaselines(sums)
	} else {
		var code int
		env, sums, code = runSuite(cfg, re)
		if cfg.list || len(sums) == 0 {
			return code
		}
		status = code // the peers failed: print what ran, then fail
	}

	table := io.Writer(os.Stdout)
	if cfg.jsonPath == "-" {
		table = os.Stderr
	}
	writeTable(table, env, sums)
	if cfg.compare != "" {
		oldEnv, old, err := readJSONFile(cfg.compare)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			status = 1
		} else {
			writeCompare(table, cfg.compare, oldEnv, old, sums)
		}
	}
	if cfg.plotDir != "" {
		paths, err := writePlots(cfg.plotDir, env, sums)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -plot: %v\n", err)
			status = 1
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %d charts into %s\n", len(paths), cfg.plotDir)
	}
	if cfg.jsonPath != "" {
		if err := writeJSONFile(cfg.jsonPath, env, sums); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			status = 1
		}
	}
	for _, s := range sums {
		if s.Status != statusOK {
			status = 1
		}
	}
	return status
}

// runSuite runs (or, with -list, lists) the selected cases of the suite
// and, with -peers, of bench/peers. code is non-zero when nothing could
// run (2: usage) or the peers could not run (1).
func runSuite(cfg config, re *regexp.Regexp) (env environment, sums []caseSummary, code int) {
	selected := selectCases(cases, re)
	var peerSums []caseSummary
	var notes map[string]string
	var peersErr error
	if cfg.list {
		for _, c := range selected {
			fmt.Println(fullName(c))
		}
		if cfg.peers {
			peerSums, _, peersErr = runPeers(cfg, re, os.Stderr)
			for _, s := range peerSums {
				fmt.Println(fullName(s.Case))
			}
			if peersErr != nil {
				fmt.Fprintf(os.Stderr, "bench: %v\n", peersErr)
				return env, nil, 1
			}
		}
		return env, nil, 0
	}
	if len(selected) == 0 && !cfg.peers {
		fmt.Fprintf(os.Stderr, "bench: no case matches -bench %q (%d registered)\n", cfg.bench, len(cases))
		return env, nil, 2
	}

	// The counters cover every thread of the process (see perf_linux.go);
	// locking first starts the runtime's template thread before they are
	// opened, and keeps the main goroutine on the thread it started on.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	env = environment{
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		Runs:       cfg.runs,
		PerRun:     cfg.perRun,
		Alloc:      allocation.String(),
		Date:       time.Now().UTC().Format(time.RFC3339),
	}
	if h, err := openHWCounters(); err != nil {
		env.Counters = err.Error()
	} else {
		hwc = h
		defer func() { h.close(); hwc = nil }()
	}

	start := time.Now()
	sums = make([]caseSummary, len(selected))
	for i, c := range selected {
		sums[i] = measure(c, cfg, i, len(selected), os.Stderr)
	}
	if cfg.peers {
		peerSums, notes, peersErr = runPeers(cfg, re, os.Stderr)
		if peersErr != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", peersErr)
			code = 1
		}
		sums = append(sums, peerSums...)
		env.Notes = notes
	}
	linkBaselines(sums)
	fmt.Fprintf(os.Stderr, "bench: %d cases in %v\n", len(sums), time.Since(start).Round(100*time.Millisecond))
	if len(sums) == 0 {
		fmt.Fprintf(os.Stderr, "bench: no case matches -bench %q\n", cfg.bench)
		return env, nil, 2
	}
	return env, sums, code
}

// usage prints the runner's own flags (not the testing package's -test.*
// flags, which are accepted too).
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: go run ./bench [flags]\n\nflags:\n")
	flag.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + usage
		if g, ok := f.Value.(flag.Getter); ok {
			switch v := g.Get().(type) {
			case string:
				if v != "" {
					line += fmt.Sprintf(" (default %q)", v)
				}
			case bool:
			default:
				line += fmt.Sprintf(" (default %v)", v)
			}
		}
		fmt.Fprintln(out, line)
	})
}

// setBenchtime sets the testing package's -test.benchtime, which
// testing.Benchmark reads for every call.
func setBenchtime(d time.Duration) {
	if err := flag.Set("test.benchtime", d.String()); err != nil {
		panic("bench: setting test.benchtime: " + err.Error())
	}
}

// warmupTime is the benchtime of the warm-up run before the measured ones.
func warmupTime(perRun time.Duration) time.Duration {
	return max(perRun/10, time.Microsecond)
}

// measure runs case c once as warm-up and then cfg.runs times, reporting
// progress (case, run i/N) on progress, and summarizes the runs.
func measure(c Case, cfg config, idx, total int, progress io.Writer) caseSummary {
	fmt.Fprintf(progress, "[%*d/%d] %s: warm-up", len(fmt.Sprint(total)), idx+1, total, fullName(c))
	p := &probe{fn: c.Fn}
	setBenchtime(warmupTime(cfg.perRun))
	testing.Benchmark(p.run)
	status := p.status()
	var runs []runFigures
	if status == statusOK {
		setBenchtime(cfg.perRun)
		for r := 1; r <= cfg.runs; r++ {
			fmt.Fprintf(progress, ", run %d/%d", r, cfg.runs)
			res := testing.Benchmark(p.run)
			if status = p.status(); status == statusOK && res.N == 0 {
				status = statusFailed
			}
			if status != statusOK {
				break
			}
			inst, cycles := p.perIteration()
			runs = append(runs, figuresFromResult(res, c.Unit, metricOf(c), inst, cycles))
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

// probe wraps a case's function to learn, after testing.Benchmark returns,
// whether the last round failed or skipped (testing.Benchmark discards the
// message) and how many instructions and cycles the whole round took, the
// fallback for cases that do not use a Meter.
type probe struct {
	fn              func(b *testing.B)
	failed, skipped bool
	n               int
	inst, cycles    float64
	hwOK            bool
	before, after   hwSample // reused so that reading does not allocate
}

// run is the benchmark function handed to testing.Benchmark: one round of
// p.fn for b.N iterations. The last round is the one the result describes.
func (p *probe) run(b *testing.B) {
	p.failed, p.skipped, p.hwOK = false, false, false
	if hwc != nil {
		hwc.sampleInto(&p.before)
	}
	defer func() {
		p.n = b.N
		p.failed, p.skipped = b.Failed(), b.Skipped()
		if hwc != nil {
			hwc.sampleInto(&p.after)
			p.inst, p.cycles, p.hwOK = p.after.since(p.before)
		}
	}()
	p.fn(b)
}

// status classifies the last round.
func (p *probe) status() string {
	switch {
	case p.failed:
		return statusFailed
	case p.skipped:
		return statusSkipped
	}
	return statusOK
}

// perIteration returns the last round's instructions and cycles per
// iteration, or nils when the counters gave no figure.
func (p *probe) perIteration() (inst, cycles *float64) {
	if !p.hwOK || p.n <= 0 {
		return nil, nil
	}
	return ptr(p.inst / float64(p.n)), ptr(p.cycles / float64(p.n))
}
