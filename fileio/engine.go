package fileio

// The engine contract: what carries out the system calls of a loop's
// files.
//
// The shared code (file.go, commit.go, state.go) keeps every File's state
// and rules: what is in flight, which writes a sync covers, when a file
// may be closed, what fails when the executor closes. An engine only
// carries out one operation at a time (an op) and hands it back. There
// are two now:
//
//   - the pool (engine_pool.go): a small bounded pool of worker
//     goroutines per executor doing the blocking system calls through
//     package os, on every system (libuv's and tokio's way);
//   - the simulated disk (engine_sim.go): a loop that package sim steps
//     is served by its host's internal/simdisk.Disk, on the world's clock,
//     whatever the build.
//
// THE IO_URING ENGINE GOES HERE. On Linux a loop that has an io_uring
// (netio's, once the ring is a component of its own that other packages
// submit to) is to be served by an engine that turns each op into one SQE
// (OPENAT, READ, WRITE, FSYNC with IORING_FSYNC_DATASYNC, STATX, CLOSE,
// RENAMEAT, UNLINKAT, FTRUNCATE where the kernel has it) and hands the op
// back from the CQE, on the loop; engineOf picks it when the loop's ring
// accepts file operations, and the pool otherwise (and where the kernel
// refuses an opcode, for that op).
//
// The contract every engine keeps:
//   - start runs on the loop, never blocks it and never completes o
//     before it returns: o's results (n, err, nh, size, info, buf) are
//     written by the engine, after which it hands o back with
//     o.st.lp.ScheduleOffLoop(o) (or, already on the loop in a later
//     task, PostRunnable); o.Run then runs on the loop. If the loop has
//     closed by then, ScheduleOffLoop drops o (o.Drop), which gives back
//     a handle an open made;
//   - an op on a handle holds a reference to it from start until its
//     system call has returned (never longer): the handle is closed
//     exactly once, by the op that drops the last reference, which is the
//     opClose op of a File's Close, or, once the executor has closed, the
//     last op in flight or release;
//   - ops run in any order, on one file too: the shared code orders what
//     must be ordered (a sync after the writes it covers, the close after
//     every op on the file). Within one op, a write that the system call
//     takes in part is resumed until it is whole or fails;
//   - shut runs on the loop once the executor has closed: ops not yet
//     begun are abandoned (their references dropped, never handed back)
//     and the engine keeps no goroutine beyond those finishing a system
//     call, which end as soon as it returns;
//   - an opJob has no handle: the engine calls runJob (job.go) where it
//     would make a system call, and shut gives a job not begun to its
//     Done with executor.ErrClosed;
//   - release drops the open reference of a handle whose File was not
//     closed by the user, once the executor has closed; loop only.

import (
	"io/fs"

	"github.com/spindle-rt/spindle/executor"

	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simdisk"
	"github.com/spindle-rt/spindle/internal/simnet"
)

// engine carries out ops for one loop's files (see above).
type engine interface {
	name() string
	start(o *op)
	shut()
	release(h handle)
}

// handle is an engine's open file: *poolFile or *simFile.
type handle interface{}

// opKind says what an op does.
type opKind uint8

const (
	opOpen     opKind = iota // path, flag, perm -> nh, size
	opRead                   // h, buf (len: bytes wanted), off -> n
	opWrite                  // h, buf, off -> n
	opSync                   // h -> (fsync)
	opDataSync               // h -> (fdatasync)
	opTruncate               // h, off (the size)
	opFstat                  // h -> info
	opStat                   // path -> info
	opRename                 // path, path2
	opRemove                 // path
	opClose                  // h: drops the open reference (the last one)
	opJob                    // job: Run (job.go)
)

// op is one operation handed to an engine, and the task that brings its
// result back to the loop.
type op struct {
	kind  opKind
	st    *state
	h     handle
	path  string
	path2 string
	flag  int
	perm  fs.FileMode
	buf   []byte
	off   int64
	job   Job

	// Results, written by the engine before it hands the op back.
	n    int
	err  error
	nh   handle
	size int64
	info fs.FileInfo

	idx    int             // place in st.flight plus one; 0: not in flight
	done   func(o *op)     // runs on the loop with the result
	failFn func(err error) // fails the op's waiters when the executor closes
	f      *File           // the file the op serves, if any
}

// fail fails the op's waiters (the executor closes). Loop only.
func (o *op) fail(err error) {
	if o.failFn != nil {
		o.failFn(err)
	}
}

// Run brings the op's result to the loop.
func (o *op) Run() {
	o.st.landed(o)
}

// Drop runs, on any goroutine, when the loop closed before the op came
// back: its waiters failed when the executor closed (state.interrupt);
// a handle an open made is given back.
func (o *op) Drop() {
	switch {
	case o.kind == opOpen && o.nh != nil:
		o.st.eng.release(o.nh)
	case o.kind == opJob:
		o.job.Done(executor.ErrClosed)
	}
}

// engineOf returns the engine of lp's files: the simulated disk of the
// host of a loop that package sim steps, the worker pool otherwise.
func engineOf(lp *loop.Loop, workers int) engine {
	if p, ok := lp.Sim().(*simnet.Poller); ok {
		if d, ok := p.Host.Disk.(*simdisk.Disk); ok {
			return newSimEngine(d)
		}
	}
	return newPool(workers)
}
