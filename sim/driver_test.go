package sim_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/sim"
)

// helperEnv names the body TestDriverHelper runs in a child process.
const helperEnv = "SPINDLE_SIM_DRIVER_HELPER"

// TestDriverHelper is the test that the driver's tests run in a child
// test binary, to see how a failing or hanging seed ends it.
func TestDriverHelper(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("run by the driver's tests in a child process")
	case "livelock":
		sim.Check(t, 3, func(t *testing.T, w *sim.World) {
			w.SetLivelock(10_000)
			spin(w)
			w.RunFor(time.Second)
		})
	case "hang":
		sim.Check(t, 3, func(t *testing.T, w *sim.World) {
			w.Host("h").Executor().Submit(func() { time.Sleep(time.Hour) })
			w.RunFor(time.Second)
		})
	case "even":
		sim.Check(t, 4, func(t *testing.T, w *sim.World) {
			if w.Seed()%2 == 0 {
				t.Fatal("an even seed")
			}
		})
	}
}

// spin makes a loop of w requeue a callback forever.
func spin(w *sim.World) *int {
	ex := w.Host("spin").Executor()
	runs := new(int)
	var f func()
	f = func() {
		*runs++
		ex.Submit(f)
	}
	ex.Submit(f)
	return runs
}

// child runs TestDriverHelper's body named body in a child test binary
// with args, and returns its output and exit code.
func child(t *testing.T, body string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestDriverHelper$"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"="+body)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// A failing, livelocked or hanging seed ends its test binary with status
// 1, with the seed's start line and its replay command in the output.
func TestDriverFailures(t *testing.T) {
	replay := func(seed string) string {
		return "replay it with: go test ./sim -run '^TestDriverHelper$' -sim.seed=" + seed + " -v"
	}
	cases := []struct {
		name, body string
		args       []string
		want, not  []string
	}{
		{"livelock", "livelock", nil,
			[]string{"sim seed=1 start", "sim: livelock: 10000 loop steps at 0s of the world's clock", replay("1")},
			[]string{"sim seed=2 start"}},
		{"hang", "hang", []string{"-sim.stepwait=200ms"},
			[]string{"sim seed=1 start", "sim seed=1: one step has run for more than 200ms (-sim.stepwait): a hang; " + replay("1"), "goroutine ", "time.Sleep"},
			[]string{"sim seed=2 start"}},
		{"stop at the first failure", "even", nil,
			[]string{"sim seed=1 start", "sim seed=2 start", "an even seed", replay("2")},
			[]string{"sim seed=3 start", "seeds failed"}},
		{"keep going", "even", []string{"-sim.keepgoing"},
			[]string{"sim seed=3 start", "sim seed=4 start", replay("2"), replay("4"), "sim: 2 of 4 seeds failed: [2 4]"},
			[]string{replay("1"), replay("3")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := child(t, c.body, c.args...)
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			for _, s := range c.want {
				if !strings.Contains(out, s) {
					t.Errorf("the output lacks %q", s)
				}
			}
			for _, s := range c.not {
				if strings.Contains(out, s) {
					t.Errorf("the output has %q", s)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// One step runs at most one batch of a loop, however much work requeues
// itself, and a world that never lets its clock move fails as a livelock
// (here by a panic: the world is not run by Check).
func TestStepBound(t *testing.T) {
	w := sim.New(1)
	defer w.Close()
	runs := spin(w)
	for i := 0; i < 100; i++ {
		before := *runs
		if !w.Step() {
			t.Fatal("the world is quiet")
		}
		if n := *runs - before; n > 128 {
			t.Fatalf("step %d ran the callback %d times, more than a batch (128)", i, n)
		}
	}
	if *runs < 50 {
		t.Fatalf("100 steps ran the callback %d times", *runs)
	}
	w.SetLivelock(1000)
	defer func() {
		v := recover()
		if s, _ := v.(string); !strings.HasPrefix(s, "sim: livelock: 1000 loop steps at 0s") {
			t.Fatalf("panic %v, want a livelock", v)
		}
	}()
	w.RunFor(time.Second)
	t.Fatal("RunFor returned")
}
