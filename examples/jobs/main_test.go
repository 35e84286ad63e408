package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDB counts the calls in flight and lets the test decide when they
// return.
type fakeDB struct {
	inFlight, most atomic.Int64
	entered        chan string
	gate           chan struct{} // closed: calls return
	cancelled      chan string   // calls whose ctx ended
}

func newFakeDB() *fakeDB {
	return &fakeDB{entered: make(chan string, 64), gate: make(chan struct{}), cancelled: make(chan string, 64)}
}

func (d *fakeDB) call(ctx context.Context, job string) (string, error) {
	n := d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	d.entered <- job
	select {
	case <-d.gate:
		return "done: " + job, nil
	case <-ctx.Done():
		d.cancelled <- job
		return "", ctx.Err()
	}
}

// service starts an executor, a scheduler over db and a loopback server.
func service(t *testing.T, db DB, timeout time.Duration) (*executor.Executor, *Scheduler, *httptest.Server) {
	t.Helper()
	ex := executor.New()
	ex.Start()
	sched := NewScheduler(ex, db, 4, timeout)
	srv := httptest.NewServer(sched.Handler())
	t.Cleanup(func() {
		srv.Close()
		ex.Close()
	})
	return ex, sched, srv
}

// post submits job and returns the answer's status and trimmed body.
func post(client *http.Client, url, job string) (int, string, error) {
	code, body, err := spindletest.Do(client, http.MethodPost, url+"/jobs?name="+job, "")
	return code, strings.TrimSpace(body), err
}

// Sixteen clients at once: four database calls run, the other jobs wait
// their turn in the group's queue, and every client gets its result.
func TestAtMostFourAtOnce(t *testing.T) {
	db := newFakeDB()
	ex, _, srv := service(t, db.call, spindletest.Safety)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := fmt.Sprint("job", i)
			code, body, err := post(srv.Client(), srv.URL, job)
			if err == nil && (code != http.StatusOK || body != "done: "+job) {
				err = fmt.Errorf("%s: %d %q", job, code, body)
			}
			errs <- err
		}()
	}
	openGate := sync.OnceFunc(func() { close(db.gate) })
	defer openGate() // a failure below must not leave the clients hanging
	// Four database calls start (a call counts itself in flight before it
	// says it entered), and only their four jobs are tasks suspended on
	// the loop, awaiting their call; the other 12 wait in the group's
	// queue and hold no task.
	for range 4 {
		spindletest.Recv(t, db.entered)
	}
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	for {
		n, err := future.Call(ex, func() (int, error) { return ex.Stats().Suspended, nil }).Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 4 {
			break
		}
	}
	if n := db.inFlight.Load(); n != 4 {
		t.Fatalf("%d database calls in flight, want 4", n)
	}
	openGate()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if m := db.most.Load(); m != 4 {
		t.Errorf("at most %d database calls at once, want 4", m)
	}
	srv.Client().CloseIdleConnections()
}

// A burst of 1,000 jobs costs a handful of goroutines: the jobs beyond the
// limit wait as entries in the group's queue. With a semaphore acquired in
// each job instead of the group's limit, each waiting job was a suspended
// task with a goroutine of its own (1,000 more).
func TestBurstCostsFewGoroutines(t *testing.T) {
	const jobs = 1000
	db := newFakeDB()
	db.entered = make(chan string, jobs)
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	sched := NewScheduler(ex, db.call, 4, spindletest.Safety)
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	base := runtime.NumGoroutine()
	fs := make([]*future.Future[string], jobs)
	for i := range fs {
		fs[i] = sched.Submit(ctx, fmt.Sprint("job", i))
	}
	for range 4 {
		spindletest.Recv(t, db.entered)
	}
	// The submissions reach the loop in order, so once this call has run
	// and (at least) four jobs are suspended, every job is queued or running.
	for {
		n, err := future.Call(ex, func() (int, error) { return ex.Stats().Suspended, nil }).Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n >= 4 {
			break
		}
	}
	grown := runtime.NumGoroutine() - base
	t.Logf("%d jobs, 4 running: %d goroutines more than before", jobs, grown)
	if grown > 30 {
		t.Errorf("%d jobs cost %d goroutines, want a handful (4 calls, their tasks)", jobs, grown)
	}
	close(db.gate)
	for i, f := range fs {
		if v, err := f.Await(ctx); err != nil || v != fmt.Sprint("done: job", i) {
			t.Fatalf("job %d: %q, %v", i, v, err)
		}
	}
	if m := db.most.Load(); m != 4 {
		t.Errorf("at most %d database calls at once, want 4", m)
	}
}

// A job whose database call outlives the deadline answers 504, and the
// call's ctx is cancelled.
func TestJobTimeout(t *testing.T) {
	db := newFakeDB()
	_, _, srv := service(t, db.call, time.Millisecond)
	code, _, err := post(srv.Client(), srv.URL, "slow")
	if err != nil || code != http.StatusGatewayTimeout {
		t.Fatalf("slow job: %d, %v; want 504", code, err)
	}
	if job := spindletest.Recv(t, db.cancelled); job != "slow" {
		t.Fatalf("cancelled %q", job)
	}
	srv.Client().CloseIdleConnections()
}

// Shutdown waits for the jobs in flight; after the executor closes, new
// jobs are refused.
func TestShutdownWaitsForJobs(t *testing.T) {
	db := newFakeDB()
	ex, sched, srv := service(t, db.call, spindletest.Safety)
	result := make(chan int, 1)
	go func() {
		code, _, _ := post(srv.Client(), srv.URL, "last")
		result <- code
	}()
	spindletest.Recv(t, db.entered)
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	shut := make(chan error, 1)
	go func() {
		err := sched.Shutdown(context.Background())
		note("shutdown returned")
		shut <- err
	}()
	note("database released")
	close(db.gate)
	if err := spindletest.Recv(t, shut); err != nil {
		t.Fatal(err)
	}
	if code := spindletest.Recv(t, result); code != http.StatusOK {
		t.Fatalf("job in flight: %d, want 200", code)
	}
	if want := []string{"database released", "shutdown returned"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	ex.Close()
	if code, _, err := post(srv.Client(), srv.URL, "late"); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("job after Close: %d, %v; want 503", code, err)
	}
	if _, err := sched.Run(context.Background(), "late"); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
	srv.Client().CloseIdleConnections()
}
