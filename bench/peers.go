package main

// -peers: the cases of the nested module bench/peers, which compares
// spindle with other projects. The main module must not depend on the
// peers, so go test runs there in a subprocess, started and read by the
// nested module bench/stat (benchfmt): the case table (the configuration
// line peersListKey names, printed because peersListEnv is set), then one
// result line per run.

import (
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
	"testing"
)

// The protocol with bench/peers (see bench/peers/case.go).
const (
	peersListEnv   = "SPINDLE_PEERS_CASES"  // "json": print the case table first
	peersSelectEnv = "SPINDLE_PEERS_SELECT" // a regexp over "Peers/Group/Name"
	peersListKey   = "spindle-peers-cases"  // the configuration line of the case table
	peersGroup     = "Peers/"               // prefix of the peers' groups in the table
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

// peersRun is what bench/stat reports of the go test run (see its doc).
type peersRun struct {
	Config  map[string]string `json:"config"`
	Results []struct {
		Name   string             `json:"name"`
		Iters  int                `json:"iters"`
		Values map[string]float64 `json:"values"`
	} `json:"results"`
	Failed map[string]string `json:"failed"`
	Error  string            `json:"error"`
}

// runPeers runs the peers' cases that re selects (matching "Peers/Group/Name"
// or "BenchmarkGroup/Name"), cfg.runs measured runs each after one warm-up
// run, with go test run and read by bench/stat, which echoes go test's
// output to progress. It returns their summaries in the peers' order, the
// notes of their groups, and an error when go test could not run at all
// or failed (the cases it did not report are FAILED).
func runPeers(cfg config, re *regexp.Regexp, progress io.Writer) ([]caseSummary, map[string]string, error) {
	dir, err := nestedDir(cfg.peersDir, "peers")
	if err != nil {
		return nil, nil, err
	}
	statDir, err := nestedDir("", "stat")
	if err != nil {
		return nil, nil, err
	}
	args := []string{"run", ".", "-dir", dir, "--", "-run", "^$", "-timeout", "60m"}
	if !cfg.list {
		args = append(args, "-bench", ".", "-count", strconv.Itoa(cfg.runs+1), "-benchtime", cfg.perRun.String())
	}
	fmt.Fprintf(progress, "bench: peers: go test %s (in %s)\n", strings.Join(args[5:], " "), dir)
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = statDir, progress
	cmd.Env = append(os.Environ(), peersListEnv+"=json", peersSelectEnv+"="+re.String())
	out, err := cmd.Output()
	var run peersRun
	if err == nil {
		err = json.Unmarshal(out, &run)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("go run in %s: %w", statDir, err)
	}
	var listing peerListing
	table, ok := run.Config[peersListKey]
	if !ok {
		return nil, nil, fmt.Errorf("go test in %s printed no case table (%s)", dir, run.Error)
	}
	if err := json.Unmarshal([]byte(table), &listing); err != nil {
		return nil, nil, fmt.Errorf("peers: bad case table: %w", err)
	}
	results := map[string][]testing.BenchmarkResult{}
	for _, r := range run.Results {
		results[r.Name] = append(results[r.Name], testing.BenchmarkResult{N: r.Iters, Extra: r.Values})
	}
	failed := map[string]string{}
	for name, how := range run.Failed {
		failed[name] = map[string]string{"FAIL": statusFailed, "SKIP": statusSkipped}[how]
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
			runs = append(runs, figuresFromResult(r, c.Unit, metricOf(c)))
		}
		status := statusOK
		if st, ok := failed[name]; ok {
			status, runs = st, nil
		}
		sums = append(sums, summarize(c, runs, status))
	}
	if run.Error != "" {
		return sums, notes, fmt.Errorf("go test in %s: %s", dir, run.Error)
	}
	return sums, notes, nil
}
