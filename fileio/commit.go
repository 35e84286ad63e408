package fileio

// Appends and group commit.
//
// Every write a File accepts (WriteAt, Append, Truncate) gets a sequence
// number when it is accepted. A sync waiter (Sync, DataSync, a Durable
// write once its bytes are written) carries a mark: the last number
// accepted before it. A sync round (one fsync) may serve a waiter only if
// every write numbered up to its mark has completed before the round
// starts, so the fsync covers them; writes accepted later, even those
// that complete first, are never reported covered by it.
//
// Invariants (loop-owned, per File):
//   - wbase is the largest number such that every write numbered up to it
//     has completed (landed, whether it succeeded or failed);
//     wdone[whead+i] says whether write wbase+1+i has, for the writes
//     accepted after it;
//   - at most one sync round is in flight per file (syncing); a round
//     starts at a batch boundary (flush) once every waiter of the oldest
//     batch still waiting (gen: the loop's batch count when it was
//     queued) has its mark at most wbase, and takes every waiter whose
//     mark is: so every sync asked for in one batch shares one fsync,
//     the waiters that come while a round is in flight share the next,
//     and no waiter waits for writes accepted after it;
//   - once an fsync has failed, syncErr keeps its error and every later
//     sync of the file fails with ErrSyncFailed: after a failed writeback
//     the kernel may have dropped the dirty pages, so a later fsync that
//     succeeds would not mean that the writes before it are on the disk;
//   - appends wait in abuf (copied) with their waiters in aw until a
//     batch boundary, and at most one append write is in flight per file
//     (aflight), so appends land in the order they were made, end to end,
//     one write per batch boundary; end is where the next append goes;
//   - a failed append write may have written part of its bytes (and
//     os.File.WriteAt's count does not say so when the error comes in the
//     same system call): atrunc is then set, and the next append write is preceded by a truncate to
//     end, so no torn append stays in the file between whole ones; if
//     that truncate fails, appendErr keeps its error and every later
//     Append fails with it.

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spindle-rt/spindle/future"
)

// ErrSyncFailed is wrapped by the error of every sync of a file after one
// has failed (the first failure's error is wrapped too): what was written
// before the failure may not be on the disk, whatever later syncs say.
var ErrSyncFailed = errors.New("fileio: an earlier sync of the file failed")

type commit struct {
	end   int64
	wseq  uint64
	wbase uint64
	wdone []bool // from whead on: the writes after wbase
	whead int

	abuf      []byte
	aw        []appendWaiter
	aflight   bool
	atrunc    bool
	appendErr error

	syncq   []*syncWaiter
	syncing bool
	syncErr error
}

type appendWaiter struct {
	seq     uint64
	n       int
	durable bool
	p       *future.Promise[int64]
}

type syncWaiter struct {
	mark uint64
	gen  uint64 // the state's batch count when it was queued
	full bool   // fsync, not fdatasync
	done func(err error)
}

// accept numbers a new write.
func (c *commit) accept() uint64 {
	c.wseq++
	c.wdone = append(c.wdone, false)
	return c.wseq
}

// finished records that write seq has completed. The completed prefix
// is skipped by whead and compacted away only once it is the larger half,
// so a batch of n writes landing in order costs O(n), not O(n²).
func (c *commit) finished(seq uint64) {
	c.wdone[c.whead+int(seq-c.wbase-1)] = true
	for c.whead < len(c.wdone) && c.wdone[c.whead] {
		c.whead++
		c.wbase++
	}
	switch {
	case c.whead == len(c.wdone):
		c.wdone, c.whead = c.wdone[:0], 0
	case c.whead > len(c.wdone)/2:
		n := copy(c.wdone, c.wdone[c.whead:])
		c.wdone, c.whead = c.wdone[:n], 0
	}
}

// owes reports whether appends or syncs accepted on f are not done yet.
func (c *commit) owes() bool {
	return len(c.aw) > 0 || c.aflight || len(c.syncq) > 0 || c.syncing
}

// stickySync is the error of a sync after one has failed.
func (f *File) stickySync() error {
	first := f.syncErr
	var pe *fs.PathError
	if errors.As(first, &pe) {
		first = pe.Err
	}
	return pathErr("sync", f.name, fmt.Errorf("%w: %w", ErrSyncFailed, first))
}

