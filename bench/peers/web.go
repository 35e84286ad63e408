package peers

// Web: the bundled suite's Web cases (see ../web.go, ../ws.go,
// ../webcase and ../wscase) on spindle's package web, on fasthttp and on
// nbio's nbhttp, with net/http beside them: GET /kv/{key} answered with a
// 64-byte value on 127.0.0.1, loaded by the same clients in a child
// process. keepalive/: 50 keep-alive connections, one request in flight
// on each; pipelined/: 16 in flight per connection; idle/: 10,000
// keep-alive connections used once, bytes the server's process holds per
// connection. ws_echo/ and ws_idle/: WebSocket echo, spindle's
// web/websocket against nbio's nbhttp/websocket, each server in a process
// of its own.

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"

	"github.com/spindle-rt/spindle/bench/webcase"
	"github.com/spindle-rt/spindle/executor"
)

const (
	fasthttpVersion = "valyala/fasthttp v1.78.0"
	nbioVersion     = "lesismal/nbio v1.6.8"
)

func init() {
	// nbio logs a line at Info for each engine started and stopped.
	logging.SetLevel(logging.LevelError)
	register(Group{
		Name: "Web",
		Note: "spindle's web on one loop; fasthttp's Server (a goroutine per connection from its worker pool); " +
			"nbio's nbhttp with one poller and its handlers run on the poller (ServerExecutor inline, no " +
			"goroutine pool); net/http; all answer GET /kv/{key} with the same 64-byte body, loaded by the same " +
			"clients in a child process, so the figures are the server's process; ws_ cases put each server in " +
			"a process of its own and read its runtime's figures; idle/ counts live heap and stacks after GC",
	},
		Case{Name: "keepalive/spindle", Unit: "req", Baseline: "keepalive/fasthttp", Kind: kindSpindle, Fn: webRequests(1, serveWebSpindle)},
		Case{Name: "keepalive/fasthttp", Unit: "req", Kind: kindPeer, Version: fasthttpVersion, Fn: webRequests(1, serveFasthttp)},
		Case{Name: "keepalive/nbio", Unit: "req", Kind: kindPeer, Version: nbioVersion, Fn: webRequests(1, serveNbio)},
		Case{Name: "keepalive/net_http", Unit: "req", Kind: kindGo, Fn: webRequests(1, webcase.ServeNetHTTP)},
		Case{Name: "pipelined/spindle", Unit: "req", Baseline: "pipelined/fasthttp", Kind: kindSpindle, Fn: webRequests(webcase.Depth, serveWebSpindle)},
		Case{Name: "pipelined/fasthttp", Unit: "req", Kind: kindPeer, Version: fasthttpVersion, Fn: webRequests(webcase.Depth, serveFasthttp)},
		Case{Name: "pipelined/nbio", Unit: "req", Kind: kindPeer, Version: nbioVersion, Fn: webRequests(webcase.Depth, serveNbio)},
		Case{Name: "pipelined/net_http", Unit: "req", Kind: kindGo, Fn: webRequests(webcase.Depth, webcase.ServeNetHTTP)},
		Case{Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/fasthttp", Kind: kindSpindle, Fn: webIdle(serveWebSpindle)},
		Case{Name: "idle/fasthttp", Unit: "conn", Metric: "B", Kind: kindPeer, Version: fasthttpVersion, Fn: webIdle(serveFasthttp)},
		Case{Name: "idle/nbio", Unit: "conn", Metric: "B", Kind: kindPeer, Version: nbioVersion, Fn: webIdle(serveNbio)},
		Case{Name: "idle/net_http", Unit: "conn", Metric: "B", Kind: kindGo, Fn: webIdle(webcase.ServeNetHTTP)},
		Case{Name: "ws_echo/spindle", Unit: "req", Baseline: "ws_echo/nbio", Kind: kindSpindle, Fn: wsEcho(startWSSpindle)},
		Case{Name: "ws_echo/nbio", Unit: "req", Kind: kindPeer, Version: nbioVersion, Fn: wsEcho(startWSNbio)},
		Case{Name: "ws_idle/spindle", Unit: "conn", Metric: "B", Baseline: "ws_idle/nbio", Kind: kindSpindle, Fn: wsIdle(startWSSpindle)},
		Case{Name: "ws_idle/nbio", Unit: "conn", Metric: "B", Kind: kindPeer, Version: nbioVersion, Fn: wsIdle(startWSNbio)},
	)
}

func serveWebSpindle() (webcase.Server, error) { return webcase.ServeSpindle(executor.New()) }

// webRequests returns a request case: depth requests in flight on each of
// webcase.Conns connections.
func webRequests(depth int, start func() (webcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) {
		var m *meter
		webcase.Requests(b, start, depth, func() { m = startMeter(b) }, func(n int) { m.stop(b, "req", float64(n)) })
	}
}

func webIdle(start func() (webcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { webcase.Idle(b, start) }
}

var (
	kvPrefix      = []byte("/kv/")
	contentLength = strconv.Itoa(len(webcase.Value))
)

// fasthttpServer is fasthttp's Server with the case's handler.
type fasthttpServer struct {
	srv  *fasthttp.Server
	ln   net.Listener
	done chan error
}

// serveFasthttp serves GET /kv/{key} with fasthttp: the route's method and
// prefix checked by hand (fasthttp has no router), the same header and
// body as the other servers.
func serveFasthttp() (webcase.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &fasthttpServer{ln: ln, done: make(chan error, 1)}
	s.srv = &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			path := ctx.Path()
			if !ctx.IsGet() || !bytes.HasPrefix(path, kvPrefix) || len(path) == len(kvPrefix) || bytes.IndexByte(path[len(kvPrefix):], '/') >= 0 {
				ctx.Error("404 page not found", fasthttp.StatusNotFound)
				return
			}
			ctx.Response.Header.SetContentType("application/octet-stream")
			ctx.Write(webcase.Value)
		},
		ReadTimeout:           2 * time.Minute,
		IdleTimeout:           2 * time.Minute,
		NoDefaultServerHeader: true,
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

func (s *fasthttpServer) Addr() string { return s.ln.Addr().String() }

// Close shuts the server down (its idle connections too) and waits for
// Serve to return.
func (s *fasthttpServer) Close() error {
	err := s.srv.Shutdown()
	if serr := <-s.done; serr != nil && err == nil {
		err = serr
	}
	return err
}

// nbioServer is nbio's nbhttp engine.
type nbioServer struct {
	eng  *nbhttp.Engine
	addr string
}

// serveNbio serves GET /kv/{key} with nbhttp and net/http's ServeMux
// (nbhttp takes an http.Handler): one poller, the handlers run on it.
func serveNbio() (webcase.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("key") == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		// nbhttp writes a body without a length chunked, where the others
		// set Content-Length for a body this small.
		w.Header().Set("Content-Length", contentLength)
		w.Write(webcase.Value)
	})
	return startNbio(mux)
}

// startNbio starts an nbhttp engine with handler on 127.0.0.1 and returns
// once it listens.
func startNbio(handler http.Handler) (*nbioServer, error) {
	s := &nbioServer{}
	eng := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{"127.0.0.1:0"},
		NPoller: 1,
		Handler: handler,
		// The handlers run on the poller's goroutine, as spindle's run on
		// its loop.
		ServerExecutor: func(f func()) { f() },
		Listen: func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err == nil {
				s.addr = ln.Addr().String()
			}
			return ln, err
		},
		KeepaliveTime:     2 * time.Minute,
		SupportServerOnly: true,
	})
	if err := eng.Start(); err != nil {
		return nil, err
	}
	if s.addr == "" {
		eng.Stop()
		return nil, errors.New("nbhttp: no listener")
	}
	s.eng = eng
	return s, nil
}

func (s *nbioServer) Addr() string { return s.addr }

func (s *nbioServer) Close() error {
	s.eng.Stop()
	return nil
}
