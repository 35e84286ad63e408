package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/examples/httpserver/counters"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func value(t *testing.T, resp *http.Response) int {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	var body map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body["value"]
}

// Concurrent clients increment shared counters; the loop serialises them, so
// no increment is lost and each key ends at exactly the number of requests.
func TestConcurrentClients(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	srv := httptest.NewServer(NewStore(ex).Handler())
	defer srv.Close()
	client := srv.Client()

	const clients, perClient, keys = 16, 50, 4
	seen := make([]map[int]bool, keys) // values returned per key must be distinct
	var mu sync.Mutex
	for k := range seen {
		seen[k] = map[int]bool{}
	}
	spindletest.Parallel(clients, func(c int) {
		for i := range perClient {
			k := (c + i) % keys
			resp, err := client.Post(fmt.Sprintf("%s/incr?key=k%d", srv.URL, k), "", nil)
			if err != nil {
				t.Error(err)
				return
			}
			n := value(t, resp)
			mu.Lock()
			if seen[k][n] {
				t.Errorf("key k%d: value %d returned twice", k, n)
			}
			seen[k][n] = true
			mu.Unlock()
		}
	})
	for k := range keys {
		resp, err := client.Get(fmt.Sprintf("%s/get?key=k%d", srv.URL, k))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := value(t, resp), clients*perClient/keys; got != want {
			t.Fatalf("key k%d = %d, want %d", k, got, want)
		}
	}
	client.CloseIdleConnections()
}

// After the executor closes, handlers answer 503 instead of hanging.
func TestClosedExecutor(t *testing.T) {
	ex := executor.New()
	ex.Start()
	store := NewStore(ex)
	ex.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/incr?key=a", nil)
	store.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
}

// slowFor is how long the slow handler of TestShutdownWaitsForInFlight keeps
// working on the loop once shutdown has begun.
const slowFor = 200 * time.Millisecond

// A request in flight when shutdown begins gets its 200: run lets the
// server's handlers finish before it shuts the executor down, and then
// everything stops (run returns nil, the executor refuses work, goleak finds
// no goroutine). The slow handler waits on the loop until srv.Shutdown has
// begun, then for slowFor on a loop timer, then updates the store: an
// executor closed as soon as Serve returns fails it with 503.
func TestShutdownWaitsForInFlight(t *testing.T) {
	ex := executor.New()
	ex.Start()
	store := NewStore(ex)
	began := future.NewPromise[struct{}](ex) // resolved when srv.Shutdown begins
	entered := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/", store.Handler())
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		ctx := r.Context()
		_, err := began.Future().Await(ctx)
		if err == nil {
			_, err = future.Sleep(ex, slowFor).Await(ctx)
		}
		n := 0
		if err == nil {
			n, err = store.Incr(ctx, "slow")
		}
		counters.Reply(w, n, err)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(func() { began.Resolve(struct{}{}) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- run(ctx, srv, ln, ex) }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	type result struct {
		resp *http.Response
		err  error
	}
	answered := make(chan result, 1)
	go func() {
		resp, err := client.Post("http://"+ln.Addr().String()+"/slow", "", nil)
		answered <- result{resp, err}
	}()
	receive(t, "the slow handler to start", entered)
	start := time.Now()
	cancel() // SIGINT
	res := receive(t, "the slow request's answer", answered)
	if res.err != nil {
		t.Fatalf("slow request: %v", res.err)
	}
	if n := value(t, res.resp); n != 1 {
		t.Errorf("slow request: value %d, want 1", n)
	}
	if d := time.Since(start); d < slowFor {
		t.Errorf("answered %v after shutdown began, before the handler's %v of work", d, slowFor)
	}
	if err := receive(t, "run to return", ran); err != nil {
		t.Errorf("run: %v", err)
	}
	if err := ex.Submit(func() {}); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Submit after run returned: %v, want executor.ErrClosed", err)
	}
}

// receive returns the next value from ch, failing the test if none comes
// within the safety bound.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(spindletest.Safety):
		t.Fatalf("waited %v for %s", spindletest.Safety, what)
		panic("unreachable")
	}
}

