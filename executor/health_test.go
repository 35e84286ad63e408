package executor_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// stallRecorder is a stall handler that keeps what it is given.
type stallRecorder struct {
	mu     sync.Mutex
	stalls []executor.Stall
	n      atomic.Int32
}

func (r *stallRecorder) handle(s executor.Stall) {
	r.mu.Lock()
	r.stalls = append(r.stalls, s)
	r.mu.Unlock()
	r.n.Add(1)
}

func (r *stallRecorder) got() []executor.Stall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]executor.Stall(nil), r.stalls...)
}

// spin holds the calling goroutine busy for d.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// stallLoop holds the loop for d, spinning or blocked on a timer, and
// returns how many stalls had been reported when it let go.
func stallLoop(d time.Duration, block bool, r *stallRecorder) int32 {
	if block {
		<-time.NewTimer(d).C
	} else {
		spin(d)
	}
	return r.n.Load()
}

// A task that holds the loop for 400 ms with a 50 ms threshold is reported
// once, while it still runs, with the stack of the goroutine holding the
// loop: the loop goroutine for a callback, the task's goroutine for a
// spawned task.
func TestStallReportedWhileItLasts(t *testing.T) {
	const threshold, stall = 50 * time.Millisecond, 400 * time.Millisecond
	for _, tc := range []struct {
		name         string
		spawned, blk bool
	}{
		{"callback/spinning", false, false},
		{"callback/blocked", false, true},
		{"task/spinning", true, false},
		{"task/blocked", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r stallRecorder
			ex := executor.New(executor.WithName("stalls"), executor.WithStallHandler(threshold, r.handle))
			ex.Start()
			defer ex.Close()
			var f *future.Future[int32]
			if tc.spawned {
				f = future.Spawn(ex, func(context.Context) (int32, error) { return stallLoop(stall, tc.blk, &r), nil })
			} else {
				f = future.Call(ex, func() (int32, error) { return stallLoop(stall, tc.blk, &r), nil })
			}
			seen, err := spindletest.Await(t, f)
			if err != nil {
				t.Fatal(err)
			}
			ex.Close() // the watchdog has stopped: no report can follow
			if seen != 1 {
				t.Fatalf("%d stalls reported while the task held the loop, want 1", seen)
			}
			got := r.got()
			if len(got) != 1 {
				t.Fatalf("%d stalls reported in all, want 1", len(got))
			}
			s := got[0]
			if s.Executor != "stalls" || s.Duration < threshold || s.Duration >= stall {
				t.Errorf("Stall{Executor %q, Duration %v}, want \"stalls\" and a duration in [%v, %v)", s.Executor, s.Duration, threshold, stall)
			}
			if !bytes.HasPrefix(s.Stack, []byte("goroutine ")) || !bytes.Contains(s.Stack, []byte("executor_test.stallLoop(")) {
				t.Errorf("stack does not show the stalling function:\n%s", s.Stack)
			}
			if n := bytes.Count(s.Stack, []byte("\ngoroutine ")); n != 0 {
				t.Errorf("stack of %d goroutines, want the holder's only:\n%s", n+1, s.Stack)
			}
			if n := ex.Stats().Stalls; n != 1 {
				t.Errorf("Stats().Stalls = %d, want 1", n)
			}
		})
	}
}

