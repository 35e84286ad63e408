package main

// -plot DIR: the runner writes its -json report to a temporary file and
// runs bench/plot on it.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// writePlots writes one SVG chart per group of sums into dir.
func writePlots(dir string, env environment, sums []caseSummary) error {
	mod, err := nestedDir("", "plot")
	if err != nil {
		return err
	}
	out, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "spindle-bench-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := errors.Join(writeJSON(f, env, sums), f.Close()); err != nil {
		return err
	}
	cmd := exec.Command("go", "run", ".", "-in", f.Name(), "-out", out)
	cmd.Dir, cmd.Stdout, cmd.Stderr = mod, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run in %s: %w", mod, err)
	}
	return nil
}
