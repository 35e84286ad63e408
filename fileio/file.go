package fileio

// Files and their operations.
//
// Invariants of a File (loop-owned, on its state's loop):
//   - flight counts the ops started on the file that have not landed;
//   - closing is set by Close (or the executor's close) and never
//     cleared: from then on every new operation fails with fs.ErrClosed;
//     closeStarted is set once the handle's open reference has been given
//     up (the close op started, or the executor released it), which
//     happens once, after every op on the file has landed and every
//     append and sync accepted before Close has been carried out;
//   - the write tracking and the sync rounds are in commit.go.

import (
	"errors"
	"io/fs"
	"os"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// File is an open file on one executor's loop. Its methods may be called
// from any goroutine; the futures they return belong to the file's
// executor, and are completed on its loop.
type File struct {
	st     *state
	lp     *loop.Loop
	name   string
	h      handle
	idx    int // in st.files plus one; 0: not listed
	flight int
	append bool // opened with O_APPEND: WriteAt is refused
	dirty  bool

	closing      bool
	closeStarted bool
	closeP       *future.Promise[struct{}]

	commit
}

// WriteOption changes how a write completes.
type WriteOption uint8

// Durable makes a write's future complete only once an fsync (an
// fdatasync where the system has it) that began after the write had
// completed has succeeded: the bytes are then on the disk. Durable writes
// and Syncs asked for in one batch of the loop share one fsync.
const Durable WriteOption = 1

func durable(opts []WriteOption) bool {
	for _, o := range opts {
		if o == Durable {
			return true
		}
	}
	return false
}

var (
	errNegativeOffset = errors.New("negative offset")
	errNegativeCount  = errors.New("negative count")
	errNegativeSize   = errors.New("negative size")
	errAppendMode     = errors.New("fileio: WriteAt on a file opened with O_APPEND (use Append)")
)

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// hop runs fn on lp's loop and forwards its future's outcome: at once when
// the caller holds the loop, through the inbox otherwise. If the loop
// closes first the future fails with executor.ErrClosed.
func hop[T any](lp *loop.Loop, fn func() *future.Future[T]) *future.Future[T] {
	if lp.OnLoop() {
		return fn()
	}
	p := future.NewPromise[T]((*executor.Executor)(lp))
	_ = lp.Schedule(&hopTask{
		run:  func() { fn().OnComplete(func(v T, err error) { p.Complete(v, err) }) },
		drop: func() { p.Reject(executor.ErrClosed) },
	}, nil, 0) // Schedule drops it when refused
	return p.Future()
}

type hopTask struct{ run, drop func() }

func (h *hopTask) Run()  { h.run() }
func (h *hopTask) Drop() { h.drop() }

func loopOf(ex *executor.Executor, fn string) *loop.Loop {
	if ex == nil {
		panic("fileio: " + fn + " with nil executor")
	}
	return (*loop.Loop)(ex)
}

// Open opens the named file for reading, as os.Open.
func Open(ex *executor.Executor, name string) *future.Future[*File] {
	return OpenFile(ex, name, os.O_RDONLY, 0)
}

// Create creates or truncates the named file, as os.Create: mode 0666
// (before umask), open for reading and writing.
func Create(ex *executor.Executor, name string) *future.Future[*File] {
	return OpenFile(ex, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// OpenFile opens the named file with os.OpenFile's flags and permissions.
// The future fails with the *fs.PathError os.OpenFile would return. A file
// opened with O_APPEND takes Append and refuses WriteAt, as os.File does.
func OpenFile(ex *executor.Executor, name string, flag int, perm fs.FileMode) *future.Future[*File] {
	lp := loopOf(ex, "OpenFile")
	return hop(lp, func() *future.Future[*File] {
		st, err := stateOf(lp)
		if err != nil {
			return future.Failed[*File](ex, err)
		}
		p := future.NewPromise[*File](ex)
		app := flag&os.O_APPEND != 0
		o := &op{kind: opOpen, path: name, flag: flag &^ os.O_APPEND, perm: perm}
		o.failFn = func(err error) { p.Reject(err) }
		o.done = func(o *op) {
			if o.err != nil {
				p.Reject(o.err)
				return
			}
			f := &File{st: st, lp: lp, name: name, h: o.nh, append: app}
			f.end = o.size
			st.addFile(f)
			if !p.Resolve(f) { // cancelled meanwhile: nobody has the file
				f.Close()
			}
		}
		st.start(o)
		return p.Future()
	})
}

// Stat describes the named file, as os.Stat.
func Stat(ex *executor.Executor, name string) *future.Future[fs.FileInfo] {
	lp := loopOf(ex, "Stat")
	return pathOp(lp, &op{kind: opStat, path: name}, func(o *op) fs.FileInfo { return o.info })
}

// Rename renames (moves) oldpath to newpath, as os.Rename: the future
// fails with an *os.LinkError. The new name is durable once the
// directory is synced (open it with Open and call Sync).
func Rename(ex *executor.Executor, oldpath, newpath string) *future.Future[struct{}] {
	lp := loopOf(ex, "Rename")
	return pathOp(lp, &op{kind: opRename, path: oldpath, path2: newpath}, func(*op) struct{} { return struct{}{} })
}

// Remove removes the named file or empty directory, as os.Remove.
func Remove(ex *executor.Executor, name string) *future.Future[struct{}] {
	lp := loopOf(ex, "Remove")
	return pathOp(lp, &op{kind: opRemove, path: name}, func(*op) struct{} { return struct{}{} })
}

// pathOp starts an op on a name (no file).
func pathOp[T any](lp *loop.Loop, o *op, val func(*op) T) *future.Future[T] {
	ex := (*executor.Executor)(lp)
	return hop(lp, func() *future.Future[T] {
		st, err := stateOf(lp)
		if err != nil {
			return future.Failed[T](ex, err)
		}
		p := future.NewPromise[T](ex)
		o.failFn = func(err error) { p.Reject(err) }
		o.done = func(o *op) {
			if o.err != nil {
				p.Reject(o.err)
				return
			}
			p.Resolve(val(o))
		}
		st.start(o)
		return p.Future()
	})
}

// Name returns the name the file was opened with. Any goroutine.
func (f *File) Name() string { return f.name }

// Executor returns the executor the file belongs to. Any goroutine.
func (f *File) Executor() *executor.Executor { return (*executor.Executor)(f.lp) }

// usable returns the error of an operation on f that cannot start: the
// file is closed, or the executor has. Loop only.
func (f *File) usable(opName string) error {
	if f.st.closed {
		return executor.ErrClosed
	}
	if f.closing {
		return pathErr(opName, f.name, fs.ErrClosed)
	}
	return nil
}

func (f *File) mustMade(fn string) {
	if f == nil || f.st == nil {
		panic("fileio: " + fn + " on a nil or zero File")
	}
}

// fileOp starts an op on f's handle, completing a future with val's
// result; extra runs first on the loop with the landed op.
func fileOp[T any](f *File, o *op, val func(*op) (T, error)) *future.Future[T] {
	ex := f.Executor()
	if err := f.usable(o.opName()); err != nil {
		return future.Failed[T](ex, err)
	}
	p := future.NewPromise[T](ex)
	o.h, o.f = f.h, f
	o.failFn = func(err error) { p.Reject(err) }
	o.done = func(o *op) { p.Complete(val(o)) }
	f.st.start(o)
	return p.Future()
}

// opName is the name os gives the op in its errors.
func (o *op) opName() string {
	switch o.kind {
	case opRead:
		return "read"
	case opWrite:
		return "write"
	case opSync, opDataSync:
		return "sync"
	case opTruncate:
		return "truncate"
	case opFstat, opStat:
		return "stat"
	case opClose:
		return "close"
	case opRename:
		return "rename"
	case opRemove:
		return "remove"
	case opJob:
		return "job"
	}
	return "open"
}

// ReadAt reads at most n bytes at offset off and returns them in a new
// slice that the caller owns: fewer than n only at the end of the file,
// none at or past it (there is no io.EOF: a Reader reports the end). The
// future fails with the *fs.PathError of the read.
func (f *File) ReadAt(off int64, n int) *future.Future[[]byte] {
	f.mustMade("ReadAt")
	return hop(f.lp, func() *future.Future[[]byte] {
		switch {
		case off < 0:
			return future.Failed[[]byte](f.Executor(), pathErr("read", f.name, errNegativeOffset))
		case n < 0:
			return future.Failed[[]byte](f.Executor(), pathErr("read", f.name, errNegativeCount))
		}
		o := &op{kind: opRead, buf: make([]byte, n), off: off}
		return fileOp(f, o, func(o *op) ([]byte, error) { return o.buf[:o.n], o.err })
	})
}

// WriteAt writes p at offset off and returns how many bytes were written
// (all of them, or the future fails with the *fs.PathError of the write:
// ENOSPC, EFBIG, EIO...). p is copied: it may be reused as soon as WriteAt
// returns. With Durable, the future completes once the bytes are synced
// (see Durable). A file opened with O_APPEND refuses WriteAt.
func (f *File) WriteAt(p []byte, off int64, opts ...WriteOption) *future.Future[int] {
	f.mustMade("WriteAt")
	b := append([]byte(nil), p...)
	d := durable(opts)
	return hop(f.lp, func() *future.Future[int] {
		switch {
		case off < 0:
			return future.Failed[int](f.Executor(), pathErr("write", f.name, errNegativeOffset))
		case f.append:
			return future.Failed[int](f.Executor(), pathErr("write", f.name, errAppendMode))
		}
		return f.writeAt(b, off, d)
	})
}

// Stat describes the open file, as os.File.Stat.
func (f *File) Stat() *future.Future[fs.FileInfo] {
	f.mustMade("Stat")
	return hop(f.lp, func() *future.Future[fs.FileInfo] {
		return fileOp(f, &op{kind: opFstat}, func(o *op) (fs.FileInfo, error) { return o.info, o.err })
	})
}

// Truncate changes the size of the file, as os.File.Truncate. It counts
// as a write: a Sync asked for after it covers it. Appends go on from the
// new size.
func (f *File) Truncate(size int64) *future.Future[struct{}] {
	f.mustMade("Truncate")
	return hop(f.lp, func() *future.Future[struct{}] {
		if size < 0 {
			return future.Failed[struct{}](f.Executor(), pathErr("truncate", f.name, errNegativeSize))
		}
		return f.truncate(size)
	})
}

// Close closes the file once everything asked of it before (reads,
// writes, appends, syncs) has been carried out, and returns the close's
// error. Operations asked for after Close fail with an *fs.PathError
// wrapping fs.ErrClosed; a second Close too. When the executor closes,
// every file still open is closed (once the system calls in flight on it
// have returned) and what is pending fails with executor.ErrClosed.
func (f *File) Close() *future.Future[struct{}] {
	f.mustMade("Close")
	return hop(f.lp, func() *future.Future[struct{}] {
		if err := f.usable("close"); err != nil {
			return future.Failed[struct{}](f.Executor(), err)
		}
		f.closing = true
		f.closeP = future.NewPromise[struct{}](f.Executor())
		f.st.mark(f)
		return f.closeP.Future()
	})
}

// tryClose starts the close op once nothing is owed on f. Loop only.
func (f *File) tryClose() {
	if !f.closing || f.closeStarted || f.flight > 0 || f.owes() {
		return
	}
	f.closeStarted = true
	p := f.closeP
	o := &op{kind: opClose, h: f.h, f: f}
	o.failFn = func(err error) { p.Reject(err) }
	o.done = func(o *op) {
		f.st.dropFile(f)
		p.Complete(struct{}{}, o.err)
	}
	f.st.start(o)
}

// interrupt fails everything f owes: the executor closes. Loop only.
func (f *File) interrupt(err error) {
	f.closing = true
	f.failCommit(err)
	if f.closeP != nil {
		f.closeP.Reject(err)
	}
}
