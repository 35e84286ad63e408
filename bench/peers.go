package main

// -peers: the cases of the nested module bench/peers, which compares
// spindle with other projects. The main module must not depend on the
// peers, so go test runs there in a subprocess, started and read by the
// nested module bench/stat (benchfmt), which hands the cases and their runs
// back in the -json format.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

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
	statDir, err := nestedDir("", "stat")
	if err != nil {
		return nil, nil, err
	}
	args := []string{"run", ".", "-dir", dir, "-select", re.String(), "-warmup", "1", "--", "-run", "^$", "-timeout", "60m"}
	if !cfg.list {
		args = append(args, "-bench", ".", "-count", strconv.Itoa(cfg.runs+1), "-benchtime", cfg.perRun.String())
	}
	fmt.Fprintf(progress, "bench: peers: go test %s (in %s)\n", strings.Join(args[9:], " "), dir)
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = statDir, progress
	out, runErr := cmd.Output()
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("go run in %s: %v", statDir, runErr)
	}
	env, sums, err := readJSON(bytes.NewReader(out))
	if err == nil && runErr != nil {
		err = fmt.Errorf("go test in %s failed (%v)", dir, runErr)
	}
	return sums, env.Notes, err
}