// writeAt starts a write of b (f's own copy) at off. Loop only.
func (f *File) writeAt(b []byte, off int64, durable bool) *future.Future[int] {
	ex := f.Executor()
	if err := f.usable("write"); err != nil {
		return future.Failed[int](ex, err)
	}
	if durable && f.syncErr != nil {
		return future.Failed[int](ex, f.stickySync())
	}
	seq := f.accept()
	p := future.NewPromise[int](ex)
	o := &op{kind: opWrite, buf: b, off: off, h: f.h, f: f}
	o.failFn = func(err error) { p.Reject(err) }
	o.done = func(o *op) {
		f.finished(seq)
		if o.err != nil {
			p.Reject(o.err)
			return
		}
		f.end = max(f.end, off+int64(o.n))
		if !durable {
			p.Resolve(o.n)
			return
		}
		n := o.n
		f.waitSync(&syncWaiter{mark: seq, done: func(err error) { p.Complete(n, err) }})
	}
	f.st.start(o)
	return p.Future()
}

// truncate starts a truncate to size, numbered as a write. Loop only.
func (f *File) truncate(size int64) *future.Future[struct{}] {
	ex := f.Executor()
	if err := f.usable("truncate"); err != nil {
		return future.Failed[struct{}](ex, err)
	}
	seq := f.accept()
	f.end = size
	p := future.NewPromise[struct{}](ex)
	o := &op{kind: opTruncate, off: size, h: f.h, f: f}
	o.failFn = func(err error) { p.Reject(err) }
	o.done = func(o *op) {
		f.finished(seq)
		p.Complete(struct{}{}, o.err)
	}
	f.st.start(o)
	return p.Future()
}

// Append writes p at the end of the file (its size when it was opened,
// grown by every write and Append through this File since, or the size
// a Truncate set) and returns the offset it was written at. p is copied:
// it may be reused as soon as Append returns. Appends land in the order
// they were made, end to end: those made in one batch of the loop go out
// in one write at the batch boundary. With Durable the future completes
// once the bytes are synced; Durable appends and Syncs of one batch share
// one fsync. A failed append write (ENOSPC...) fails every Append it
// carried; what it may have written in part is truncated away before the
// next one.
func (f *File) Append(p []byte, opts ...WriteOption) *future.Future[int64] {
	f.mustMade("Append")
	d := durable(opts)
	if f.lp.OnLoop() {
		return f.appendNow(p, d)
	}
	b := append([]byte(nil), p...)
	return hop(f.lp, func() *future.Future[int64] { return f.appendNow(b, d) })
}

// appendNow accepts an append. Loop only.
func (f *File) appendNow(b []byte, durable bool) *future.Future[int64] {
	ex := f.Executor()
	if err := f.usable("write"); err != nil {
		return future.Failed[int64](ex, err)
	}
	if f.appendErr != nil {
		return future.Failed[int64](ex, f.appendErr)
	}
	if durable && f.syncErr != nil {
		return future.Failed[int64](ex, f.stickySync())
	}
	p := future.NewPromise[int64](ex)
	f.abuf = append(f.abuf, b...)
	f.aw = append(f.aw, appendWaiter{seq: f.accept(), n: len(b), durable: durable, p: p})
	f.st.stats.appends.Add(1)
	f.st.mark(f)
	return p.Future()
}

// Sync commits the file's contents to stable storage (fsync), as
// os.File.Sync: its future completes once an fsync that began after every
// write accepted on this File before the Sync had completed has
// succeeded. Syncs (and Durable writes) asked for in one batch of the
// loop share one fsync. Once an fsync of the file has failed, every later
// sync fails too (ErrSyncFailed).
func (f *File) Sync() *future.Future[struct{}] {
	f.mustMade("Sync")
	return hop(f.lp, func() *future.Future[struct{}] { return f.sync(true) })
}

// DataSync is Sync by fdatasync where the system has it: the data and
// the metadata needed to read it back (the size), not the times.
func (f *File) DataSync() *future.Future[struct{}] {
	f.mustMade("DataSync")
	return hop(f.lp, func() *future.Future[struct{}] { return f.sync(false) })
}

// sync asks for a sync. Loop only.
func (f *File) sync(full bool) *future.Future[struct{}] {
	ex := f.Executor()
	if err := f.usable("sync"); err != nil {
		return future.Failed[struct{}](ex, err)
	}
	if f.syncErr != nil {
		return future.Failed[struct{}](ex, f.stickySync())
	}
	p := future.NewPromise[struct{}](ex)
	f.waitSync(&syncWaiter{mark: f.wseq, full: full, done: func(err error) { p.Complete(struct{}{}, err) }})
	return p.Future()
}

