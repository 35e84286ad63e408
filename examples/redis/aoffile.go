package main

// The AOF's file, as the shards see it: appends and syncs that never
// block a loop. This file is the whole of the file I/O; the rest of the
// server knows only aofFile.
//
// fileAOF does the system calls on a goroutine of its own, the writer:
// Append copies the bytes into the pending buffer (under a mutex: the
// order of the appends, whatever shards make them, is the order of the
// file) and wakes the writer after the tasks queued on the loop; Sync registers a promise (one per loop until
// the writer takes it) and wakes the writer after the tasks queued on the
// loop, so that the syncs of one batch of the loop go together. The
// writer takes
// everything pending at once, writes it in one write, and, if a sync was
// asked for, calls fdatasync once for all of them, then completes their
// promises (each on its own loop). So the appends of one loop batch, and
// of every loop meanwhile, go in one write, and the syncs asked for while
// the writer was busy share one fdatasync: group commit.
//
// Invariants: pend holds the bytes appended and not yet taken by the
// writer, reqs the syncs asked for since its last take, each loop's at
// most once (slots); a promise is completed only after the write of every
// byte appended before it was asked for, and the fdatasync after that
// write; err, once set, fails every later sync; after Close, Append drops
// its bytes and Sync fails with errAOFClosed.

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// aofFile is the AOF's file, written by every shard.
type aofFile interface {
	// Append writes b (copied) at the end of the file, after everything
	// appended before it on any loop. Called on ex's loop (or, with ex
	// nil, before any loop appends); it never blocks on the disk.
	Append(ex *executor.Executor, b []byte)
	// Sync returns a future, completed on ex's loop, once every byte
	// appended before the call is written and on disk (fdatasync), or
	// failed with the write's or the sync's error.
	Sync(ex *executor.Executor) *future.Future[struct{}]
	// Close writes what is pending, syncs it and closes the file.
	Close() error
}

var errAOFClosed = errors.New("redis: the AOF is closed")

// fileAOF is aofFile over an *os.File and a writer goroutine.
type fileAOF struct {
	f     *os.File
	kick  chan struct{} // wakes the writer (capacity 1)
	done  chan struct{} // closed when the writer has returned
	syncs atomic.Int64  // fdatasyncs done

	mu      sync.Mutex
	pend    []byte
	reqs    []*future.Promise[struct{}]
	slots   map[*executor.Executor]*future.Promise[struct{}]
	posted  map[*executor.Executor]bool // a wake-up is queued on the loop
	err     error
	closing bool
}

// openAOFFile opens (or creates) the file at path for appending, and
// starts its writer.
func openAOFFile(path string) (*fileAOF, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	a := &fileAOF{
		f:      f,
		kick:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		slots:  map[*executor.Executor]*future.Promise[struct{}]{},
		posted: map[*executor.Executor]bool{},
	}
	go a.writer()
	return a, nil
}

func (a *fileAOF) wake() {
	select {
	case a.kick <- struct{}{}:
	default: // already woken: it takes everything pending
	}
}

func (a *fileAOF) Append(ex *executor.Executor, b []byte) {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return
	}
	a.pend = append(a.pend, b...)
	post := ex != nil && !a.posted[ex]
	if post {
		a.posted[ex] = true
	}
	a.mu.Unlock()
	switch {
	case post:
		// The writer is woken once per batch of the loop, after the
		// batch's tasks: their appends go in one write.
		ex.Post(func() {
			a.mu.Lock()
			a.posted[ex] = false
			a.mu.Unlock()
			a.wake()
		})
	case ex == nil:
		a.wake()
	}
}

func (a *fileAOF) Sync(ex *executor.Executor) *future.Future[struct{}] {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return future.Failed[struct{}](ex, errAOFClosed)
	}
	if err := a.err; err != nil {
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
	a.mu.Unlock()
	if ex.OnLoop() {
		// The writer is woken once the tasks queued on the loop now have
		// run: the other connections of this batch ask for the same sync.
		ex.Post(a.wake)
	} else {
		a.wake()
	}
	return p.Future()
}

// writer writes and syncs what the loops append, off the loops.
func (a *fileAOF) writer() {
	defer close(a.done)
	var buf []byte
	for {
		<-a.kick
		a.mu.Lock()
		buf, a.pend = a.pend, buf[:0]
		reqs := a.reqs
		a.reqs = nil
		clear(a.slots)
		closing := a.closing
		err := a.err
		a.mu.Unlock()

		if err == nil && len(buf) > 0 {
			if _, werr := a.f.Write(buf); werr != nil {
				err = fmt.Errorf("redis: writing the AOF: %w", werr)
			}
		}
		if err == nil && (len(reqs) > 0 || closing) {
			if serr := fdatasync(a.f); serr != nil {
				err = fmt.Errorf("redis: syncing the AOF: %w", serr)
			}
			a.syncs.Add(1)
		}
		if cap(buf) > 1<<20 {
			buf = nil // a burst made it large
		}
		if err != nil {
			a.mu.Lock()
			if a.err == nil {
				a.err = err
			}
			a.mu.Unlock()
		}
		for _, p := range reqs {
			p.Complete(struct{}{}, err)
		}
		if closing {
			cerr := a.f.Close()
			a.mu.Lock()
			if a.err == nil && cerr != nil {
				a.err = cerr
			}
			a.mu.Unlock()
			return
		}
	}
}

func (a *fileAOF) Close() error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		<-a.done
		return nil
	}
	a.closing = true
	a.mu.Unlock()
	a.wake()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}
