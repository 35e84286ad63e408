package semaphore_test

// The semaphore under the simulation (package sim): tasks that acquire
// random weights, hold them for a while on fake time and release them,
// TryAcquire, requests too large, and requests given up (their task
// cancelled) while they wait, checked against what package semaphore
// promises:
//
//   - the units held never exceed the size;
//   - requests are granted in the order they came, with no barging: a
//     model of the queue (a request waits while any earlier one waits;
//     a release grants the head while its units are free; a request given
//     up leaves the queue, giving back what it was handed, when its task
//     resumes) predicts every grant, and every TryAcquire's outcome (it
//     succeeds when the units are free and nobody waits);
//   - every request ends: granted, or failed with its ctx's error once
//     given up, or ErrTooLarge at once.
//
// Every observation is recorded in the world's trace.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/simtest"
	"github.com/spindle-rt/spindle/semaphore"
	"github.com/spindle-rt/spindle/sim"
)

func TestSimSemaphore(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runSemSim(t, w) })
}

// One seed, one trace: the same seed run twice gives the same trace.
func TestSimSemaphoreReplay(t *testing.T) {
	simtest.Replays(t, runSemSim)
}

type sreq struct {
	id       int
	n        int64
	waiting  bool // its Acquire was called and has not returned
	gaveUp   bool // its task was cancelled
	handed   bool // the model gave it its units
	ended    int
	task     *future.Future[struct{}]
	released bool
}

type semSim struct {
	t      *testing.T
	w      *sim.World
	ex     *executor.Executor
	sem    *semaphore.Semaphore
	size   int64
	held   int64 // by the requests that returned
	free   int64 // the model's free units
	queue  []*sreq
	reqs   []*sreq
	budget int
}

func runSemSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	h := w.Host("h")
	s := &semSim{t: t, w: w, size: 1 + rng.Int63n(8), budget: 200 + rng.Intn(200)}
	s.free = s.size
	s.ex = h.Executor(executor.WithName("sem"), executor.WithPanicHandler(func(v any) { t.Errorf("panic: %v", v) }))
	s.sem = semaphore.New(s.ex, s.size)
	for range 3 {
		if err := s.ex.Submit(func() { s.ops(4) }); err != nil {
			t.Fatal(err)
		}
	}
	for s.budget > 0 {
		at := w.Now() + time.Duration(rng.Intn(5))*time.Millisecond
		w.RunUntil(func() bool { return w.Now() >= at }, time.Hour)
		if err := s.ex.Submit(func() { s.ops(3) }); err != nil {
			t.Fatal(err)
		}
	}
	w.RunUntil(func() bool { return false }, time.Hour)
	s.final()
}

// handHeads hands the model's free units to the head of its queue while
// they suffice.
func (s *semSim) handHeads() {
	for len(s.queue) > 0 && s.queue[0].n <= s.free {
		q := s.queue[0]
		s.queue = s.queue[1:]
		s.free -= q.n
		q.handed = true
	}
}

// grant records that r's units were taken.
func (s *semSim) grant(r *sreq, how string) {
	s.held += r.n
	s.w.Record('g', uint64(r.id), uint64(s.held), []byte(how))
	if s.held > s.size {
		s.t.Errorf("%s of %d (request %d) holds %d units of %d", how, r.n, r.id, s.held, s.size)
	}
	if !r.handed {
		s.t.Errorf("%s of %d (request %d) granted out of turn: the queue is %v, %d units free", how, r.n, r.id, s.ids(), s.free)
	}
}

func (s *semSim) ids() []int {
	var ids []int
	for _, q := range s.queue {
		ids = append(ids, q.id)
	}
	return ids
}

func (s *semSim) release(r *sreq) {
	if r.released {
		return
	}
	r.released = true
	s.held -= r.n
	s.w.Record('l', uint64(r.id), uint64(s.held), nil)
	s.sem.Release(r.n)
	s.free += r.n
	s.handHeads()
}