// waitSync queues w for a sync round.
func (f *File) waitSync(w *syncWaiter) {
	f.st.stats.syncs.Add(1)
	if f.syncErr != nil {
		w.done(f.stickySync())
		return
	}
	w.gen = f.st.gen
	f.syncq = append(f.syncq, w)
	f.st.mark(f)
}

// flush starts what f owes at a batch boundary: the appends made since
// the last one, a sync round, the close. Loop only.
func (f *File) flush() {
	if f.closeStarted {
		return
	}
	f.flushAppends()
	f.flushSyncs()
	f.tryClose()
}

// flushAppends hands the waiting appends on in one write.
func (f *File) flushAppends() {
	if f.aflight || len(f.aw) == 0 {
		return
	}
	if f.atrunc {
		f.truncateTorn()
		return
	}
	buf, ws := f.abuf, f.aw
	f.abuf, f.aw = nil, nil
	off := f.end
	f.end += int64(len(buf))
	f.aflight = true
	o := &op{kind: opWrite, buf: buf, off: off, h: f.h, f: f}
	o.failFn = func(err error) {
		for _, w := range ws {
			w.p.Reject(err)
		}
	}
	o.done = func(o *op) {
		f.aflight = false
		for _, w := range ws {
			f.finished(w.seq)
		}
		if o.err != nil {
			if f.end == off+int64(len(buf)) {
				f.end = off
			}
			f.atrunc = true // it may have written part: os.File.WriteAt does not always say how much
			for _, w := range ws {
				w.p.Reject(o.err)
			}
			return
		}
		pos := off
		for _, w := range ws {
			at := pos
			pos += int64(w.n)
			if !w.durable {
				w.p.Resolve(at)
				continue
			}
			p := w.p
			f.waitSync(&syncWaiter{mark: w.seq, done: func(err error) { p.Complete(at, err) }})
		}
	}
	f.st.start(o)
}

// truncateTorn cuts what a failed append write left past end, before the
// next append write.
func (f *File) truncateTorn() {
	f.aflight = true
	o := &op{kind: opTruncate, off: f.end, h: f.h, f: f}
	o.done = func(o *op) {
		f.aflight = false
		if o.err == nil {
			f.atrunc = false
			return
		}
		f.appendErr = o.err
		ws := f.aw
		f.abuf, f.aw = nil, nil
		for _, w := range ws {
			f.finished(w.seq)
			w.p.Reject(o.err)
		}
	}
	f.st.start(o)
}

// flushSyncs starts a sync round for the waiters it covers.
func (f *File) flushSyncs() {
	if f.syncing || len(f.syncq) == 0 {
		return
	}
	if f.syncErr != nil {
		q := f.syncq
		f.syncq = nil
		for _, w := range q {
			w.done(f.stickySync())
		}
		return
	}
	oldest := f.syncq[0].gen
	for _, w := range f.syncq {
		oldest = min(oldest, w.gen)
	}
	for _, w := range f.syncq {
		if w.gen == oldest && w.mark > f.wbase {
			return // the oldest batch's writes are not all done: it goes out whole
		}
	}
	var take []*syncWaiter
	full := false
	k := 0
	for _, w := range f.syncq {
		if w.mark <= f.wbase {
			take = append(take, w)
			full = full || w.full
			continue
		}
		f.syncq[k] = w
		k++
	}
	clear(f.syncq[k:])
	f.syncq = f.syncq[:k]
	if len(take) == 0 {
		return
	}
	kind := opDataSync
	if full {
		kind = opSync
	}
	f.syncing = true
	o := &op{kind: kind, h: f.h, f: f}
	o.failFn = func(err error) {
		for _, w := range take {
			w.done(err)
		}
	}
	o.done = func(o *op) {
		f.syncing = false
		if o.err != nil && f.syncErr == nil {
			f.syncErr = o.err
		}
		for _, w := range take {
			w.done(o.err)
		}
	}
	f.st.start(o)
}

// failCommit fails the appends and syncs f has not handed on: the
// executor closes. Loop only.
func (f *File) failCommit(err error) {
	for _, w := range f.aw {
		w.p.Reject(err)
	}
	f.abuf, f.aw = nil, nil
	for _, w := range f.syncq {
		w.done(err)
	}
	f.syncq = nil
}
