// Package counters is the state of the httpserver example and its HTTP
// routes: a counter per key and a log of recent events, kept either on a
// spindle loop (Loop) or, for comparison, behind a sync.Mutex (Mutex). The
// routes work with either, so the bundled benchmarks (BenchmarkHTTP) serve
// the example's own handlers from both.
package counters

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Counters is the state the routes serve.
type Counters interface {
	// Incr adds one to key's counter and returns the new value.
	Incr(ctx context.Context, key string) (int, error)
	// Get returns key's counter.
	Get(ctx context.Context, key string) (int, error)
}

// state is the data both implementations keep.
type state struct {
	counts map[string]int
	recent []string
}

func (s *state) incr(key string) int {
	s.counts[key]++
	s.recent = append(s.recent, "incr "+key)
	if len(s.recent) > 16 {
		s.recent = s.recent[1:]
	}
	return s.counts[key]
}

// Loop keeps the state on an executor's loop: only code running on the
// loop touches it, so it needs no lock. Each call hands its work to the
// loop with future.Do and waits with the caller's ctx, so a client that
// goes away stops waiting at once.
type Loop struct {
	ex *executor.Executor
	st state
}

// NewLoop returns counters owned by ex's loop.
func NewLoop(ex *executor.Executor) *Loop {
	return &Loop{ex: ex, st: state{counts: map[string]int{}}}
}

// Incr adds one to key's counter on the loop.
func (l *Loop) Incr(ctx context.Context, key string) (int, error) {
	return future.Do(ctx, l.ex, func() (int, error) { return l.st.incr(key), nil })
}

// Get returns key's counter, read on the loop.
func (l *Loop) Get(ctx context.Context, key string) (int, error) {
	return future.Do(ctx, l.ex, func() (int, error) { return l.st.counts[key], nil })
}

// Mutex keeps the same state behind a sync.Mutex: the plain-Go twin of
// Loop.
type Mutex struct {
	mu sync.Mutex
	st state
}

// NewMutex returns counters guarded by a mutex.
func NewMutex() *Mutex { return &Mutex{st: state{counts: map[string]int{}}} }

// Incr adds one to key's counter.
func (m *Mutex) Incr(_ context.Context, key string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.incr(key), nil
}

// Get returns key's counter.
func (m *Mutex) Get(_ context.Context, key string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.counts[key], nil
}

// Routes registers POST /incr?key=K and GET /get?key=K on mux, served from
// c.
func Routes(mux *http.ServeMux, c Counters) {
	mux.HandleFunc("POST /incr", func(w http.ResponseWriter, r *http.Request) {
		n, err := c.Incr(r.Context(), r.URL.Query().Get("key"))
		Reply(w, n, err)
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		n, err := c.Get(r.Context(), r.URL.Query().Get("key"))
		Reply(w, n, err)
	})
}

// Reply answers a request: the value as JSON, 503 once the executor has
// closed, 500 for any other error.
func Reply(w http.ResponseWriter, n int, err error) {
	switch {
	case errors.Is(err, executor.ErrClosed):
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"value": n})
	}
}
