package fileio

// Sequential reading and writing over a File.
//
// Invariants: a Reader's and a Writer's offset is loop-owned and moves
// when a call is accepted (not when it completes), so calls made one
// after another read or write consecutive bytes even while earlier ones
// are in flight.

import (
	"io"

	"github.com/spindle-rt/spindle/future"
)

// Reader reads a File from an offset on, one call after another, as an
// io.Reader would, with futures: NewReader(f, 0).Read(n) returns the next
// n bytes (fewer only at the end of the file) and fails with io.EOF once
// the end has been reached. Its methods may be called from any goroutine;
// calls made one after another read consecutive bytes.
type Reader struct {
	f   *File
	off int64
}

// NewReader returns a Reader of f from offset off.
func NewReader(f *File, off int64) *Reader {
	f.mustMade("NewReader")
	return &Reader{f: f, off: off}
}

// Read returns the next bytes of the file, at most n (a new slice the
// caller owns); it fails with io.EOF when none is left. The bytes a Read
// returns short of n are read again by the next Read, so a file that grows
// is read on.
func (r *Reader) Read(n int) *future.Future[[]byte] {
	f := r.f
	return hop(f.lp, func() *future.Future[[]byte] {
		off := r.off
		if n > 0 && off >= 0 {
			r.off += int64(n)
		}
		got := f.ReadAt(off, n)
		return future.Transform(got, func(b []byte, err error) ([]byte, error) {
			if err != nil {
				return nil, err
			}
			if len(b) < n && r.off == off+int64(n) {
				r.off = off + int64(len(b)) // nothing read after it yet: go on from the end
			}
			if len(b) == 0 && n > 0 {
				return nil, io.EOF
			}
			return b, nil
		})
	})
}

// Offset returns where the next Read starts. Loop only, or while no Read
// is in flight.
func (r *Reader) Offset() int64 { return r.off }

// Writer writes a File from an offset on, one call after another: each
// Write goes where the last one ended, even while earlier ones are in
// flight. Its methods may be called from any goroutine.
type Writer struct {
	f   *File
	off int64
}

// NewWriter returns a Writer of f from offset off.
func NewWriter(f *File, off int64) *Writer {
	f.mustMade("NewWriter")
	return &Writer{f: f, off: off}
}

// Write writes p where the last Write ended (p is copied) and returns how
// many bytes were written; see File.WriteAt for errors and Durable.
func (w *Writer) Write(p []byte, opts ...WriteOption) *future.Future[int] {
	f := w.f
	b := append([]byte(nil), p...)
	d := durable(opts)
	return hop(f.lp, func() *future.Future[int] {
		off := w.off
		if err := f.usable("write"); err == nil && !f.append {
			w.off += int64(len(b))
		}
		if f.append {
			return future.Failed[int](f.Executor(), pathErr("write", f.name, errAppendMode))
		}
		return f.writeAt(b, off, d)
	})
}

// Offset returns where the next Write goes. Loop only, or while no Write
// is in flight.
func (w *Writer) Offset() int64 { return w.off }
