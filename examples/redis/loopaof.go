package main

// The AOF's file on a loop: aofFile over package fileio (Config.AOFIO
// "loop"), the implementation a simulation runs (package sim steps every
// loop on one goroutine, so a writer goroutine of the AOF's own, as
// fileAOF's, cannot run there; fileio's files on a simulated loop are the
// host's simulated disk, on the world's clock).
//
// One loop owns the File: the first shard's. Append, from any shard,
// copies the bytes into the pending buffer (under a mutex: the order of
// the appends, whatever shards make them, is the order of the file) and
// wakes the owner once; Sync registers a promise (one per loop until the
// owner takes it) and wakes the owner after the tasks queued on the
// caller's loop, so that the syncs of one batch of that loop go together.
// The owner takes everything pending at once: one fileio Append of the
// bytes, and, once that write has landed, if syncs were asked for, one
// DataSync for all of them, whatever loops asked (group commit across
// shards; fileio's own group commit joins the DataSyncs asked for in one
// batch of the owner), whose outcome completes their promises, each on
// its own loop.
//
// Errors are sticky: the first failed write (ENOSPC, EIO) or sync (EIO)
// fails every sync waiting and every later one, and the appends after it
// are dropped. After a failed fdatasync the kernel may have dropped the
// pages it did not write, so no later sync could prove them on the disk
// (fileio's ErrSyncFailed); a write that failed may have left part of its
// bytes, which a later write would follow. The server then refuses the
// commands that write (MISCONF, pipeline.go), as redis-server does after
// a failed write or fsync under everysec (under always it exits).
//
// Invariants: pend holds the bytes appended and not yet taken by the
// owner; reqs the syncs asked for since its last take, each loop's at
// most once (slots); posted is set while a take is queued on the owner
// (it then takes everything pending); appended counts the bytes appended
// (dropped ones included), durable the bytes a successful sync covered; a
// promise is completed only after the write of every byte appended before
// it was asked for has landed and a DataSync started after that has
// returned; err, once set, is never cleared.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
)

// AOF file layers (Config.AOFIO).
const (
	// AOFIOThread writes and syncs the AOF on a goroutine of its own, with
	// package os (aoffile.go): the default.
	AOFIOThread = "thread"
	// AOFIOLoop writes and syncs it with package fileio from the first
	// shard's loop (loopaof.go); the one a simulated server uses.
	AOFIOLoop = "loop"
)

// loopAOF is aofFile over a fileio File owned by one loop.
type loopAOF struct {
	owner    *executor.Executor
	f        *fileio.File
	appended atomic.Uint64
	durable  atomic.Uint64
	failed   atomic.Pointer[error]
	failedAt atomic.Int64 // when failed was set, on the owner's clock (Unix ns)

	mu      sync.Mutex
	pend    []byte
	reqs    []*future.Promise[struct{}]
	slots   map[*executor.Executor]*future.Promise[struct{}]
	posted  bool
	closing bool
	closed  chan struct{} // closed once the file is closed (Close)
	cerr    error

	shut bool // the owner has closed the file (its loop only)
}

// openLoopAOF opens (or creates) the file at path for appending, on
// owner's loop. ctx is the caller's: a task's, when it runs on a loop.
func openLoopAOF(ctx context.Context, owner *executor.Executor, path string) (*loopAOF, error) {
	f, err := fileio.OpenFile(owner, path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644).Await(ctx)
	if err != nil {
		return nil, err
	}
	return &loopAOF{owner: owner, f: f, slots: map[*executor.Executor]*future.Promise[struct{}]{}}, nil
}

// Err returns the first failure of a write or a sync, or nil.
func (a *loopAOF) Err() error {
	if p := a.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Unsynced reports whether bytes appended are not yet known to be on
// disk.
func (a *loopAOF) Unsynced() bool { return a.appended.Load() != a.durable.Load() }

// FailedAt returns when the first write or sync failed, on the owner's
// loop's clock, and whether one has.
func (a *loopAOF) FailedAt() (time.Time, bool) {
	if a.failed.Load() == nil {
		return time.Time{}, false
	}
	return time.Unix(0, a.failedAt.Load()), true
}

func (a *loopAOF) fail(err error) {
	if a.failed.CompareAndSwap(nil, &err) {
		a.failedAt.Store(a.owner.Now().UnixNano())
	}
}

func (a *loopAOF) Append(ex *executor.Executor, b []byte) {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return
	}
	// Counted even when dropped: a write made in memory that no sync
	// will cover (Unsynced stays true).
	a.appended.Add(uint64(len(b)))
	if a.Err() != nil {
		a.mu.Unlock()
		return
	}
	a.pend = append(a.pend, b...)
	post := !a.posted
	a.posted = true
	a.mu.Unlock()
	if post {
		a.wake(ex)
	}
}

// wake queues a take on the owner: after the tasks queued on ex's loop
// when called there (the batch's other appends and syncs join it).
func (a *loopAOF) wake(ex *executor.Executor) {
	switch {
	case ex == a.owner && ex.OnLoop():
		ex.Post(a.take)
	case ex != nil && ex.OnLoop():
		ex.Post(func() { a.toOwner() })
	default:
		a.toOwner()
	}
}

func (a *loopAOF) toOwner() {
	if err := a.owner.Submit(a.take); err != nil {
		a.drop(err) // the owner's loop has closed
	}
}

