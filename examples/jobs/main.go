// Command jobs is a job scheduler on one spindle executor: HTTP handlers
// submit jobs, each job calls a slow, blocking database off the loop, at
// most 4 at a time, with a 50 ms deadline, and a task group holds every job
// in flight so that shutdown waits for them.
//
// Two bounds keep it cheap and honest. The group's limit (SetLimit) bounds
// how many jobs run at once: a job beyond it waits as an entry in the
// group's queue, not as a suspended task with a goroutine of its own, so a
// burst of 1,000 jobs costs a handful of goroutines. The semaphore bounds
// the database calls themselves: semaphore.Go holds a slot until the call
// really returns, so a call abandoned at its deadline (future.WithTimeout
// cancels it, but a driver may take a moment to notice) still counts
// against the four.
//
//	go run ./examples/jobs -addr 127.0.0.1:8080
//	curl -X POST '127.0.0.1:8080/jobs?name=report'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/semaphore"
)

// DB is the blocking call a job makes.
type DB func(ctx context.Context, job string) (string, error)

// Scheduler runs jobs on one executor.
type Scheduler struct {
	ex      *executor.Executor
	db      DB
	timeout time.Duration
	slots   *semaphore.Semaphore // at most this many database calls at once
	jobs    *future.Group        // the jobs in flight, at most limit running
}

// NewScheduler returns a scheduler that runs at most limit jobs, and makes
// at most limit calls to db, at once, each call with the given deadline.
func NewScheduler(ex *executor.Executor, db DB, limit int64, timeout time.Duration) *Scheduler {
	s := &Scheduler{ex: ex, db: db, timeout: timeout,
		slots: semaphore.New(ex, limit), jobs: future.NewGroup(context.Background(), ex)}
	s.jobs.SetLimit(int(limit))
	return s
}

// Submit queues a job and returns the future of its result (any
// goroutine). A job whose ctx has ended by its turn does not run.
func (s *Scheduler) Submit(ctx context.Context, job string) *future.Future[string] {
	res := future.NewPromise[string](s.ex)
	s.jobs.Go(func(task context.Context) error {
		if err := ctx.Err(); err != nil {
			res.Reject(err) // the caller has gone
			return nil
		}
		res.Complete(s.run(task, job))
		return nil // a failed job is its caller's business, not the group's
	})
	return res.Future()
}

// Run runs a job and waits for its result (any goroutine).
func (s *Scheduler) Run(ctx context.Context, job string) (string, error) {
	return s.Submit(ctx, job).Await(ctx)
}

// run is the job, a task on the loop: the database call, holding a slot
// until it returns, given up on and cancelled at the deadline.
func (s *Scheduler) run(ctx context.Context, job string) (string, error) {
	call := semaphore.Go(ctx, s.slots, 1, func(ctx context.Context) (string, error) { return s.db(ctx, job) })
	return future.WithTimeout(call, s.timeout).Await(ctx)
}

// Shutdown waits until the jobs in flight have finished.
func (s *Scheduler) Shutdown(ctx context.Context) error { return s.jobs.Wait(ctx) }

// Handler serves POST /jobs?name=NAME.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.Run(r.Context(), r.URL.Query().Get("name"))
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			http.Error(w, "job timed out", http.StatusGatewayTimeout)
		case errors.Is(err, executor.ErrClosed):
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, v)
		}
	})
	return mux
}

// slowDB stands for a blocking database driver.
func slowDB(ctx context.Context, job string) (string, error) {
	t := time.NewTimer(time.Duration(10+rand.IntN(60)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return "done: " + job, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	ex := executor.New(executor.WithName("jobs"))
	ex.Start()
	sched := NewScheduler(ex, slowDB, 4, 50*time.Millisecond)
	srv := &http.Server{Addr: *addr, Handler: sched.Handler(), ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		end, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(end)   // no new jobs,
		_ = sched.Shutdown(end) // the jobs in flight finish,
		_ = ex.Shutdown(end)    // then the loop drains
	}()
	log.Printf("listening on %s", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-stopped
}