// Many short tasks in a row hold the loop for long, but none of them is a
// stall. (The threshold leaves room for a loop that a loaded machine keeps
// off the CPU for tens of milliseconds: that is a stall too.)
func TestShortTasksAreNoStall(t *testing.T) {
	var r stallRecorder
	ex := executor.New(executor.WithStallHandler(200*time.Millisecond, r.handle))
	ex.Start()
	defer ex.Close()
	done := make(chan struct{})
	err := ex.Submit(func() {
		for i := range 300 {
			ex.Post(func() {
				spin(time.Millisecond)
				if i == 299 {
					close(done)
				}
			})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-spindletest.Context(t).Done():
		t.Fatal("the tasks did not run")
	}
	ex.Close()
	if got := r.got(); len(got) != 0 {
		t.Fatalf("%d stalls reported for 1 ms tasks, first after %v:\n%s", len(got), got[0].Duration, got[0].Stack)
	}
}

// A threshold <= 0 turns detection off: no report and, with the delay
// probe off too, no watchdog goroutine.
func TestStallDetectionOff(t *testing.T) {
	for _, threshold := range []time.Duration{0, -time.Second} {
		var r stallRecorder
		ex := executor.New(executor.WithStallHandler(threshold, r.handle), executor.WithDelayProbe(0, 0))
		ex.Start()
		f := future.Call(ex, func() (bool, error) {
			spin(100 * time.Millisecond)
			return watchdogRunning(), nil
		})
		running, err := spindletest.Await(t, f)
		if err != nil {
			t.Fatal(err)
		}
		ex.Close()
		if running {
			t.Errorf("threshold %v: a watchdog goroutine runs", threshold)
		}
		if n := len(r.got()); n != 0 || ex.Stats().Stalls != 0 {
			t.Errorf("threshold %v: %d stalls reported, Stats().Stalls = %d", threshold, n, ex.Stats().Stalls)
		}
	}
}

// watchdogRunning reports whether any executor's watchdog goroutine runs.
func watchdogRunning() bool {
	buf := make([]byte, 1<<20)
	return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("(*watchdog).run("))
}

// With a nil handler stalls are logged with log/slog.
func TestStallLoggedByDefault(t *testing.T) {
	var mu sync.Mutex
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil)))
	defer slog.SetDefault(prev)
	ex := executor.New(executor.WithName("logged"), executor.WithStallHandler(20*time.Millisecond, nil))
	ex.Start()
	defer ex.Close()
	var r stallRecorder // not the handler: it only counts the log's stalls
	_, err := spindletest.Await(t, future.Call(ex, func() (int32, error) {
		for ex.Stats().Stalls == 0 { // until the stall is logged
			spin(time.Millisecond)
		}
		return stallLoop(0, false, &r), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ex.Close()
	mu.Lock()
	out := logged.String()
	mu.Unlock()
	for _, want := range []string{"level=WARN", "held the loop", "executor=logged", "duration=", "TestStallLoggedByDefault"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A stall handler that panics is logged; the watchdog goes on reporting.
func TestStallHandlerPanics(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lockedWriter{new(sync.Mutex), new(bytes.Buffer)}, nil)))
	defer slog.SetDefault(prev)
	var n atomic.Int32
	ex := executor.New(executor.WithStallHandler(20*time.Millisecond, func(executor.Stall) {
		n.Add(1)
		panic("handler")
	}))
	ex.Start()
	defer ex.Close()
	for range 2 {
		before := n.Load()
		_, err := spindletest.Await(t, future.Call(ex, func() (int, error) {
			for n.Load() == before {
				spin(time.Millisecond)
			}
			return 0, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := ex.Stats().Stalls; got != 2 {
		t.Fatalf("Stalls = %d, want 2", got)
	}
}

// Busy follows a 150 ms task and Idle a 150 ms pause.
func TestBusyAndIdle(t *testing.T) {
	const d = 150 * time.Millisecond
	const slack = 50 * time.Millisecond // for the loop's own steps after the task
	ex := executor.New(executor.WithStallHandler(0, nil), executor.WithDelayProbe(0, 0))
	if st := ex.Stats(); st.Busy != 0 || st.Idle != 0 || st.Utilization() != 0 {
		t.Fatalf("before Start: %+v", st)
	}
	start := time.Now()
	ex.Start()
	defer ex.Close()
	if _, err := spindletest.Await(t, future.Call(ex, func() (int, error) { spin(d); return 0, nil })); err != nil {
		t.Fatal(err)
	}
	taskDone := time.Since(start)
	time.Sleep(d) // the pause being measured
	st := ex.Stats()
	elapsed := time.Since(start)
	if st.Busy < d || st.Busy > taskDone+slack {
		t.Errorf("Busy = %v, want [%v, %v]", st.Busy, d, taskDone+slack)
	}
	if st.Idle < d-slack || st.Busy+st.Idle > elapsed {
		t.Errorf("Idle = %v (Busy %v), want at least %v and Busy+Idle at most %v", st.Idle, st.Busy, d-slack, elapsed)
	}
	if u := st.Utilization(); u <= 0 || u >= 1 {
		t.Errorf("Utilization = %v", u)
	}
	ex.Close()
	after := ex.Stats()
	if again := ex.Stats(); again.Busy != after.Busy || again.Idle != after.Idle {
		t.Errorf("Busy and Idle still move after Close: %v/%v, then %v/%v", after.Busy, after.Idle, again.Busy, again.Idle)
	}
}

// The delay probe measures how late scheduled work runs: a stall shows in
// Max.
func TestDelayProbe(t *testing.T) {
	const stall = 100 * time.Millisecond
	ex := executor.New(executor.WithStallHandler(0, nil), executor.WithDelayProbe(time.Millisecond, time.Second))
	ex.Start()
	defer ex.Close()
	if _, err := spindletest.Await(t, future.Call(ex, func() (int, error) { spin(stall); return 0, nil })); err != nil {
		t.Fatal(err)
	}
	ctx := spindletest.Context(t)
	for ex.Stats().Delay.Max < stall/2 { // the late probe is taken in at the watchdog's next tick
		if ctx.Err() != nil {
			t.Fatalf("Delay = %+v, want a sample of at least %v", ex.Stats().Delay, stall/2)
		}
		runtime.Gosched()
	}
	dl := ex.Stats().Delay
	if dl.Samples < 1 || dl.P50 > dl.P99 || dl.P99 > dl.Max || dl.Window < 0 {
		t.Fatalf("Delay = %+v", dl)
	}
	if n := ex.Stats().TasksRun; n != 1 {
		t.Fatalf("TasksRun = %d: the probe counts as a task", n)
	}
}

// The loop goroutine and the task goroutines carry the executor's pprof
// label.
func TestProfileLabels(t *testing.T) {
	ex := executor.New(executor.WithName("labelled"))
	ex.Start()
	defer ex.Close()
	label := `"` + executor.ProfileLabel + `":"labelled"`
	callback := future.Call(ex, func() (string, error) { return goroutineLabels("TestProfileLabels.func1"), nil })
	task := future.Spawn(ex, func(context.Context) (string, error) { return goroutineLabels("TestProfileLabels.func2"), nil })
	for _, f := range []*future.Future[string]{callback, task} {
		got, err := spindletest.Await(t, f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, label) {
			t.Errorf("labels %q, want %s", got, label)
		}
	}
	if got := goroutineLabels("TestProfileLabels"); strings.Contains(got, executor.ProfileLabel) {
		t.Errorf("the test goroutine carries %q", got)
	}
}

// goroutineLabels returns the labels line of the goroutine profile's record
// whose stack shows fn.
func goroutineLabels(fn string) string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	for rec := range strings.SplitSeq(buf.String(), "\n\n") {
		if strings.Contains(rec, "executor_test."+fn+"+") {
			for line := range strings.SplitSeq(rec, "\n") {
				if labels, ok := strings.CutPrefix(line, "# labels: "); ok {
					return labels
				}
			}
			return ""
		}
	}
	return "no record of " + fn
}

// A stall handler may close the executor: as on the loop, Close begins
// closing and returns without waiting for the stalled task; the executor
// closes once the task lets go of the loop.
func TestStallHandlerCloses(t *testing.T) {
	var ex *executor.Executor
	closed := make(chan error, 1)
	ex = executor.New(executor.WithStallHandler(20*time.Millisecond, func(executor.Stall) { closed <- ex.Close() }))
	ex.Start()
	f := future.Call(ex, func() (int, error) {
		for ex.Stats().Stalls == 0 {
			spin(time.Millisecond)
		}
		return 0, nil
	})
	if _, err := spindletest.Await(t, f); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-spindletest.Context(t).Done():
		t.Fatal("Close in the stall handler did not return")
	}
	select {
	case <-ex.Done():
	case <-spindletest.Context(t).Done():
		t.Fatal("the executor did not close")
	}
}

// With many more loops than cores, nearly every check of every watchdog
// comes late, yet every stall is reported: a late watchdog is not a frozen
// process, and a stall the watchdog could not watch is reported when it can
// look (without a stack: any stack then would be of the code after it).
// Forty loops on the machine's cores each stall for 200 ms at a 30 ms
// threshold. (That the stack, when there is one, is never taken after the
// task returned, and that a stall is reported once, TestWatchdogCheck and
// TestStackAfterTheStall check on a clock of their own.)
func TestStallsReportedWhenLoopsOutnumberCores(t *testing.T) {
	const loops, threshold, stall = 40, 30 * time.Millisecond, 200 * time.Millisecond
	recs := make([]stallRecorder, loops)
	exs := make([]*executor.Executor, loops)
	for i := range exs {
		exs[i] = executor.New(executor.WithStallHandler(threshold, recs[i].handle), executor.WithDelayProbe(0, 0))
		exs[i].Start()
	}
	fs := make([]*future.Future[int32], loops)
	for i, ex := range exs {
		fs[i] = future.Call(ex, func() (int32, error) { return stallLoop(stall, false, &recs[i]), nil })
	}
	whileRunning := 0
	for i, f := range fs {
		seen, err := spindletest.Await(t, f)
		if err != nil {
			t.Fatal(err)
		}
		exs[i].Close()
		if seen > 0 {
			whileRunning++
		}
	}
	reported, withStack, ofLoop := 0, 0, 0
	for i := range recs {
		// A report of the stall shows its task (in stallLoop, or
		// completing the Call after it), or no stack when it came after the
		// task returned. The loop goroutine itself, kept off the
		// CPU for a threshold by the overloaded machine (between its
		// wake-up and the stall, or after it), is a stall of its own,
		// reported with the loop's own stack: counted apart.
		ofStall := false
		for _, s := range recs[i].got() {
			if s.Duration < threshold {
				t.Errorf("loop %d: a stall of %v reported, under the threshold", i, s.Duration)
			}
			switch {
			case s.Stack == nil:
				ofStall = true
			case bytes.Contains(s.Stack, []byte("executor_test.stallLoop(")) || bytes.Contains(s.Stack, []byte("future.(*callNode[...]).Run(")):
				ofStall = true // in the stall, or at the end of its task
				withStack++
			default:
				ofLoop++
			}
		}
		if ofStall {
			reported++
		}
	}
	t.Logf("%d of %d stalls reported (%d while the task still ran, %d with its stack); %d stalls of the loop goroutine itself", reported, loops, whileRunning, withStack, ofLoop)
	// Every stall is reported in all but about one run in a hundred under
	// -race on a loaded 2-core machine, where one is missed (before this
	// design: 0 to 9 of the 40); that rare miss is not explained yet.
	if reported < loops-1 {
		t.Errorf("%d of %d stalls reported", reported, loops)
	}
}
