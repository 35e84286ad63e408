package main

// -plot DIR: the charts are drawn by the nested module bench/plot
// (gonum.org/v1/plot), so the library's go.mod names no plotting library.
// The runner writes its -json report to a temporary file and runs that
// module on it, as -peers runs bench/peers.

import (
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
	err = writeJSON(f, env, sums)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "run", ".", "-in", f.Name(), "-out", out)
	cmd.Dir, cmd.Stdout, cmd.Stderr = mod, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run in %s: %w", mod, err)
	}
	return nil
}