// get fetches path from h and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(spindletest.Context(t), http.MethodGet, path, nil))
	return rec.Code, rec.Body.Bytes()
}

// /debug/spindle serves the executor's Stats; /debug/stall is off by
// default.
func TestDebugStats(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	store := NewStore(ex)
	h := store.Handler()
	if _, err := store.Incr(spindletest.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, h, "/debug/spindle")
	var st debugStats
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
		t.Fatalf("status %d, %v: %s", code, err, body)
	}
	if st.TasksRun < 1 || st.Busy <= 0 || st.Busy+st.Idle <= 0 || st.Utilization <= 0 || st.Utilization > 1 {
		t.Fatalf("stats after one request: %s", body)
	}
	if code, _ := get(t, h, "/debug/stall?ms=1"); code != http.StatusNotFound {
		t.Fatalf("/debug/stall without DebugStall: status %d, want 404", code)
	}
}

// /metrics serves the loop's figures in Prometheus' text format.
func TestMetrics(t *testing.T) {
	ex := executor.New(executor.WithName("httpserver"))
	ex.Start()
	defer ex.Close()
	store := NewStore(ex)
	h := store.Handler()
	for range 3 {
		if _, err := store.Incr(spindletest.Context(t), "a"); err != nil {
			t.Fatal(err)
		}
	}
	// Off the loop, /metrics reads the figures the loop publishes between
	// batches, and the last Incr's caller may run before the batch that
	// ran it has ended. One more round trip runs in a later batch, so once
	// it is back the three Incrs are published.
	if _, err := future.Do(spindletest.Context(t), ex, func() (struct{}, error) { return struct{}{}, nil }); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	text := rec.Body.String()
	for _, want := range []string{
		"# TYPE spindle_loop_busy_seconds_total counter\n",
		"# TYPE spindle_loop_queued gauge\n",
		`spindle_loop_stalls_total{executor="httpserver"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
	var tasks float64
	if _, err := fmt.Sscanf(text[strings.Index(text, `spindle_loop_tasks_total{executor="httpserver"} `):], `spindle_loop_tasks_total{executor="httpserver"} %g`, &tasks); err != nil || tasks < 3 {
		t.Errorf("tasks run after three requests: %v, %v", tasks, err)
	}
}

// With DebugStall, /debug/stall?ms=N blocks the loop for N ms; the stall
// is reported while it lasts, with the blocking call on the stack, and
// counted in /debug/spindle.
func TestDebugStall(t *testing.T) {
	stalls := make(chan executor.Stall, 4)
	ex := executor.New(executor.WithName("httpserver"), executor.WithStallHandler(20*time.Millisecond, func(s executor.Stall) {
		logStall(s)
		stalls <- s
	}))
	ex.Start()
	defer ex.Close()
	store := NewStore(ex)
	store.DebugStall = true
	h := store.Handler()
	for _, bad := range []string{"", "?ms=0", "?ms=x", "?ms=10001"} {
		if code, _ := get(t, h, "/debug/stall"+bad); code != http.StatusBadRequest {
			t.Fatalf("/debug/stall%s: status %d, want 400", bad, code)
		}
	}
	if code, body := get(t, h, "/debug/stall?ms=200"); code != http.StatusOK {
		t.Fatalf("/debug/stall?ms=200: status %d: %s", code, body)
	}
	ex.Close() // stops the watchdog: every report has been made
	if n := len(stalls); n != 1 {
		t.Fatalf("%d stalls reported, want 1", n)
	}
	s := <-stalls
	if s.Executor != "httpserver" || s.Duration < 20*time.Millisecond || !bytes.Contains(s.Stack, []byte(".blockingCall(")) {
		t.Fatalf("Stall{%q, %v}, stack:\n%s", s.Executor, s.Duration, s.Stack)
	}
	_, body := get(t, h, "/debug/spindle")
	var st debugStats
	if err := json.Unmarshal(body, &st); err != nil || st.Stalls != 1 || st.Busy < 200*time.Millisecond {
		t.Fatalf("stats after the stall (%v): %s", err, body)
	}
}
