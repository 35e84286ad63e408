// Command stat runs `go test` with the arguments after "--" in the
// directory -dir, copies everything go test prints to its standard error
// as progress, and reads go test's output in the Go benchmark format
// (golang.org/x/perf/benchfmt). It then writes one JSON object to its
// standard output:
//
//	{"config": {"goos": "linux", ...},
//	 "results": [{"name": "Group/Name", "iters": 1000, "values": {"ns/op": 12.5}}, ...],
//	 "failed": {"Group/Name": "FAIL"},
//	 "error": "exit status 1"}
//
// config holds the configuration lines ("key: value"); results the result
// lines in order, each named without "Benchmark" and the -GOMAXPROCS
// suffix, its values keyed by the units as go test printed them; failed
// the benchmarks go test reported as FAIL or SKIP; error why go test
// failed, if it did. The runner of package bench (go run ./bench -peers)
// runs the peers' benchmarks this way, and this module's benchstat tool
// (go tool benchstat, pinned by go.mod) for -compare: the module keeps
// golang.org/x/perf out of the library's go.mod.
//
// Usage:
//
//	go run . -dir DIR -- -run '^$' -bench . -count 6
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

// report is the output object.
type report struct {
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
	flag.Parse()
	rep, err := goTest(*dir, flag.Args(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stat:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "stat:", err)
		os.Exit(1)
	}
}

// goTest runs go test with args in dir, copying its output to progress.
func goTest(dir string, args []string, progress io.Writer) (*report, error) {
	progress = &lockedWriter{w: progress} // go test's stderr is copied from another goroutine
	cmd := exec.Command("go", append([]string{"test"}, args...)...)
	cmd.Dir, cmd.Stderr = dir, progress
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	rep := &report{Config: map[string]string{}, Results: []result{}, Failed: map[string]string{}}
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
	r := benchfmt.NewReader(pr, dir)
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
