package webcase

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// spindleServer is web's server on one executor's loop.
type spindleServer struct {
	ex   *executor.Executor
	srv  *web.Server
	addr string
}

// ServeSpindle serves the case's route with package web on ex (started
// here, closed by Close).
func ServeSpindle(ex *executor.Executor) (Server, error) {
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		ex.Close()
		return nil, err
	}
	mux := web.NewMux()
	mux.HandleFunc("GET /kv/{key}", func(w *web.ResponseWriter, r *web.Request) {
		if r.PathValue("key") == "" {
			web.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(Value)
	})
	srv := &web.Server{Handler: mux}
	srv.Serve(l)
	return &spindleServer{ex: ex, srv: srv, addr: l.Addr().String()}, nil
}

func (s *spindleServer) Addr() string                 { return s.addr }
func (s *spindleServer) Executor() *executor.Executor { return s.ex }

func (s *spindleServer) Close() error {
	s.srv.Close()
	return s.ex.Close()
}

// netHTTPServer is net/http with the same handler.
type netHTTPServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// ServeNetHTTP serves the case's route with net/http.
func ServeNetHTTP() (Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("key") == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(Value)
	})
	s := &netHTTPServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() { s.srv.Serve(ln); close(s.done) }()
	return s, nil
}

func (s *netHTTPServer) Addr() string { return s.ln.Addr().String() }

func (s *netHTTPServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	s.srv.Close()
	<-s.done
	return nil
}
