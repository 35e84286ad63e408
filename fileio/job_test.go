package fileio_test

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// TestDo: fn runs off the loop, its value or error comes back on the
// loop; a panic comes back as a *future.PanicError; a closed executor
// refuses the work.
func TestDo(t *testing.T) {
	onEngines(t, func(t *testing.T, eng fileio.Engine) {
		ex := startedOn(t, eng)
		for _, tc := range []struct {
			name    string
			fn      func() (int, error)
			want    int
			wantErr func(error) bool
		}{
			{name: "value", fn: func() (int, error) { return 7, nil }, want: 7},
			{name: "error", fn: func() (int, error) { return 0, fs.ErrNotExist },
				wantErr: func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
			{name: "panic", fn: func() (int, error) { panic("boom") },
				wantErr: func(err error) bool {
					var pe *future.PanicError
					return errors.As(err, &pe) && pe.Value == "boom" && len(pe.Stack) > 0
				}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var ranOnLoop, doneOffLoop atomic.Bool
				completed := make(chan struct{})
				f := fileio.Do(ex, func() (int, error) {
					ranOnLoop.Store(ex.OnLoop())
					return tc.fn()
				})
				f.OnComplete(func(int, error) {
					doneOffLoop.Store(!ex.OnLoop())
					close(completed)
				})
				v, err := await(t, f)
				<-completed
				if ranOnLoop.Load() || doneOffLoop.Load() {
					t.Fatalf("fn on the loop: %v; completed off it: %v", ranOnLoop.Load(), doneOffLoop.Load())
				}
				if tc.wantErr != nil {
					if err == nil || !tc.wantErr(err) {
						t.Fatalf("got %v, %v; want the error", v, err)
					}
					return
				}
				if err != nil || v != tc.want {
					t.Fatalf("got %v, %v; want %v", v, err, tc.want)
				}
			})
		}

		closed := executor.New()
		closed.Close()
		if _, err := fileio.Do(closed, func() (int, error) { return 1, nil }).Await(context.Background()); !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("Do on a closed executor: %v, want executor.ErrClosed", err)
		}
		j := &countJob{}
		if err := fileio.Start(closed, j); !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("Start on a closed executor: %v, want executor.ErrClosed", err)
		}
		if j.runs.Load() != 0 || j.dones.Load() != 0 {
			t.Fatalf("Start on a closed executor: %d Runs, %d Dones; want none (Start's error says so)", j.runs.Load(), j.dones.Load())
		}
	})
}

// countJob records its Run and Done calls; Run waits for release, if set.
type countJob struct {
	release  chan struct{}
	running  chan struct{}
	runs     atomic.Int32
	dones    atomic.Int32
	err      atomic.Value
	afterRun atomic.Bool // Done came after Run returned, or Run never ran
	finished chan struct{}
	inRun    atomic.Bool
}

func (j *countJob) Run() {
	j.inRun.Store(true)
	j.runs.Add(1)
	if j.running != nil {
		close(j.running)
	}
	if j.release != nil {
		<-j.release
	}
	j.inRun.Store(false)
}

func (j *countJob) Done(err error) {
	j.afterRun.Store(!j.inRun.Load())
	if err != nil {
		j.err.Store(err)
	}
	j.dones.Add(1)
	if j.finished != nil {
		close(j.finished)
	}
}

// TestStartClose: when the executor closes, a job whose Run is under way
// gets its Done, once, with executor.ErrClosed after Run returns, and a
// job not begun gets it without Run; the executor's close does not wait
// for Run.
func TestStartClose(t *testing.T) {
	ex := executor.New()
	ex.Start()
	fileio.Configure(ex, fileio.Config{Workers: 1})
	busy := &countJob{release: make(chan struct{}), running: make(chan struct{}), finished: make(chan struct{})}
	queued := &countJob{finished: make(chan struct{})}
	onLoop(t, ex, func() {
		if err := fileio.Start(ex, busy); err != nil {
			t.Error(err)
		}
		if err := fileio.Start(ex, queued); err != nil {
			t.Error(err)
		}
	})
	<-busy.running
	ex.Close()
	<-queued.finished
	close(busy.release)
	<-busy.finished
	for name, j := range map[string]*countJob{"busy": busy, "queued": queued} {
		err, _ := j.err.Load().(error)
		if j.dones.Load() != 1 || !errors.Is(err, executor.ErrClosed) || !j.afterRun.Load() {
			t.Errorf("%s: %d Dones, error %v, after Run: %v; want 1, executor.ErrClosed, true", name, j.dones.Load(), err, j.afterRun.Load())
		}
	}
	if busy.runs.Load() != 1 || queued.runs.Load() != 0 {
		t.Errorf("runs: busy %d, queued %d; want 1, 0", busy.runs.Load(), queued.runs.Load())
	}
}

// TestStartManyOffLoop: jobs started from other goroutines all run, each
// Done once on the loop, and at most the pool's workers run at once.
func TestStartManyOffLoop(t *testing.T) {
	onEngines(t, func(t *testing.T, eng fileio.Engine) {
		ex := startedOn(t, eng)
		const n = 500
		var active, peak, dones atomic.Int32
		var offLoop atomic.Bool
		fin := make(chan struct{})
		for range n {
			j := &funcJob{
				run: func() {
					a := active.Add(1)
					for p := peak.Load(); a > p && !peak.CompareAndSwap(p, a); p = peak.Load() {
					}
					active.Add(-1)
				},
				done: func(err error) {
					if err != nil || !ex.OnLoop() {
						offLoop.Store(true)
					}
					if dones.Add(1) == n {
						close(fin)
					}
				},
			}
			go func() {
				if err := fileio.Start(ex, j); err != nil {
					t.Error(err)
				}
			}()
		}
		select {
		case <-fin:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d jobs done", dones.Load(), n)
		}
		if offLoop.Load() || peak.Load() > fileio.DefaultWorkers {
			t.Fatalf("a Done off the loop or failed: %v; %d at once, at most %d", offLoop.Load(), peak.Load(), fileio.DefaultWorkers)
		}
	})
}

type funcJob struct {
	run  func()
	done func(error)
}

func (j *funcJob) Run()           { j.run() }
func (j *funcJob) Done(err error) { j.done(err) }

// TestDoSim: under package sim, Do's work runs on the world's clock,
// after the simulated disk's latency, and the same seed gives the same
// times.
func TestDoSim(t *testing.T) {
	times := func(seed int64) []time.Duration {
		w := sim.New(seed)
		defer w.Close()
		h := w.Host("files")
		fsys := fstest.MapFS{"a.txt": {Data: []byte("hello")}}
		var at []time.Duration
		err := simRun(t, w, h, func(ctx context.Context, ex *executor.Executor) error {
			for range 5 {
				b, err := fileio.Do(ex, func() ([]byte, error) { return fs.ReadFile(fsys, "a.txt") }).Await(ctx)
				if err != nil {
					return err
				}
				if string(b) != "hello" {
					t.Errorf("read %q", b)
				}
				at = append(at, w.Now())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	a, b := times(3), times(3)
	if a[0] <= 0 || a[len(a)-1] <= a[0] {
		t.Fatalf("the jobs took no simulated time: %v", a)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 3 twice: %v then %v", a, b)
		}
	}
}
