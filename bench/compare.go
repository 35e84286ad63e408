package main

// -compare OLD.json: this run (or -in FILE) against an earlier -json
// report, by benchstat. Both reports are written in the Go benchmark
// format (one line per measured run, as go test -count prints them) and
// handed to the benchstat of the nested module bench/stat (go tool
// benchstat, its version pinned there, so the library's go.mod never
// names golang.org/x/perf): the output is what benchstat prints for the
// same two files.

import (
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
	args := []string{"tool", "benchstat"}
	for i, f := range []struct {
		label string
		env   environment
		sums  []caseSummary
	}{{filepath.Base(cfg.compare), oldEnv, old}, {newLabel, env, sums}} {
		path := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.WriteFile(path, []byte(benchfmtText(f.env, f.sums)), 0o644); err != nil {
			return err
		}
		args = append(args, f.label+"="+path)
	}
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
