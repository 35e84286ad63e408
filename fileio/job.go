package fileio

// Blocking work of the caller's own on the file workers: Job, Start, Do.
//
// Invariants:
//   - a job is an op (opJob) like any other: counted in flight, carried
//     out by the engine (a pool worker, or the simulated disk at its
//     latency), and landed on the loop; its Run runs at most once, never
//     on the loop;
//   - its Done runs exactly once, after Run has returned or once Run
//     never will: on the loop when the op lands (landed, the op then
//     goes back to the state's free list, as no one else holds it); with
//     executor.ErrClosed when the executor closed first, from the pool's
//     shut for a job not begun, from op.Drop for one whose Run returned
//     after the loop closed, or from landed for one that reached the
//     inbox just before. The executor's close does not fail a job at
//     once (failFn is nil): what Run holds is the job's to give back, and
//     it may only do so once Run has returned.

import (
	"runtime/debug"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Job is blocking work that runs on an executor's file workers, as
// fileio's own system calls do, and comes back to the loop: the work of
// a file system that is not the operating system's (an fs.FS, an
// http.FileSystem), or a system call fileio has no function for. Start
// hands a Job on; Do is the same for a function, with a future.
type Job interface {
	// Run does the blocking work, never on the loop: on one of the
	// executor's file workers (under package sim, on the simulation's
	// goroutine once the simulated disk's latency has passed).
	Run()
	// Done runs once, after Run has returned, or once it is certain that
	// Run never will. It runs on the executor's loop with a nil error, or
	// a *future.PanicError if Run panicked. If the executor closed first,
	// err is executor.ErrClosed and Done runs on whichever goroutine
	// learnt it (the loop runs nothing any more): it gives back what Run
	// may have taken, and touches no state of the loop.
	Done(err error)
}

// Start hands j to ex's file workers: Run runs off the loop, then Done on
// it. Jobs run at most DefaultWorkers (or Configure's Workers) at once
// per executor, with fileio's own operations, in no promised order. A
// Shutdown of the executor waits for the jobs started before it. Start
// returns executor.ErrClosed, and neither Run nor Done runs, if the
// executor has closed. Any goroutine; on the loop it allocates nothing
// once the executor has run a job before.
func Start(ex *executor.Executor, j Job) error {
	if j == nil {
		panic("fileio: Start of a nil Job")
	}
	lp := loopOf(ex, "Start")
	if lp.OnLoop() {
		return startJob(lp, j)
	}
	t := &startTask{lp: lp, j: j}
	if err := lp.ScheduleOffLoop(t, nil, 0); err != nil {
		return err // refused: Drop ran and left Done alone
	}
	if !t.at.CompareAndSwap(taskPending, taskQueued) {
		t.j.Done(executor.ErrClosed) // dropped before we got here
	}
	return nil
}

// startTask starts a job handed to Start off the loop. at tells Drop
// whether Start has returned nil (Done is then Drop's to run) or not yet
// (a refused Schedule drops the task before returning its error, and
// Start, which returns that error, runs no Done).
type startTask struct {
	lp *loop.Loop
	j  Job
	at atomic.Int32
}

const (
	taskPending int32 = iota // Start has not seen Schedule's answer
	taskQueued               // Start returned nil
	taskDropped              // dropped while pending
)

func (t *startTask) Run() {
	if startJob(t.lp, t.j) != nil {
		t.j.Done(executor.ErrClosed)
	}
}

func (t *startTask) Drop() {
	if !t.at.CompareAndSwap(taskPending, taskDropped) {
		t.j.Done(executor.ErrClosed)
	}
}

// startJob starts j on lp's engine. Loop only.
func startJob(lp *loop.Loop, j Job) error {
	st, err := stateOf(lp)
	if err != nil {
		return err
	}
	var o *op
	if n := len(st.free); n > 0 {
		o = st.free[n-1]
		st.free[n-1] = nil
		st.free = st.free[:n-1]
	} else {
		o = &op{kind: opJob, done: jobLanded}
	}
	o.job = j
	st.start(o)
	return nil
}

// jobLanded hands a landed job to its Done and keeps the op for the next
// job. Loop only.
func jobLanded(o *op) {
	j, err := o.job, o.err
	o.job, o.err = nil, nil
	if st := o.st; len(st.free) < maxFreeOps {
		st.free = append(st.free, o)
	}
	j.Done(err)
}

// maxFreeOps bounds the ops a loop keeps for jobs.
const maxFreeOps = 64

// runJob runs o's job, turning a panic into the op's error.
func runJob(o *op) {
	defer func() {
		if v := recover(); v != nil {
			o.err = &future.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	o.job.Run()
}

// Do runs fn on ex's file workers, as a Job, and returns a future of its
// result, completed on ex's loop: fn's value and error, or a
// *future.PanicError if fn panicked. If the executor closes first, the
// future fails with executor.ErrClosed once fn has returned (at once if
// it had not begun). Cancelling the future stops the waiting, not fn. Any
// goroutine.
//
//	fi, err := fileio.Do(ex, func() (fs.FileInfo, error) { return fs.Stat(fsys, name) }).Await(ctx)
func Do[T any](ex *executor.Executor, fn func() (T, error)) *future.Future[T] {
	if fn == nil {
		panic("fileio: Do of a nil function")
	}
	p := future.NewPromise[T](ex)
	j := &doJob[T]{fn: fn, p: p}
	if err := Start(ex, j); err != nil {
		p.Reject(err)
	}
	return p.Future()
}

type doJob[T any] struct {
	fn  func() (T, error)
	p   *future.Promise[T]
	v   T
	err error
}

func (j *doJob[T]) Run() { j.v, j.err = j.fn() }

func (j *doJob[T]) Done(err error) {
	if err != nil {
		j.p.Reject(err)
		return
	}
	j.p.Complete(j.v, j.err)
}
