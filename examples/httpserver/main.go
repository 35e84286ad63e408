// Command httpserver is a small net/http service whose handlers run their
// logic on one embedded spindle executor.
//
// The state (a counter per key and a log of recent events) lives on the loop:
// every handler hands its work to the loop with future.Do and waits for the
// result with the request's context, so the state needs no lock, and a
// client that goes away stops waiting at once. The state and its routes are
// in package counters, which also has the sync.Mutex twin that the bundled
// benchmarks (BenchmarkHTTP) compare it with.
//
// The loop's health is served as JSON on /debug/spindle (the executor's
// Stats and its utilization) and, for a Prometheus server to scrape, in
// Prometheus' text format on /metrics (metrics.Handler, from the library
// itself: no client library needed; a service that has one registers
// contrib/prometheus's collector instead). A task that holds the loop longer than
// -stall is logged with its stack while it still runs. With -debug-stall
// (off by default) /debug/stall?ms=N provokes such a stall: a handler that
// makes a blocking call of N ms on the loop, the mistake the stall report
// is there to catch (see docs/health.md).
//
//	go run ./examples/httpserver -addr 127.0.0.1:8080 -debug-stall
//	curl -X POST 127.0.0.1:8080/incr?key=a
//	curl 127.0.0.1:8080/get?key=a
//	curl 127.0.0.1:8080/debug/stall?ms=300
//	curl 127.0.0.1:8080/debug/spindle
//	curl 127.0.0.1:8080/metrics
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
	"strconv"
	"time"

	"github.com/spindle-rt/spindle/examples/httpserver/counters"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/metrics"
)

// Store is the service: counters owned by the executor's loop
// (counters.Loop) and the debug routes.
type Store struct {
	*counters.Loop

	// DebugStall serves /debug/stall, which stalls the loop on purpose.
	// Off by default: set it before calling Handler.
	DebugStall bool

	ex *executor.Executor
}

// NewStore returns a store bound to ex.
func NewStore(ex *executor.Executor) *Store {
	return &Store{Loop: counters.NewLoop(ex), ex: ex}
}

// Handler returns the service's HTTP handler.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	counters.Routes(mux, s.Loop)
	mux.HandleFunc("GET /debug/spindle", func(w http.ResponseWriter, r *http.Request) {
		st := s.ex.Stats()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(debugStats{Stats: st, Utilization: st.Utilization()})
	})
	mux.Handle("GET /metrics", metrics.Handler(s.ex))
	if s.DebugStall {
		mux.HandleFunc("GET /debug/stall", func(w http.ResponseWriter, r *http.Request) {
			ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
			if err != nil || ms < 1 || ms > maxStallMS {
				http.Error(w, "ms: want 1 to "+strconv.Itoa(maxStallMS), http.StatusBadRequest)
				return
			}
			n, err := future.Do(r.Context(), s.ex, func() (int, error) {
				blockingCall(time.Duration(ms) * time.Millisecond)
				return ms, nil
			})
			counters.Reply(w, n, err)
		})
	}
	return mux
}

// debugStats is what /debug/spindle serves: the executor's Stats (its
// durations in nanoseconds) and Busy/(Busy+Idle).
type debugStats struct {
	executor.Stats
	Utilization float64
}

// maxStallMS bounds the stall that /debug/stall provokes.
const maxStallMS = 10000

// blockingCall stands for a blocking function called on the loop by
// mistake: the whole loop waits for it.
func blockingCall(d time.Duration) { time.Sleep(d) }

// logStall logs a stall report: which loop, for how long so far, and the
// stack of the code holding it.
func logStall(s executor.Stall) {
	log.Printf("loop %q stalled: one task has held it for %v so far:\n%s", s.Executor, s.Duration.Round(time.Millisecond), s.Stack)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	stall := flag.Duration("stall", 100*time.Millisecond, "log a task that holds the loop longer than this (0: never)")
	debugStall := flag.Bool("debug-stall", false, "serve /debug/stall?ms=N, which stalls the loop for N ms")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ex := executor.New(executor.WithName("httpserver"), executor.WithStallHandler(*stall, logStall))
	ex.Start()
	store := NewStore(ex)
	store.DebugStall = *debugStall
	srv := &http.Server{Handler: store.Handler(), ReadHeaderTimeout: 5 * time.Second}
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
