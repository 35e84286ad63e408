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
//   - at most poolWorkers goroutines run; none waits once the queue is
//     empty (an idle pool holds no goroutine).

import (
	"sync"

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

type queued struct {
	ex *executor.Executor
	j  fileJob
}

// workerPool is the fileRunner of the file server.
type workerPool struct {
	mu      sync.Mutex
	q       []queued
	head    int
	running int
}

var files fileRunner = &workerPool{}

func (p *workerPool) run(ex *executor.Executor, j fileJob) {
	p.mu.Lock()
	p.q = append(p.q, queued{ex, j})
	start := p.running < poolWorkers
	if start {
		p.running++
	}
	p.mu.Unlock()
	if start {
		go p.work()
	}
}

func (p *workerPool) work() {
	for {
		p.mu.Lock()
		if p.head == len(p.q) {
			clear(p.q)
			p.q, p.head = p.q[:0], 0
			p.running--
			p.mu.Unlock()
			return
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
