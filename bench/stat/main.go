// Command stat runs the benchmarks of bench/peers for the runner of
// package bench (go run ./bench -peers) and reads their output with
// golang.org/x/perf/benchfmt; its module also pins the benchstat that the
// runner's -compare runs (go tool benchstat). Keeping both here keeps
// golang.org/x/perf out of the library's go.mod.
//
// Usage:
//
//	go run . -dir DIR [-select REGEXP] [-warmup N] -- GO-TEST-FLAGS
//
// It runs `go test GO-TEST-FLAGS` in DIR with the peers' case table asked
// for, copies everything go test prints to its standard error as progress,
// and writes to its standard output the cases of the table that REGEXP
// selects (matching "Peers/Group/Name" or "BenchmarkGroup/Name"), with
// their runs, in the runner's -json format: the runner reads it as it reads
// -in. The first N runs of each case are warm-up and left out. A case that
// go test reported as FAIL or SKIP, or whose runs lack its metric, has that
// status and no runs. When go test fails, stat writes the report and then
// exits with status 1.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/perf/benchfmt"
)

// goTestRun is what goTest read of a go test run.
type goTestRun struct {
	Config  map[string]string `json:"config"`
	Results []result          `json:"results"`
	Failed  map[string]string `json:"failed"`
	Error   string            `json:"error,omitempty"`
}

// result is one result line.
type result struct {
	Name   string             `json:"name"`
	Iters  int                `json:"iters"`
	Values map[string]float64 `json:"values"`
}

// failedLine matches go test's "--- FAIL: BenchmarkGroup/Name-2" and
// "--- SKIP: ..." lines, which are not part of the benchmark format.
var failedLine = regexp.MustCompile(`--- (FAIL|SKIP): Benchmark(\S+?)(-\d+)?\s*$`)

// endName and endLine are the last result line goTest reads.
const (
	endName = "SpindleStatEnd"
	endLine = "Benchmark" + endName + " 1 0 ns/op"
)

func main() {
	dir := flag.String("dir", ".", "run go test in `directory`")
	sel := flag.String("select", ".", "report the cases whose \"Peers/Group/Name\" or \"BenchmarkGroup/Name\" matches `regexp`")
	warmup := flag.Int("warmup", 0, "leave out the first `n` runs of each case")
	flag.Parse()
	re, err := regexp.Compile(*sel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stat: bad -select:", err)
		os.Exit(2)
	}
	cmd := exec.Command("go", append([]string{"test"}, flag.Args()...)...)
	cmd.Dir = *dir
	cmd.Env = append(os.Environ(), "SPINDLE_PEERS_CASES=json", "SPINDLE_PEERS_SELECT="+*sel)
	run, err := goTest(cmd, os.Stderr)
	var rep *peersReport
	if err == nil {
		rep, err = reportOf(run, re, *warmup)
	}
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stat:", err)
		os.Exit(1)
	}
	if run.Error != "" {
		fmt.Fprintf(os.Stderr, "stat: go test in %s: %s\n", *dir, run.Error)
		os.Exit(1)
	}
}

// The peers' case table: the configuration line caseTableKey names, which
// bench/peers prints when SPINDLE_PEERS_CASES is "json".
const caseTableKey = "spindle-peers-cases"

// caseTable is what that line carries (see bench/peers/case.go).
type caseTable struct {
	Groups []struct{ Name, Note string } `json:"groups"`
	Cases  []struct {
		Group, Name, Unit, Metric, Baseline, Kind string
	} `json:"cases"`
}

// peersReport is the part of the runner's -json format stat writes.
type peersReport struct {
	Notes map[string]string `json:"notes"`
	Cases []reportCase      `json:"cases"`
}

type reportCase struct {
	Group    string      `json:"group"`
	Case     string      `json:"case"`
	Unit     string      `json:"unit"`
	Metric   string      `json:"metric"`
	Kind     string      `json:"kind"`
	Baseline string      `json:"baseline,omitempty"`
	Status   string      `json:"status"` // "ok", "FAILED" or "SKIPPED"
	Runs     []reportRun `json:"runs"`
}

type reportRun struct {
	Iterations int      `json:"iterations"`
	Ns         float64  `json:"ns"` // the case's metric per unit
	Allocs     float64  `json:"allocs"`
	Tasks      *float64 `json:"tasks"`
}

