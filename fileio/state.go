package fileio

// The per-loop state: the engine, the open files, the ops in flight, and
// how the loop's batch boundary, drain and close reach them.
//
// Invariants:
//   - a state belongs to one loop and is loop-owned: made by the first
//     file operation on that loop (stateOf, under the loop's Local table),
//     every field read and written only by the goroutine holding the loop;
//   - flight holds exactly the ops started and not yet landed, each at
//     its idx minus one; files holds exactly the files opened and not yet
//     closed (their close landed), each at its idx minus one. Both are
//     slices, not maps, so the executor's close fails their waiters in an
//     order only the run decides (the simulation replays it);
//   - dirty holds exactly the files whose dirty flag is set: those with
//     appends to hand on, syncs to start, or a close to start. The state
//     is one of the loop's flushers and starts that work at every batch
//     boundary, so everything a batch asked for goes out together: that
//     is the group of group commit;
//   - the state is a Drainer: a Shutdown waits while ops are in flight or
//     files are dirty, so nothing accepted before it is lost;
//   - when the executor closes (interrupt), every waiter fails with
//     executor.ErrClosed at once, the engine is shut, and each open file's
//     handle is released: it is closed once the ops still in the engine
//     have returned from their system calls. closed is then set, and
//     nothing more is started.

import (
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

type stateKey struct{}

type state struct {
	lp     *loop.Loop
	ex     *executor.Executor
	eng    engine
	files  []*File
	flight []*op
	dirty  []*File
	spare  []*File
	free   []*op // ops for jobs (job.go)
	closed bool
	gen    uint64 // batch boundaries seen with files dirty (commit.go)
	watch  loop.CloseWatch
	stats  *counters
}

// stateOf returns lp's state, making it on first use. Loop only.
func stateOf(lp *loop.Loop) (*state, error) {
	if st, ok := lp.Local(stateKey{}).(*state); ok {
		if st.closed {
			return nil, executor.ErrClosed
		}
		return st, nil
	}
	if lp.Closed() {
		return nil, executor.ErrClosed
	}
	cfg := configOf(lp)
	st := &state{lp: lp, ex: (*executor.Executor)(lp), eng: engineOf(lp, cfg.Workers), stats: &counters{}}
	st.stats.engine = st.eng.name()
	if !lp.Attach(loop.Attachment{
		Key: stateKey{}, Value: st,
		Watch: &st.watch, OnClose: (*stateWatch)(st),
		Flusher: st,
	}) {
		st.eng.shut()
		return nil, executor.ErrClosed
	}
	lp.AddDrainer(st)
	register(lp, st.stats)
	return st, nil
}

// start hands o to the engine and counts it in flight.
func (st *state) start(o *op) {
	o.st = st
	st.flight = append(st.flight, o)
	o.idx = len(st.flight)
	if o.f != nil {
		o.f.flight++
	}
	st.stats.count(o)
	st.eng.start(o)
}

// landed runs on the loop when o comes back from the engine.
func (st *state) landed(o *op) {
	i := o.idx - 1
	if i < 0 {
		if o.kind == opJob {
			o.job.Done(executor.ErrClosed) // reached the inbox as the executor closed
		}
		return // failed when the executor closed
	}
	last := st.flight[len(st.flight)-1]
	st.flight[i], last.idx = last, i+1
	st.flight[len(st.flight)-1] = nil
	st.flight = st.flight[:len(st.flight)-1]
	o.idx = 0
	if o.f != nil {
		o.f.flight--
		st.mark(o.f)
	}
	st.stats.landed(o)
	o.done(o)
}

// mark puts f on the dirty list, for the next batch boundary.
func (st *state) mark(f *File) {
	if !f.dirty {
		f.dirty = true
		st.dirty = append(st.dirty, f)
	}
}

// Flush starts what the batch asked of each dirty file: the loop calls it
// at every batch boundary.
func (st *state) Flush() {
	if len(st.dirty) == 0 || st.closed {
		return
	}
	st.gen++
	d := st.dirty
	st.dirty = st.spare[:0]
	for i, f := range d {
		d[i] = nil
		f.dirty = false
		f.flush()
	}
	st.spare = d[:0]
}

// Drained reports whether files still owe work to a draining loop.
func (st *state) Drained() bool {
	return !st.closed && (len(st.flight) > 0 || len(st.dirty) > 0)
}

// addFile lists f as open.
func (st *state) addFile(f *File) {
	st.files = append(st.files, f)
	f.idx = len(st.files)
	st.stats.open.Add(1)
}

// dropFile takes f off the open list.
func (st *state) dropFile(f *File) {
	i := f.idx - 1
	if i < 0 {
		return
	}
	last := st.files[len(st.files)-1]
	st.files[i], last.idx = last, i+1
	st.files[len(st.files)-1] = nil
	st.files = st.files[:len(st.files)-1]
	f.idx = 0
	st.stats.open.Add(-1)
}

// stateWatch is how the state hears that its executor closes.
type stateWatch state

func (w *stateWatch) Interrupt(err error) {
	st := (*state)(w)
	st.closed = true
	flight := st.flight
	st.flight = nil
	for _, o := range flight {
		o.idx = 0
		if o.f != nil {
			o.f.flight--
		}
		o.fail(err)
	}
	files := st.files
	st.files = nil
	for _, f := range files {
		f.idx = 0
		st.stats.open.Add(-1)
		f.interrupt(err)
	}
	st.dirty = nil
	st.eng.shut()
	for _, f := range files {
		if !f.closeStarted {
			f.closeStarted = true
			st.eng.release(f.h)
		}
	}
}
