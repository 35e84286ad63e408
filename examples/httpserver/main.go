// Command httpserver is a small net/http service whose handlers run their
// logic on one embedded spindle executor.
//
// The state (a counter per key and a log of recent events) lives on the loop:
// every handler hands its work to the loop with future.Call and awaits the
// result with the request's context, so the state needs no lock, and a
// client that goes away stops waiting at once.
//
//	go run ./examples/httpserver -addr 127.0.0.1:8080
//	curl -X POST 127.0.0.1:8080/incr?key=a
//	curl 127.0.0.1:8080/get?key=a
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Store is the service's state. It is owned by the executor's loop: only
// code running on the loop touches its fields.
type Store struct {
	ex     *executor.Executor
	counts map[string]int
	recent []string
}

// NewStore returns a store bound to ex.
func NewStore(ex *executor.Executor) *Store {
	return &Store{ex: ex, counts: map[string]int{}}
}

// Incr adds one to key's counter on the loop and returns the new value.
func (s *Store) Incr(ctx context.Context, key string) (int, error) {
	return future.Call(s.ex, func() (int, error) {
		s.counts[key]++
		s.recent = append(s.recent, "incr "+key)
		if len(s.recent) > 16 {
			s.recent = s.recent[1:]
		}
		return s.counts[key], nil
	}).Await(ctx)
}

// Get returns key's counter.
func (s *Store) Get(ctx context.Context, key string) (int, error) {
	return future.Call(s.ex, func() (int, error) { return s.counts[key], nil }).Await(ctx)
}

// Handler returns the service's HTTP handler.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /incr", func(w http.ResponseWriter, r *http.Request) {
		n, err := s.Incr(r.Context(), r.URL.Query().Get("key"))
		reply(w, n, err)
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		n, err := s.Get(r.Context(), r.URL.Query().Get("key"))
		reply(w, n, err)
	})
	return mux
}

func reply(w http.ResponseWriter, n int, err error) {
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

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ex := executor.New(executor.WithName("httpserver"))
	ex.Start()
	srv := &http.Server{Handler: NewStore(ex).Handler(), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("listening on %s", ln.Addr())
	if err := run(ctx, srv, ln, ex); err != nil {
		log.Fatal(err)
	}
}

// shutdownGrace bounds the shutdown: the requests in flight, then what is
// left on the loop's queue.
const shutdownGrace = 5 * time.Second

// run serves srv on ln until ctx ends, then shuts down in order:
// srv.Shutdown first, which stops taking requests and waits until every
// handler in flight has returned (they wait on the loop, so the loop must
// keep running meanwhile); then ex.Shutdown, which runs what is left on the
// loop's queue; then ex.Close. Closing the executor as soon as Serve returns
// would answer the requests still in flight with 503. Past shutdownGrace the
// server's connections are closed and ex.Shutdown becomes a Close. run owns
// ex: it returns once ex has closed.
func run(ctx context.Context, srv *http.Server, ln net.Listener, ex *executor.Executor) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served: // serving failed before a shutdown was asked for
		return errors.Join(err, srv.Close(), ex.Close())
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = errors.Join(err, srv.Close()) // the grace ran out: drop what is still open
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, ex.Shutdown(sctx), ex.Close())
}
