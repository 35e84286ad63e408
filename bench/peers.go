package main

// -peers: the cases of the nested module bench/peers, which compares
// spindle with other projects. The main module must not depend on the
// peers, so the runner runs `go test` there as a subprocess and reads its
// output: first the case table (the line peersListPrefix starts, printed
// because peersListEnv is set), then one result line per run, parsed by
// benchfmt in the nested module bench/stat.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The protocol with bench/peers (see bench/peers/case.go).
const (
	peersListEnv    = "SPINDLE_PEERS_CASES"  // "json": print the case table first
	peersSelectEnv  = "SPINDLE_PEERS_SELECT" // a regexp over "Peers/Group/Name"
	peersListPrefix = "spindle-peers-cases: "
	peersGroup      = "Peers/" // prefix of the peers' groups in the table
)

// peerListing is the case table bench/peers prints.
type peerListing struct {
	Groups []struct {
		Name string `json:"name"`
		Note string `json:"note"`
	} `json:"groups"`
	Cases []struct {
		Group    string `json:"group"`
		Name     string `json:"name"`
		Unit     string `json:"unit"`
		Metric   string `json:"metric"`
		Baseline string `json:"baseline"`
		Kind     string `json:"kind"`
		Version  string `json:"version"`
	} `json:"cases"`
}

// nestedDir returns the directory of the nested module bench/<name>: dir
// when set, else bench/<name> under the root of the main module that `go
// env GOMOD` names for the working directory.
func nestedDir(dir, name string) (string, error) {
	if dir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMOD: %w", err)
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			return "", errors.New("not inside spindle's module: run from the repository")
		}
		dir = filepath.Join(filepath.Dir(gomod), "bench", name)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("no %s module in %s: %w", name, dir, err)
	}
	return dir, nil
}

// failedBench matches go test's "--- FAIL: BenchmarkGroup/Name" and
// "--- SKIP: ..." lines.
var failedBench = regexp.MustCompile(`--- (FAIL|SKIP): Benchmark(\S+?)(-\d+)?\s*$`)

// peerResult is one result line of go test, as bench/stat reports it.
type peerResult struct {
	Name   string             `json:"name"` // "Group/Name"
	Iters  int                `json:"iters"`
	Values map[string]float64 `json:"values"`
}

// parseResults parses go test's output with benchfmt, in the nested
// module bench/stat (go run there).
func parseResults(out []byte) (map[string][]testing.BenchmarkResult, error) {
	dir, err := nestedDir("", "stat")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir, cmd.Stdin, cmd.Stderr = dir, bytes.NewReader(out), os.Stderr
	js, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go run in %s: %w", dir, err)
	}
	results := map[string][]testing.BenchmarkResult{}
	dec := json.NewDecoder(bytes.NewReader(js))
	for dec.More() {
		var r peerResult
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("bench/stat: %w", err)
		}
		results[r.Name] = append(results[r.Name], testing.BenchmarkResult{N: r.Iters, Extra: r.Values})
	}
	return results, nil
}

// runPeers runs the peers' cases that re selects (matching "Peers/Group/Name"
// or "BenchmarkGroup/Name"), cfg.runs measured runs each after one warm-up
// run, echoing go test's output to progress. It returns their summaries in
// the peers' order, the notes of their groups, and an error when go test
// could not run at all or failed (the cases it did not report are FAILED).
func runPeers(cfg config, re *regexp.Regexp, progress io.Writer) ([]caseSummary, map[string]string, error) {
	dir, err := nestedDir(cfg.peersDir, "peers")
	if err != nil {
		return nil, nil, err
	}
	args := []string{"test", "-run", "^$", "-timeout", "60m"}
	if !cfg.list {
		args = append(args, "-bench", ".", "-count", strconv.Itoa(cfg.runs+1), "-benchtime", cfg.perRun.String())
	}
	progress = &lockedWriter{w: progress} // go test's stderr is copied from another goroutine
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), peersListEnv+"=json", peersSelectEnv+"="+re.String())
	cmd.Stderr = progress
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(progress, "bench: peers: go %s (in %s)\n", strings.Join(args, " "), dir)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("go test in %s: %w", dir, err)
	}
	var listing *peerListing
	var stdout bytes.Buffer
	failed := map[string]string{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, peersListPrefix); ok {
			listing = &peerListing{}
			if err := json.Unmarshal([]byte(rest), listing); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				return nil, nil, fmt.Errorf("peers: bad case table: %w", err)
			}
			continue
		}
		stdout.WriteString(line + "\n")
		if m := failedBench.FindStringSubmatch(line); m != nil {
			failed[m[2]] = map[string]string{"FAIL": statusFailed, "SKIP": statusSkipped}[m[1]]
		}
		fmt.Fprintf(progress, "peers: %s\n", line)
	}
	waitErr := cmd.Wait()
	if listing == nil {
		if waitErr == nil {
			waitErr = errors.New("it printed no case table")
		}
		return nil, nil, fmt.Errorf("go test in %s: %w", dir, waitErr)
	}
	results, err := parseResults(stdout.Bytes())
	if err != nil {
		return nil, nil, err
	}
	notes := map[string]string{}
	for _, g := range listing.Groups {
		notes[peersGroup+g.Name] = g.Note
	}
	var sums []caseSummary
	for _, lc := range listing.Cases {
		name := lc.Group + "/" + lc.Name
		if !re.MatchString(peersGroup+name) && !re.MatchString("Benchmark"+name) {
			continue
		}
		c := benchCase{Group: peersGroup + lc.Group, Name: lc.Name, Unit: lc.Unit, Baseline: lc.Baseline, Kind: lc.Kind, Metric: lc.Metric}
		if cfg.list {
			sums = append(sums, caseSummary{Case: c, Status: statusOK})
			continue
		}
		rs := results[name]
		if len(rs) > 1 {
			rs = rs[1:] // the first run is the warm-up
		}
		var runs []runFigures
		for _, r := range rs {
			runs = append(runs, figuresFromResult(r, c.Unit, metricOf(c), nil, nil))
		}
		status := statusOK
		if st, ok := failed[name]; ok {
			status, runs = st, nil
		}
		sums = append(sums, summarize(c, runs, status))
	}
	if waitErr != nil {
		return sums, notes, fmt.Errorf("go test in %s: %w", dir, waitErr)
	}
	return sums, notes, nil
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
