package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/spindletest"
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
	var wg sync.WaitGroup
	seen := make([]map[int]bool, keys) // values returned per key must be distinct
	var mu sync.Mutex
	for k := range seen {
		seen[k] = map[int]bool{}
	}
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
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
		reply(w, n, err)
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
