package main

// -compare OLD.json: both reports are written in the Go benchmark format
// (one line per measured run, as go test -count prints them) and handed to
// go tool benchstat in bench/stat, which pins its version.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// compare prints benchstat's comparison of the -compare report (labelled
// with its file's name) with this run's figures (labelled "new", or with the
// -in file's name).
func compare(w io.Writer, cfg config, env environment, sums []caseSummary) error {
	oldEnv, old, err := readJSONFile(cfg.compare)
	if err != nil {
		return err
	}
	statDir, err := nestedDir("", "stat")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "spindle-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	newLabel := "new"
	if cfg.in != "" {
		newLabel = filepath.Base(cfg.in)
	}
	oldPath, newPath := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
	if err := errors.Join(os.WriteFile(oldPath, []byte(benchfmtText(oldEnv, old)), 0o644),
		os.WriteFile(newPath, []byte(benchfmtText(env, sums)), 0o644)); err != nil {
		return err
	}
	args := []string{"tool", "benchstat", filepath.Base(cfg.compare) + "=" + oldPath, newLabel + "=" + newPath}
	fmt.Fprintf(w, "\nCompared with %s (benchstat):\n", filepath.Base(cfg.compare))
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = statDir, w, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go tool benchstat in %s: %w", statDir, err)
	}
	return nil
}

// benchfmtText writes the ok cases' runs in the Go benchmark format:
// "BenchmarkGroup/Name N v metric/unit v allocs/unit [v tasks/unit]", one
// line per run.
func benchfmtText(env environment, sums []caseSummary) string {
	var b strings.Builder
	if env.GOOS != "" {
		fmt.Fprintf(&b, "goos: %s\ngoarch: %s\n", env.GOOS, env.GOARCH)
	}
	for _, s := range sums {
		if s.Status != statusOK {
			continue
		}
		u := s.Case.Unit
		for _, r := range s.Runs {
			fmt.Fprintf(&b, "Benchmark%s %d %g %s/%s %g allocs/%s", fullName(s.Case), r.N, r.Ns, metricOf(s.Case), u, r.Allocs, u)
			if r.Tasks != nil {
				fmt.Fprintf(&b, " %g tasks/%s", *r.Tasks, u)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