// drop fails what is pending: the owner cannot take it.
func (a *loopAOF) drop(err error) {
	a.mu.Lock()
	reqs := a.reqs
	a.reqs, a.pend, a.posted = nil, nil, false
	clear(a.slots)
	a.mu.Unlock()
	for _, p := range reqs {
		p.Reject(err)
	}
}

func (a *loopAOF) Sync(ex *executor.Executor) *future.Future[struct{}] {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return future.Failed[struct{}](ex, errAOFClosed)
	}
	if err := a.Err(); err != nil {
		a.mu.Unlock()
		return future.Failed[struct{}](ex, err)
	}
	if p := a.slots[ex]; p != nil {
		a.mu.Unlock()
		return p.Future() // asked for already, not yet taken: the same sync
	}
	p := future.NewPromise[struct{}](ex)
	a.slots[ex] = p
	a.reqs = append(a.reqs, p)
	post := !a.posted
	a.posted = true
	a.mu.Unlock()
	if post {
		a.wake(ex)
	}
	return p.Future()
}

// take writes what is pending and syncs it for the syncs asked for. On
// the owner's loop.
func (a *loopAOF) take() {
	a.mu.Lock()
	buf := a.pend
	a.pend = nil
	reqs := a.reqs
	a.reqs = nil
	clear(a.slots)
	a.posted = false
	mark := a.appended.Load()
	closing := a.closing
	a.mu.Unlock()
	if a.shut {
		for _, p := range reqs {
			p.Reject(errAOFClosed)
		}
		return
	}
	a.shut = closing
	sync := len(reqs) > 0 || closing
	done := func(err error) {
		if err == nil {
			err = a.Err()
		}
		if err == nil && sync && mark > a.durable.Load() {
			a.durable.Store(mark) // what was appended before this take is on disk
		}
		for _, p := range reqs {
			p.Complete(struct{}{}, err)
		}
		if closing {
			a.f.Close().OnComplete(func(_ struct{}, err error) {
				a.cerr = err
				close(a.closed)
			})
		}
	}
	if err := a.Err(); err != nil {
		done(err)
		return
	}
	var wrote *future.Future[int64]
	if len(buf) > 0 {
		wrote = a.f.Append(buf)
	} else {
		wrote = future.Resolved(a.owner, int64(0))
	}
	wrote.OnComplete(func(_ int64, err error) {
		if err != nil {
			a.fail(fmt.Errorf("redis: writing the AOF: %w", err))
			done(a.Err())
			return
		}
		if !sync {
			done(nil)
			return
		}
		a.f.DataSync().OnComplete(func(_ struct{}, err error) {
			if err != nil {
				a.fail(fmt.Errorf("redis: syncing the AOF: %w", err))
			}
			done(a.Err())
		})
	})
}

// Close writes what is pending, syncs it and closes the file, waiting
// for it off the owner's loop (it must not be called there).
func (a *loopAOF) Close() error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		<-a.closed
		return a.cerr
	}
	a.closing = true
	a.closed = make(chan struct{})
	a.mu.Unlock()
	if err := a.owner.Submit(a.take); err != nil {
		close(a.closed)
		return nil // the loop has closed: fileio closed the file with it
	}
	<-a.closed
	return errors.Join(a.Err(), a.cerr)
}

// aofStore is where the AOF's files are read and cut at start: package
// os (the thread layer) or fileio on the owner's loop (the loop layer),
// the same files the layer then appends to.
type aofStore interface {
	// open opens a file for reading; a missing file fails with an error
	// that is fs.ErrNotExist.
	open(path string) (io.ReadCloser, error)
	// truncate cuts a file to size.
	truncate(path string, size int64) error
}

// osStore is aofStore over package os.
type osStore struct{}

func (osStore) open(path string) (io.ReadCloser, error) { return os.Open(path) }
func (osStore) truncate(path string, size int64) error  { return os.Truncate(path, size) }

// loopStore is aofStore over fileio on ex's loop; ctx is the caller's
// (a task's, on a loop: its waits suspend the task).
type loopStore struct {
	ctx context.Context
	ex  *executor.Executor
}

func (s loopStore) open(path string) (io.ReadCloser, error) {
	f, err := fileio.Open(s.ex, path).Await(s.ctx)
	if err != nil {
		return nil, err
	}
	return &fileReader{ctx: s.ctx, f: f, r: fileio.NewReader(f, 0)}, nil
}

func (s loopStore) truncate(path string, size int64) error {
	f, err := fileio.OpenFile(s.ex, path, os.O_WRONLY, 0).Await(s.ctx)
	if err != nil {
		return err
	}
	_, err = f.Truncate(size).Await(s.ctx)
	_, cerr := f.Close().Await(s.ctx)
	return errors.Join(err, cerr)
}

// exists reports whether path names a file, through the store's layer.
func (s loopStore) exists(path string) (bool, error) {
	_, err := fileio.Stat(s.ex, path).Await(s.ctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// fileReader is an io.ReadCloser over a fileio File.
type fileReader struct {
	ctx context.Context
	f   *fileio.File
	r   *fileio.Reader
}

func (r *fileReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b, err := r.r.Read(len(p)).Await(r.ctx)
	return copy(p, b), err
}

func (r *fileReader) Close() error {
	_, err := r.f.Close().Await(r.ctx)
	return err
}