// ops runs up to k random operations on the loop.
func (s *semSim) ops(k int) {
	rng := s.w.Rand()
	for range 1 + rng.Intn(k) {
		if s.budget <= 0 {
			return
		}
		s.budget--
		switch op := rng.Intn(10); {
		case op < 6:
			s.acquire(1 + rng.Int63n(s.size+1)) // now and then too large
		case op < 8:
			n := 1 + rng.Int63n(s.size)
			r := &sreq{id: len(s.reqs), n: n}
			s.reqs = append(s.reqs, r)
			want := len(s.queue) == 0 && s.free >= n
			ok := s.sem.TryAcquire(n)
			s.w.Record('t', uint64(r.id), simtest.Bit(ok), nil)
			r.ended = 1
			if ok != want {
				s.t.Errorf("TryAcquire of %d: %v, want %v (%d units free, queue %v)", n, ok, want, s.free, s.ids())
			}
			if ok {
				if want {
					s.free -= n
					r.handed = true
				}
				s.grant(r, "TryAcquire")
				s.ex.AfterFunc(time.Duration(rng.Intn(4))*time.Millisecond, func() { s.release(r) })
			}
		case op < 9:
			// Give up a waiting request.
			var ws []*sreq
			for _, q := range s.reqs {
				if q.waiting && !q.gaveUp {
					ws = append(ws, q)
				}
			}
			for _, q := range s.reqs {
				if q.task != nil && !q.task.Ready() && !q.waiting && q.ended == 0 && !q.gaveUp && rng.Intn(4) == 0 {
					ws = append(ws, q) // not started yet
				}
			}
			if len(ws) > 0 {
				q := ws[rng.Intn(len(ws))]
				if q.task.Cancel() {
					q.gaveUp = true
					s.w.Record('c', uint64(q.id), 0, nil)
				}
			}
		default:
			s.ex.AfterFunc(time.Duration(rng.Intn(3))*time.Millisecond, func() { s.ops(3) })
		}
	}
}

// acquire spawns a task that acquires n units, holds them for a while
// and releases them.
func (s *semSim) acquire(n int64) {
	rng := s.w.Rand()
	r := &sreq{id: len(s.reqs), n: n}
	s.reqs = append(s.reqs, r)
	hold := time.Duration(rng.Intn(5)) * time.Millisecond
	r.task = future.Spawn(s.ex, func(ctx context.Context) (struct{}, error) {
		r.waiting = true
		if n <= s.size {
			if len(s.queue) == 0 && s.free >= n {
				s.free -= n
				r.handed = true
			} else {
				s.queue = append(s.queue, r)
			}
		}
		err := s.sem.Acquire(ctx, n)
		r.waiting = false
		r.ended++
		if err != nil && n <= s.size {
			// It leaves the queue, giving back what it was handed.
			if r.handed {
				s.free += n
			}
			s.queue = slices.DeleteFunc(s.queue, func(q *sreq) bool { return q == r })
			s.handHeads()
		}
		s.w.Record('a', uint64(r.id), uint64(n), []byte(fmt.Sprint(err)))
		switch {
		case n > s.size && !errors.Is(err, semaphore.ErrTooLarge):
			s.t.Errorf("Acquire of %d from a semaphore of %d: %v, want ErrTooLarge", n, s.size, err)
		case n > s.size:
		case err == nil:
			s.grant(r, "Acquire")
			defer s.release(r)
			if hold > 0 {
				// Cancelling the task now leaves the units to the release.
				_, _ = future.Sleep(s.ex, hold).Await(ctx)
			}
		case !r.gaveUp || !errors.Is(err, context.Canceled):
			s.t.Errorf("Acquire of %d (request %d, given up %v): %v", n, r.id, r.gaveUp, err)
		}
		return struct{}{}, nil
	})
}

// final checks that every request ended and every unit came back.
func (s *semSim) final() {
	for _, r := range s.reqs {
		if r.ended != 1 && !(r.ended == 0 && r.gaveUp) {
			s.t.Errorf("request %d of %d ended %d times", r.id, r.n, r.ended)
		}
	}
	if s.held != 0 {
		s.t.Errorf("%d units held at the end", s.held)
	}
	if !s.sem.TryAcquire(s.size) {
		s.t.Errorf("the whole semaphore (%d) cannot be taken at the end", s.size)
	}
	s.w.Record('F', uint64(len(s.reqs)), uint64(s.held), nil)
}
