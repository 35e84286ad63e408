package fileio

// The pool engine: a few worker goroutines per executor do the blocking
// system calls, never the loop.
//
// Invariants:
//   - q, workers, idle and shut are guarded by mu; a worker is started
//     when an op is queued while none is idle and fewer than size run, so
//     at most size goroutines exist and none while no file was touched;
//   - a worker takes ops from q in FIFO order, runs the system call
//     without holding mu, drops the op's reference to its handle, then
//     hands the op to the loop (ScheduleOffLoop, which drops it once the
//     loop has closed); it exits once shut is set and it holds no op, so
//     after the executor closes no worker outlives its system call;
//   - a poolFile's refs count its open reference (until opClose or
//     release) and the ops started on it that have not returned from
//     their system call; the one that brings refs to zero closes the
//     *os.File, so it is closed exactly once and never under a system
//     call of another op.

import (
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
)

// DefaultWorkers is the size of an executor's worker pool unless
// Configure says otherwise: as many system calls on files as run at
// once for one loop (libuv's default is 4 threads too).
const DefaultWorkers = 4

// poolFile is the pool's handle.
type poolFile struct {
	f    *os.File
	refs atomic.Int32
}

// unref drops one reference; the last one closes the file and returns
// the close's error.
func (p *poolFile) unref() error {
	if p.refs.Add(-1) == 0 {
		return p.f.Close()
	}
	return nil
}

type pool struct {
	size    int
	mu      sync.Mutex
	cond    sync.Cond
	q       []*op
	head    int
	workers int
	idle    int
	closed  bool
	wg      sync.WaitGroup // the workers, for tests that wait for their end
}

func newPool(size int) *pool {
	p := &pool{size: size}
	p.cond.L = &p.mu
	return p
}

func (p *pool) name() string { return "pool" }

func (p *pool) start(o *op) {
	if h, ok := o.h.(*poolFile); ok && o.kind != opClose {
		h.refs.Add(1)
	}
	p.mu.Lock()
	p.q = append(p.q, o)
	if p.idle > 0 {
		p.cond.Signal()
	} else if p.workers < p.size {
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
	p.mu.Unlock()
}

// work is a worker's life.
func (p *pool) work() {
	defer p.wg.Done()
	p.mu.Lock()
	for {
		for p.head == len(p.q) && !p.closed {
			p.idle++
			p.cond.Wait()
			p.idle--
		}
		if p.closed {
			p.workers--
			p.mu.Unlock()
			return
		}
		o := p.q[p.head]
		p.q[p.head] = nil
		p.head++
		if p.head == len(p.q) {
			p.q, p.head = p.q[:0], 0
		}
		p.mu.Unlock()
		run(o)
		_ = o.st.lp.ScheduleOffLoop(o, nil, 0)
		p.mu.Lock()
	}
}

func (p *pool) shut() {
	p.mu.Lock()
	p.closed = true
	q := p.q[p.head:]
	p.q, p.head = nil, 0
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, o := range q {
		if o.kind == opJob {
			o.job.Done(executor.ErrClosed) // never begun
			continue
		}
		if h, ok := o.h.(*poolFile); ok {
			_ = h.unref() // the op's reference, or for opClose the open one
		}
	}
}

func (p *pool) release(h handle) { _ = h.(*poolFile).unref() }

// run carries out o's system call and drops its reference to the handle.
// Off the loop.
func run(o *op) {
	switch o.kind {
	case opJob:
		runJob(o)
		return
	case opOpen:
		f, err := os.OpenFile(o.path, o.flag, o.perm)
		if err == nil {
			var fi os.FileInfo
			if fi, err = f.Stat(); err != nil {
				f.Close()
			} else {
				h := &poolFile{f: f}
				h.refs.Store(1)
				o.nh, o.size = h, fi.Size()
			}
		}
		o.err = err
		return
	}
	if o.h == nil {
		switch o.kind {
		case opStat:
			o.info, o.err = os.Stat(o.path)
		case opRename:
			o.err = os.Rename(o.path, o.path2)
		case opRemove:
			o.err = os.Remove(o.path)
		}
		return
	}
	h := o.h.(*poolFile)
	f := h.f
	switch o.kind {
	case opRead:
		o.n, o.err = f.ReadAt(o.buf, o.off)
		if o.err == io.EOF {
			o.err = nil
		}
	case opWrite:
		o.n, o.err = f.WriteAt(o.buf, o.off)
	case opSync:
		o.err = f.Sync()
	case opDataSync:
		o.err = datasync(f)
	case opTruncate:
		o.err = f.Truncate(o.off)
	case opFstat:
		o.info, o.err = f.Stat()
	case opClose:
		// The shared code starts opClose once nothing else is in flight
		// on the file, so this drops the last reference and closes it.
		if err := h.unref(); err != nil {
			o.err = err
		}
		return
	}
	_ = h.unref() // nothing else is in flight once the user closes
}
