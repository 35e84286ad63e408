package web

// Where the file server's blocking calls run: never on the loop.
//
// The file server hands every call that may block on a disk (Open, Stat,
// ReadDir, Read, Close of an http.FileSystem's files) to a fileRunner,
// and goes on with the result on the connection's loop. The runner here
// is a small bounded pool of goroutines, as libuv's: a package for files
// on the loop can take its place behind the same interface.
//
// Invariants:
//   - a job's work runs on a goroutine of the pool, its done (if it has
//     one) on the loop it was queued from, after work, exactly once,
//     unless that loop has closed: then abandon runs instead, off the
//     loop;
//   - at most poolWorkers goroutines run; each waits poolIdle for a job
//     once the queue is empty, then leaves (an idle pool holds no
//     goroutine);
//   - waiting counts the goroutines that wait and have not been
//     signalled: each job queued while it is above 0 takes one of them
//     and sends one signal, so no job waits while a goroutine idles.

import (
	"sync"
	"time"

	"github.com/spindle-rt/spindle/executor"
)

// fileJob is one trip off the loop and back.
type fileJob interface {
	work()            // off the loop: the blocking calls
	doneFunc() func() // what runs on the loop after work, or nil: then work may give the job up (a func kept, so that queuing it allocates nothing)
	abandon()         // off the loop, when the loop closed before done could run
}

// fileRunner runs jobs off the loop.
type fileRunner interface {
	run(ex *executor.Executor, j fileJob)
}

// poolWorkers bounds the goroutines of the pool: as libuv's default.
const poolWorkers = 4

// poolIdle is how long a goroutine of the pool waits for a job before it
// leaves.
const poolIdle = 50 * time.Millisecond

type queued struct {
	ex *executor.Executor
	j  fileJob
}

// workerPool is the fileRunner of the file server.
type workerPool struct {
	mu      sync.Mutex
	q       []queued
	head    int
	running int           // goroutines of the pool
	waiting int           // of them, those waiting for a job and not yet signalled
	signal  chan struct{} // a job for a waiting goroutine
}

var files fileRunner = &workerPool{signal: make(chan struct{}, poolWorkers)}

func (p *workerPool) run(ex *executor.Executor, j fileJob) {
	p.mu.Lock()
	p.q = append(p.q, queued{ex, j})
	switch {
	case p.waiting > 0:
		p.waiting--
		p.mu.Unlock()
		p.signal <- struct{}{} // never blocks: at most poolWorkers are sent and not received
	case p.running < poolWorkers:
		p.running++
		p.mu.Unlock()
		go p.work()
	default:
		p.mu.Unlock() // a busy goroutine takes it next
	}
}

func (p *workerPool) work() {
	t := time.NewTimer(poolIdle)
	t.Stop()
	for {
		p.mu.Lock()
		if p.head == len(p.q) {
			clear(p.q)
			p.q, p.head = p.q[:0], 0
			p.waiting++
			p.mu.Unlock()
			t.Reset(poolIdle)
			select {
			case <-p.signal:
				t.Stop()
				continue
			case <-t.C:
			}
			p.mu.Lock()
			if p.waiting > 0 {
				// Idle for poolIdle, and no job is on its way to a
				// waiting goroutine: one of them (this one) leaves.
				p.waiting--
				p.running--
				p.mu.Unlock()
				return
			}
			// Every waiting goroutine has been signalled, this one
			// with them: it takes its signal.
			p.mu.Unlock()
			<-p.signal
			continue
		}
		it := p.q[p.head]
		p.q[p.head] = queued{}
		p.head++
		p.mu.Unlock()
		done := it.j.doneFunc() // before work, which may give the job up
		it.j.work()
		if done != nil && it.ex.Submit(done) != nil {
			it.j.abandon()
		}
	}
}
