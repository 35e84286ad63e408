package sim

// Seeded test runs: the flags, the replay line and the failure message.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	seedFlag *int64
	runsFlag *int
)

func init() {
	if testing.Testing() {
		seedFlag = flag.Int64("sim.seed", -1, "run the simulation tests with this seed only")
		runsFlag = flag.Int("sim.runs", 0, "run the simulation tests with this many seeds (from 1, or from -sim.seed)")
	}
}

// Seeds returns the seeds a simulation test runs: the one -sim.seed
// names, or -sim.runs of them, or runs of them (1, 2, ...) when neither
// flag is given.
func Seeds(runs int) []int64 {
	first, n := int64(1), runs
	if seedFlag != nil && *seedFlag >= 0 {
		first, n = *seedFlag, 1
	}
	if runsFlag != nil && *runsFlag > 0 {
		n = *runsFlag
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = first + int64(i)
	}
	return s
}

// Check runs body in a new world for each seed of Seeds(runs), closing
// the world after it. It prints one line per seed, "sim seed=N trace=HEX"
// (the digest of the run), and a failing seed also reports the command
// that replays it.
func Check(t *testing.T, runs int, body func(t *testing.T, w *World)) {
	t.Helper()
	for _, seed := range Seeds(runs) {
		w := New(seed)
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			defer w.Close()
			body(t, w)
		})
		say(fmt.Sprintf("sim seed=%d trace=%s\n", seed, w.TraceHex()))
		if !ok {
			t.Errorf("sim: seed %d failed (trace %s); replay it with: %s", seed, w.TraceHex(), Replay(t, seed))
			return
		}
	}
}

// say prints a seed's line. go test in package list mode (go test
// ./pkg) shows a passing test's output only with -v, yet a run asked for
// by -sim.seed or -sim.runs is run to read its lines: then, without -v,
// the line goes to the go command's own standard output (where the go
// command runs the test binary, on Linux: parentStdout), so that it is seen once in
// either mode. Otherwise, and wherever that is not possible, it goes to
// the test's standard output as usual.
func say(line string) {
	asked := (seedFlag != nil && *seedFlag >= 0) || (runsFlag != nil && *runsFlag > 0)
	if asked && !testing.Verbose() {
		if f := parentStdout(); f != nil {
			_, err := f.WriteString(line)
			f.Close()
			if err == nil {
				return
			}
		}
	}
	fmt.Print(line)
}

// Replay returns the command that reruns test t with seed alone.
func Replay(t testing.TB, seed int64) string {
	name := t.Name()
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	pkg := "."
	if wd, err := os.Getwd(); err == nil {
		if rel, ok := modRel(wd); ok {
			pkg = "./" + rel
		}
	}
	return fmt.Sprintf("go test %s -run '^%s$' -sim.seed=%d -v", pkg, name, seed)
}

// modRel returns dir relative to the root of its module.
func modRel(dir string) (string, bool) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			rel, err := filepath.Rel(d, dir)
			return filepath.ToSlash(rel), err == nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", false
		}
		d = up
	}
}