// reportOf turns a go test run into the report of the cases re selects.
func reportOf(run *goTestRun, re *regexp.Regexp, warmup int) (*peersReport, error) {
	var table caseTable
	text, ok := run.Config[caseTableKey]
	if !ok {
		return nil, fmt.Errorf("go test printed no case table (%s)", run.Error)
	}
	if err := json.Unmarshal([]byte(text), &table); err != nil {
		return nil, fmt.Errorf("bad case table: %w", err)
	}
	rep := &peersReport{Notes: map[string]string{}, Cases: []reportCase{}}
	for _, g := range table.Groups {
		rep.Notes["Peers/"+g.Name] = g.Note
	}
	byName := map[string][]result{}
	for _, r := range run.Results {
		byName[r.Name] = append(byName[r.Name], r)
	}
	for _, c := range table.Cases {
		name := c.Group + "/" + c.Name
		if !re.MatchString("Peers/"+name) && !re.MatchString("Benchmark"+name) {
			continue
		}
		rc := reportCase{Group: "Peers/" + c.Group, Case: c.Name, Unit: c.Unit, Metric: c.Metric, Kind: c.Kind,
			Baseline: c.Baseline, Status: "ok", Runs: []reportRun{}}
		if rc.Metric == "" {
			rc.Metric = "ns"
		}
		runs := byName[name]
		runs = runs[min(warmup, len(runs)):]
		for _, r := range runs {
			v, ok := r.Values[rc.Metric+"/"+c.Unit]
			if !ok {
				rc.Status = "FAILED" // a run without the case's figure
				break
			}
			rr := reportRun{Iterations: r.Iters, Ns: v, Allocs: r.Values["allocs/"+c.Unit]}
			if t, ok := r.Values["tasks/"+c.Unit]; ok {
				rr.Tasks = &t
			}
			rc.Runs = append(rc.Runs, rr)
		}
		switch how := run.Failed[name]; {
		case how == "SKIP":
			rc.Status = "SKIPPED"
		case how != "" || len(runs) == 0 && run.Error != "":
			rc.Status = "FAILED"
		}
		if rc.Status != "ok" {
			rc.Runs = []reportRun{}
		}
		rep.Cases = append(rep.Cases, rc)
	}
	return rep, nil
}

// goTest runs cmd, a go test, copying its output to progress, and reads
// the configuration lines, the results and the failures it printed.
func goTest(cmd *exec.Cmd, progress io.Writer) (*goTestRun, error) {
	progress = &lockedWriter{w: progress} // go test's stderr is copied from another goroutine
	cmd.Stderr = progress
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rep := &goTestRun{Config: map[string]string{}, Results: []result{}, Failed: map[string]string{}}
	// The reader sees every line once scanned; the scanner's side notes
	// the failures and echoes the lines.
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			if m := failedLine.FindStringSubmatch(line); m != nil {
				rep.Failed[m[2]] = m[1]
			}
			fmt.Fprintln(progress, line)
			fmt.Fprintln(pw, line)
		}
		// benchfmt hands configuration lines over with the results that
		// follow them: a last result line of this command's own carries
		// the final configuration out even when go test printed no result.
		fmt.Fprintln(pw, endLine)
		pw.CloseWithError(sc.Err())
	}()
	r := benchfmt.NewReader(pr, cmd.Dir)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata and lines that are not results
		}
		if res.Name.String() == endName {
			for _, c := range res.Config {
				if c.File {
					rep.Config[c.Key] = string(c.Value)
				}
			}
			continue
		}
		rep.Results = append(rep.Results, convert(res))
	}
	readErr := r.Err()
	io.Copy(io.Discard, pr) // let the scanner finish
	if err := cmd.Wait(); err != nil {
		rep.Error = err.Error()
	}
	return rep, readErr
}

// convert names a result as the runner does and keys its values by the
// units go test printed.
func convert(res *benchfmt.Result) result {
	base, parts := res.Name.Parts()
	name := string(base)
	for _, p := range parts {
		if !strings.HasPrefix(string(p), "-") { // the -GOMAXPROCS suffix
			name += string(p)
		}
	}
	out := result{Name: name, Iters: res.Iters, Values: map[string]float64{}}
	for _, v := range res.Values {
		if v.OrigUnit != "" {
			out.Values[v.OrigUnit] = v.OrigValue
		} else {
			out.Values[v.Unit] = v.Value
		}
	}
	return out
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
