package main

// -peers: the cases of the nested module bench/peers, which compares
// spindle with other projects. The main module must not depend on the
// peers, so the runner runs `go test` there as a subprocess and reads its
// output: first the case table (the line peersListPrefix starts, printed
// because peersListEnv is set), then one result line per run.

import (
	"bufio"
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

// findPeersDir returns the directory of the bench/peers module: dir when
// set, else bench/peers under the root of the main module that `go env
// GOMOD` names for the working directory.
func findPeersDir(dir string) (string, error) {
	if dir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMOD: %w", err)
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			return "", errors.New("not inside spindle's module: run from the repository, or set -peers-dir")
		}
		dir = filepath.Join(filepath.Dir(gomod), "bench", "peers")
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("no peers module in %s: %w", dir, err)
	}
	return dir, nil
}

// peerResult is one result line of go test.
type peerResult struct {
	name string // "Group/Name", without "Benchmark" and the -GOMAXPROCS suffix
	res  testing.BenchmarkResult
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBenchLine parses a result line of go test -bench
// ("BenchmarkGroup/Name-2  N  v unit  v unit ..."); ok is false for other
// lines.
func parseBenchLine(line string) (peerResult, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
		return peerResult{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return peerResult{}, false
	}
	r := peerResult{
		name: procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), ""),
		res:  testing.BenchmarkResult{N: n, Extra: map[string]float64{}},
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return peerResult{}, false
		}
		r.res.Extra[f[i+1]] = v
	}
	return r, true
}

// failedBench matches go test's "--- FAIL: BenchmarkGroup/Name" and
// "--- SKIP: ..." lines.
var failedBench = regexp.MustCompile(`--- (FAIL|SKIP): Benchmark(\S+)`)

// runPeers runs the peers' cases that re selects (matching "Peers/Group/Name"
// or "BenchmarkGroup/Name"), cfg.runs measured runs each after one warm-up
// run, echoing go test's output to progress. It returns their summaries in
// the peers' order, the notes of their groups, and an error when go test
// could not run at all or failed (the cases it did not report are FAILED).
func runPeers(cfg config, re *regexp.Regexp, progress io.Writer) ([]caseSummary, map[string]string, error) {
	dir, err := findPeersDir(cfg.peersDir)
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
	results := map[string][]testing.BenchmarkResult{}
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
		if r, ok := parseBenchLine(line); ok {
			results[r.name] = append(results[r.name], r.res)
			if n := len(results[r.name]) - 1; n == 0 {
				fmt.Fprintf(progress, "peers: %s%s: warm-up\n", peersGroup, r.name)
			} else {
				fmt.Fprintf(progress, "peers: %s%s: run %d/%d\n", peersGroup, r.name, n, cfg.runs)
			}
			continue
		}
		if m := failedBench.FindStringSubmatch(line); m != nil {
			st := statusFailed
			if m[1] == "SKIP" {
				st = statusSkipped
			}
			failed[procsSuffix.ReplaceAllString(m[2], "")] = st
		}
		if !strings.HasPrefix(line, "goos:") && !strings.HasPrefix(line, "goarch:") && !strings.HasPrefix(line, "pkg:") &&
			!strings.HasPrefix(line, "cpu:") && line != "PASS" {
			fmt.Fprintf(progress, "peers: %s\n", line)
		}
	}
	waitErr := cmd.Wait()
	if listing == nil {
		if waitErr == nil {
			waitErr = errors.New("it printed no case table")
		}
		return nil, nil, fmt.Errorf("go test in %s: %w", dir, waitErr)
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
		c := Case{Group: peersGroup + lc.Group, Name: lc.Name, Unit: lc.Unit, Baseline: lc.Baseline, Kind: lc.Kind, Metric: lc.Metric}
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
