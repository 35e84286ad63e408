package sim

// Seeded test runs: the flags, the replay line and the failure message.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/loop"
)

var (
	seedFlag     *int64
	runsFlag     *int
	keepGoing    *bool
	stepWaitFlag *time.Duration
)

func init() {
	if testing.Testing() {
		seedFlag = flag.Int64("sim.seed", -1, "run the simulation tests with this seed only")
		runsFlag = flag.Int("sim.runs", 0, "run the simulation tests with this many seeds (from 1, or from -sim.seed)")
		keepGoing = flag.Bool("sim.keepgoing", false, "run every seed of a simulation test even after one fails, and report how many failed")
		stepWaitFlag = flag.Duration("sim.stepwait", DefaultStepWait, "exit the test binary, printing the seed, its replay command and every goroutine's stack, when one step of a simulation runs longer than this (0: never)")
	}
}

// DefaultStepWait is how long one step may run, in wall-clock time,
// before Check's watchdog ends the test binary (-sim.stepwait).
const DefaultStepWait = 60 * time.Second

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

// Check runs body in a new world for each seed of Seeds(runs), each in a
// subtest "seed=N", closing the world after it.
//
// Before a seed runs it prints "sim seed=N start" to the test binary's
// standard output, which go test shows when the binary fails or is
// killed, so a seed that never ends is known. When the seed ends it
// prints "sim seed=N trace=HEX" (the digest of the run; see say for
// where that line goes). A failing seed reports the command that replays
// it, and Check stops there; with -sim.keepgoing it runs every seed and
// ends with "sim: F of N seeds failed: [S1 S2 ...]".
//
// The run of a seed cannot hang silently: a run that keeps the world's
// clock still for too many steps fails the seed as a livelock
// (World.SetLivelock), and a step that runs longer than -sim.stepwait of
// wall-clock time (a task that never returns) makes a watchdog print the
// seed, its replay command and every goroutine's stack to standard error
// and exit the test binary with status 1, as go test's own timeout would
// but at once and with the seed.
func Check(t *testing.T, runs int, body func(t *testing.T, w *World)) {
	t.Helper()
	seeds := Seeds(runs)
	wd := startWatchdog(stepWait())
	defer wd.stop()
	var failed []int64
	for _, seed := range seeds {
		fmt.Printf("sim seed=%d start\n", seed)
		w := New(seed)
		replay := Replay(t, seed)
		wd.watch(w, seed, replay)
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			w.t = t
			defer w.Close()
			body(t, w)
		})
		wd.watch(nil, 0, "")
		say(fmt.Sprintf("sim seed=%d trace=%s\n", seed, w.TraceHex()))
		if !ok {
			t.Errorf("sim: seed %d failed (trace %s); replay it with: %s", seed, w.TraceHex(), replay)
			failed = append(failed, seed)
			if keepGoing == nil || !*keepGoing {
				return
			}
		}
	}
	if len(failed) > 0 {
		t.Errorf("sim: %d of %d seeds failed: %v", len(failed), len(seeds), failed)
	}
}

func stepWait() time.Duration {
	if stepWaitFlag == nil {
		return DefaultStepWait
	}
	return *stepWaitFlag
}

// watchdog ends the test binary when one step of the world it watches
// runs longer than wait of wall-clock time. It samples the world's pulse
// (odd while a step runs) every wait/4: a pulse found odd and unchanged
// for wait is a step that does not return.
type watchdog struct {
	wait time.Duration
	mu   sync.Mutex
	w    *World
	seed int64
	cmd  string
	quit chan struct{}
	done chan struct{}
	exit func(code int) // os.Exit; a test replaces it
	out  *os.File
}

func startWatchdog(wait time.Duration) *watchdog {
	if wait <= 0 {
		return nil
	}
	wd := &watchdog{wait: wait, quit: make(chan struct{}), done: make(chan struct{}), exit: os.Exit, out: os.Stderr}
	go wd.run()
	return wd
}

// watch makes w (of seed, replayed by cmd) the world watched; nil stops
// watching.
func (wd *watchdog) watch(w *World, seed int64, cmd string) {
	if wd == nil {
		return
	}
	wd.mu.Lock()
	wd.w, wd.seed, wd.cmd = w, seed, cmd
	wd.mu.Unlock()
}

func (wd *watchdog) stop() {
	if wd == nil {
		return
	}
	close(wd.quit)
	<-wd.done
}

func (wd *watchdog) run() {
	defer close(wd.done)
	tick := time.NewTicker(max(wd.wait/4, time.Millisecond))
	defer tick.Stop()
	var (
		seen  *World
		pulse uint64
		since time.Time
	)
	for {
		select {
		case <-wd.quit:
			return
		case now := <-tick.C:
			wd.mu.Lock()
			w, seed, cmd := wd.w, wd.seed, wd.cmd
			wd.mu.Unlock()
			if w == nil {
				seen = nil
				continue
			}
			p := w.pulse.Load()
			if w != seen || p != pulse || p%2 == 0 {
				seen, pulse, since = w, p, now
				continue
			}
			if now.Sub(since) < wd.wait {
				continue
			}
			fmt.Fprintf(wd.out, "sim seed=%d: one step has run for more than %v (-sim.stepwait): a hang; replay it with: %s\n\ngoroutines:\n%s\n",
				seed, wd.wait, cmd, loop.AllStacks())
			wd.exit(1)
			return
		}
	}
}

// say prints a seed's trace line. A run asked for by -sim.seed or
// -sim.runs is run to read these lines, and then, without -v, the line
// goes to the go command's own standard output (on Linux: parentStdout);
// otherwise, and wherever that is not possible, it goes to the test
// binary's standard output as usual.
//
// Why it must reach into the go command: given packages (go test
// ./pkg), the go command points the test binary's standard output and
// error at a buffer of its own; it streams them instead only for -bench
// or -fuzz, for -json, or for -v or -list with one package or -p=1 (and
// always when no package is named). Once the binary has exited with
// status 0, it empties that buffer before printing "ok" unless -v, -list
// or -json was given (cmd/go/internal/test/test.go: runTestActor.Act,
// its streamOutput and streamAndCacheOutput, and testShowPass). So
// whatever a passing test binary writes, to either stream or through
// t.Log, is thrown away, and the binary has no other way to the user
// than its parent's descriptor. -v would show the lines, but among every
// subtest's RUN and PASS lines, 3 more per seed.
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
