package main

// The AOF's file, as the shards see it: appends and syncs that never
// block a loop. This file is the whole of the file I/O; the rest of the
// server knows only aofFile.
//
// fileAOF does the system calls on a goroutine of its own, the writer:
// Append copies the bytes into the pending buffer (under a mutex: the
// order of the appends, whatever shards make them, is the order of the
// file) and wakes the writer after the tasks queued on the loop; Sync
// registers a promise (one per loop until the writer takes it), counts
// the call (one per connection) and wakes the writer after the tasks
// queued on the loop, so that the syncs of one batch of the loop go
// together. The writer takes everything pending at once, writes it in one
// write, and, if a sync was asked for, calls fdatasync once for all of
// them, then completes their promises (each on its own loop): group
// commit.
//
// Gathering. Started at once, the next round would take only the syncs
// asked for during the last fdatasync, while the connections just
// answered send their next requests during the next one: the connections
// split into groups that take turns, each with an fdatasync of its own.
// redis-server, which fsyncs on its one thread, answers every waiting
// client after the fsync and then reads their next requests together. So,
// once a round's syncs are complete, the writer waits until the syncs
// asked for during its fdatasync have been joined by as many more as the
// round answered (the connections it answered are back), or gatherDelay
// has passed, whichever comes first: the groups merge into one. A round
// that synced nothing, or a lone connection that comes back at once, does
// not wait. The loops never wait for the writer: they go on serving.
//
// Why a goroutine of the AOF's own (the default, Config.AOFIO "thread"):
// a fileio File belongs to one executor and groups the syncs of that
// loop's batch, while the AOF is appended by every shard's loop in one
// order; a File per shard would split the file, and one shard's File
// makes every other shard's append and sync a hand-off to that loop. The
// writer groups the syncs of every loop in one fdatasync, and its
// blocking write and fdatasync never run on a loop's goroutine. The
// other layer, loopAOF (loopaof.go, "loop"), is that File owned by the
// first shard's loop, with the same buffer and the same grouping in
// front of it: the one a simulated server runs, since package sim runs
// no goroutine but its own.
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
	"time"

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
	// Err returns the first failure of a write or a sync of the file, or
	// nil: once there is one, every later sync fails and the server
	// refuses the commands that write (MISCONF).
	Err() error
	// Unsynced reports whether bytes appended are not yet known to be on
	// disk: under appendfsync always a reply that may have seen them
	// waits for a sync.
	Unsynced() bool
}

var errAOFClosed = errors.New("redis: the AOF is closed")

// fileAOF is aofFile over an *os.File and a writer goroutine.
type fileAOF struct {
	f     *os.File
	kick  chan struct{} // wakes the writer (capacity 1)
	done  chan struct{} // closed when the writer has returned
	syncs atomic.Int64  // fdatasyncs done

	appended atomic.Uint64 // bytes appended
	durable  atomic.Uint64 // of them, those a successful fdatasync covered
	failed   atomic.Pointer[error]

	mu      sync.Mutex
	pend    []byte
	reqs    []*future.Promise[struct{}]
	asked   int // Sync calls since the writer's last take (every connection's, not one per loop)
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
	a.appended.Add(uint64(len(b)))
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
	a.asked++
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

// gatherDelay bounds how long the writer waits, once a round's syncs are
// complete, for the connections it answered to ask again before it starts
// the next round (see the top of the file). Measured with 50 clients on a
// busy 2-core machine (README, Persistence): 200 µs gave more requests/s
// than starting at once or waiting up to 500 µs; longer waits (up to 1 ms)
// save a few more fdatasyncs per request but cost requests/s.
const gatherDelay = 200 * time.Microsecond

// writer writes and syncs what the loops append, off the loops.
func (a *fileAOF) writer() {
	defer close(a.done)
	var buf []byte
	answered := 0 // the syncs asked for in the round being carried out
	target := 0   // the syncs to wait for before the next round: 0, none
	var doneAt time.Time
	var timer *time.Timer
	for {
		<-a.kick
		if target > 0 {
			// Let the connections the last round answered ask again
			// before the next round starts, for a short while at most.
			for {
				a.mu.Lock()
				n, closing := a.asked, a.closing
				a.mu.Unlock()
				left := gatherDelay - time.Since(doneAt)
				if n >= target || closing || left <= 0 {
					break
				}
				if timer == nil {
					timer = time.NewTimer(left)
				} else {
					timer.Reset(left)
				}
				select {
				case <-a.kick:
					timer.Stop()
				case <-timer.C:
				}
			}
		}
		a.mu.Lock()
		buf, a.pend = a.pend, buf[:0]
		reqs := a.reqs
		a.reqs = nil
		clear(a.slots)
		answered, a.asked = a.asked, 0
		closing := a.closing
		err := a.err
		mark := a.appended.Load()
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
				a.failed.Store(&err)
			}
			a.mu.Unlock()
		} else if len(reqs) > 0 || closing {
			a.durable.Store(mark)
		}
		// The next round waits for the syncs asked for meanwhile and
		// as many more as this round answers.
		target = 0
		if len(reqs) > 0 {
			a.mu.Lock()
			target = a.asked + answered
			a.mu.Unlock()
		}
		for _, p := range reqs {
			p.Complete(struct{}{}, err)
		}
		doneAt = time.Now()
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

func (a *fileAOF) Err() error {
	if p := a.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (a *fileAOF) Unsynced() bool { return a.appended.Load() != a.durable.Load() }

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
