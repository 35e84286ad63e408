package web

import (
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
)

// countJob counts its trips: work off the loop, done on it.
type countJob struct {
	ex               *executor.Executor
	active, peak     *atomic.Int32
	worked, finished *atomic.Int32
	abandoned        *atomic.Int32
	onLoop           *atomic.Bool
	fin              chan struct{}
	total            int32
	doneFn           func()
}

func (j *countJob) work() {
	n := j.active.Add(1)
	for {
		p := j.peak.Load()
		if n <= p || j.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if j.ex.OnLoop() {
		j.onLoop.Store(true)
	}
	j.worked.Add(1)
	j.active.Add(-1)
}

func (j *countJob) doneFunc() func() { return j.doneFn }

func (j *countJob) abandon() {
	if j.abandoned.Add(1)+j.finished.Load() == j.total {
		close(j.fin)
	}
}

// TestWorkerPool: every job's work runs off the loop, at most poolWorkers
// at once, and its done on the loop, once; a job whose loop has closed is
// abandoned.
func TestWorkerPool(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	const n = 3000
	var active, peak, worked, finished, abandoned atomic.Int32
	var onLoop atomic.Bool
	fin := make(chan struct{})
	jobs := make([]*countJob, n)
	for i := range jobs {
		j := &countJob{ex: ex, active: &active, peak: &peak, worked: &worked, finished: &finished,
			abandoned: &abandoned, onLoop: &onLoop, fin: fin, total: n}
		j.doneFn = func() {
			if !ex.OnLoop() {
				t.Error("done off the loop")
			}
			if finished.Add(1)+abandoned.Load() == n {
				close(fin)
			}
		}
		jobs[i] = j
	}
	ex.Submit(func() {
		for _, j := range jobs {
			files.run(ex, j)
		}
	})
	<-fin
	if worked.Load() != n || finished.Load() != n || onLoop.Load() || peak.Load() > poolWorkers {
		t.Fatalf("worked %d, done %d of %d; work on the loop: %v; %d at once (at most %d)",
			worked.Load(), finished.Load(), n, onLoop.Load(), peak.Load(), poolWorkers)
	}

	closed := executor.New()
	closed.Close()
	worked.Store(0)
	finished.Store(0)
	fin2 := make(chan struct{})
	j := &countJob{ex: closed, active: &active, peak: &peak, worked: &worked, finished: &finished,
		abandoned: &abandoned, onLoop: &onLoop, fin: fin2, total: 1, doneFn: func() { t.Error("done ran on a closed loop") }}
	abandoned.Store(0)
	files.run(closed, j)
	<-fin2
	if abandoned.Load() != 1 || worked.Load() != 1 {
		t.Fatalf("a job of a closed loop: worked %d, abandoned %d; want 1, 1", worked.Load(), abandoned.Load())
	}
}
