package fileio

// The simulated engine: a loop that package sim steps does its file
// operations on its host's simulated disk (internal/simdisk).
//
// Invariants (everything on the simulation's one goroutine):
//   - an op is carried out whole when its latency, drawn from the
//     world's rand when it starts, has passed on the world's clock: the
//     disk's state changes then, never earlier, and the op is handed to
//     the loop's inbox at that instant, so the world steps the loop next;
//   - a simFile's refs count its open reference and the ops started on
//     it that have not been carried out; the one that brings it to zero
//     closes the disk's handle, exactly once;
//   - an op whose host crashed between its start and its landing (the
//     disk's Gen moved) never happened: it does not touch the disk, and
//     its loop, closed by the crash, drops it.

import (
	"syscall"

	"github.com/spindle-rt/spindle/internal/simdisk"
)

// simFile is the simulated engine's handle.
type simFile struct {
	h    *simdisk.Handle
	refs int
}

func (s *simFile) ref() { s.refs++ }

func (s *simFile) unref() error {
	s.refs--
	if s.refs == 0 {
		return s.h.Close()
	}
	return nil
}

type simEngine struct{ d *simdisk.Disk }

func newSimEngine(d *simdisk.Disk) *simEngine { return &simEngine{d: d} }

func (e *simEngine) name() string { return "sim" }

func (e *simEngine) start(o *op) {
	if o.h != nil && o.kind != opClose {
		o.h.ref()
	}
	sync := o.kind == opSync || o.kind == opDataSync // a job takes a read's latency
	gen := e.d.Gen()
	e.d.After(e.d.Latency(sync), func() {
		if e.d.Gen() != gen {
			e.crashed(o)
		} else {
			e.run(o)
		}
		_ = o.st.lp.ScheduleOffLoop(o, nil, 0)
	})
}

func (e *simEngine) shut() {} // every op started is an event of the world: it lands, or is dropped

func (e *simEngine) release(h handle) { _ = h.unref() }

func (e *simEngine) wait() {}

// crashed ends o, begun before its host crashed, without carrying it out.
func (e *simEngine) crashed(o *op) {
	o.err = syscall.EIO
	if o.h != nil && o.kind != opJob {
		_ = o.h.(*simFile).unref() // the handle is of the dead incarnation: its close fails
	}
}

// run carries out o on the disk.
func (e *simEngine) run(o *op) {
	d := e.d
	switch o.kind {
	case opJob:
		runJob(o)
		return
	case opOpen:
		h, size, err := d.Open(o.path, o.flag, o.perm)
		if err == nil {
			o.nh, o.size = &simFile{h: h, refs: 1}, size
		}
		o.err = err
		return
	case opStat:
		o.info, o.err = d.Stat(o.path)
		return
	case opRename:
		o.err = d.Rename(o.path, o.path2)
		return
	case opRemove:
		o.err = d.Remove(o.path)
		return
	}
	s := o.h.(*simFile)
	h := s.h
	switch o.kind {
	case opRead:
		o.n, o.err = h.ReadAt(o.buf, o.off)
	case opWrite:
		o.n, o.err = h.WriteAt(o.buf, o.off)
	case opSync, opDataSync:
		o.err = h.Sync()
	case opTruncate:
		o.err = h.Truncate(o.off)
	case opFstat:
		o.info, o.err = h.Stat()
	case opClose:
		o.err = s.unref()
		return
	}
	_ = s.unref()
}
