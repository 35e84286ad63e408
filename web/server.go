package web

// The server and its per-loop state.
//
// Invariants:
//   - a loopState and the connections on its list belong to one loop and
//     are touched only there; Server's own fields (listeners, loops,
//     counters) are guarded by mu or atomic;
//   - live counts the connections being served (not yet closed or
//     hijacked) and the OnShutdown registrations not yet stopped, over
//     every loop; once draining, the one that takes it to zero closes
//     idle;
//   - a loop's sweep timer runs only while that loop has connections.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// Defaults of a Server's limits and timeouts.
const (
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxHeaders        = 100
	DefaultMaxBodyBytes      = 4 << 20
	DefaultIdleTimeout       = 120 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyReadTimeout   = 60 * time.Second
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("web: Server closed")

// Handler answers an HTTP request on the connection's loop. It writes the
// response to w; the response finishes when ServeHTTP returns, unless it
// called w.Later. It should return soon: the loop serves every other
// connection meanwhile.
type Handler interface {
	ServeHTTP(w *ResponseWriter, r *Request)
}

// HandlerFunc makes a function a Handler.
type HandlerFunc func(w *ResponseWriter, r *Request)

// ServeHTTP calls f(w, r).
func (f HandlerFunc) ServeHTTP(w *ResponseWriter, r *Request) { f(w, r) }

// Server serves HTTP/1.1 on netio connections. Its fields are read when
// serving starts and must not change afterwards; zero fields take the
// defaults. A Server may serve listeners of several loops (the shards of a
// group) at once.
type Server struct {
	// Handler answers every request; nil: a 404 for everything.
	Handler Handler

	// MaxHeaderBytes bounds the request line and header fields (431).
	MaxHeaderBytes int
	// MaxHeaders bounds the number of header fields (431).
	MaxHeaders int
	// MaxBodyBytes bounds a request body (413, and the connection closes).
	MaxBodyBytes int64

	// IdleTimeout closes a keep-alive connection that sends nothing for
	// that long between requests.
	IdleTimeout time.Duration
	// ReadHeaderTimeout closes a connection whose request head has not
	// all come that long after its first bytes.
	ReadHeaderTimeout time.Duration
	// BodyReadTimeout closes a connection whose request body has not all
	// come that long after the request's first bytes.
	BodyReadTimeout time.Duration

	draining atomic.Bool
	closing  atomic.Bool
	live     atomic.Int64

	mu         sync.Mutex
	listeners  map[*netio.Listener]struct{}
	loops      map[*executor.Executor]*loopState
	idle       chan struct{} // closed when live reaches 0 while draining
	onShutdown []func()      // RegisterOnShutdown's, until Shutdown calls them
}

func (s *Server) handler() Handler {
	if s.Handler == nil {
		return notFound
	}
	return s.Handler
}

var notFound = HandlerFunc(func(w *ResponseWriter, r *Request) { NotFound(w, r) })

func (s *Server) idleTimeout() time.Duration { return or(s.IdleTimeout, DefaultIdleTimeout) }
func (s *Server) readHeaderTimeout() time.Duration {
	return or(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
}
func (s *Server) bodyReadTimeout() time.Duration {
	return or(s.BodyReadTimeout, DefaultBodyReadTimeout)
}

func or[T int | int64 | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

func (s *Server) limits() limits {
	return limits{
		head:    or(s.MaxHeaderBytes, DefaultMaxHeaderBytes),
		headers: or(s.MaxHeaders, DefaultMaxHeaders),
		body:    min(or(s.MaxBodyBytes, DefaultMaxBodyBytes), 1<<30),
	}
}

// Serve serves the connections l accepts, each on l's loop, until l is
// closed or the server shut down. It returns at once: ErrServerClosed if
// the server is already shutting down, else nil. Any goroutine.
func (s *Server) Serve(l *netio.Listener) error {
	if l == nil {
		panic("web: Serve on nil *netio.Listener")
	}
	s.mu.Lock()
	if s.draining.Load() || s.closing.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = make(map[*netio.Listener]struct{})
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	netio.Serve(l, s.ServeConn)
	return nil
}

// ServeGroup listens on address with one listener per shard of g
// (netio.ListenGroup) and serves each on its shard's loop: a connection
// lives on the shard that accepted it. It returns the listeners; Shutdown
// or Close stop them. It is netio.ServeGroupOn with s, as netio's own
// ServeGroup is.
func (s *Server) ServeGroup(g *shard.Group, network, address string, opts ...netio.ListenOption) ([]*netio.Listener, error) {
	return netio.ServeGroupOn(s, g, network, address, opts...)
}

// ServeConn serves HTTP on one connection, on its loop, until it closes.
// Serve calls it for each connection accepted; call it directly for a
// connection made otherwise (a dialled one, one over TLS). Any goroutine.
func (s *Server) ServeConn(nc *netio.Conn) {
	ex := nc.Executor()
	if !ex.OnLoop() {
		if ex.Submit(func() { s.ServeConn(nc) }) != nil {
			nc.Close()
		}
		return
	}
	if s.draining.Load() || s.closing.Load() {
		nc.Close()
		return
	}
	ls := s.loop(ex)
	c := &conn{srv: s, ls: ls, ex: ex, nc: nc}
	c.onReady = c.serve
	s.live.Add(1)
	ls.add(c)
	c.serve()
}

// loop returns the state of ex's loop, made on first use.
func (s *Server) loop(ex *executor.Executor) *loopState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loops == nil {
		s.loops = make(map[*executor.Executor]*loopState)
	}
	ls := s.loops[ex]
	if ls == nil {
		ls = &loopState{srv: s, ex: ex, lim: s.limits()}
		ls.streamer, _ = s.handler().(BodyStreamer)
		ls.onTick = ls.tick
		s.loops[ex] = ls
	}
	return ls
}

// connGone records that a connection is no longer served.
func (s *Server) connGone() {
	if s.live.Add(-1) == 0 && s.draining.Load() {
		s.mu.Lock()
		if s.idle != nil {
			select {
			case <-s.idle:
			default:
				close(s.idle)
			}
		}
		s.mu.Unlock()
	}
}

// Shutdown stops the server gracefully, as http.Server.Shutdown does: the
// listeners close (new connections are refused), idle connections close,
// requests in flight are answered (with Connection: close) and their
// connections close after their responses. Hijacked connections are not
// the server's: those whose owner registered with
// ResponseWriter.OnShutdown are told (a WebSocket that websocket.Upgrade
// made gets a close frame with 1001) and waited for, the others are left
// alone. The functions given to RegisterOnShutdown start. Shutdown returns
// nil once every connection is closed and every OnShutdown registration
// stopped, or ctx.Err() if ctx ends first, after closing the rest of the
// server's connections at once (Close).
//
// A WebSocket whose client does not answer its close frame holds
// Shutdown for the WebSocket's close timeout (websocket.DefaultCloseTimeout,
// 5 s). A connection closes as netio.Conn.Close does: its output still
// leaves after Shutdown has returned, within the listener's linger time
// (netio.DefaultLinger, 5 s; netio.WithLinger), and the Shutdown of the
// executor (or shard group) that follows waits for it, so a client that
// stops reading holds that one up to the linger time. A ctx with a
// deadline bounds either wait. Any goroutine; not from the loop of a
// connection it waits for.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	ls := s.closeListeners()
	s.callOnShutdown()
	s.mu.Unlock()
	if s.live.Load() == 0 {
		s.connGoneCheck()
	}
	// A loop whose executor closes while Shutdown waits leaves nothing to
	// wait for: its connections are counted as gone when it stops.
	stop := make(chan struct{})
	defer close(stop)
	for _, l := range ls {
		if l.ex.Submit(l.drain) != nil {
			l.forget()
			continue
		}
		go func() {
			select {
			case <-l.ex.Done():
				l.forgetNow()
			case <-stop:
			}
		}()
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

func (s *Server) connGoneCheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live.Load() == 0 {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}

// Close closes the listeners and every connection at once; output
// written before still leaves (netio's linger). Requests in flight get no
// answer. Any goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing.Store(true)
	s.draining.Store(true)
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	ls := s.closeListeners()
	s.mu.Unlock()
	if s.live.Load() == 0 {
		s.connGoneCheck()
	}
	for _, l := range ls {
		if l.ex.OnLoop() {
			l.closeAll()
		} else if l.ex.Submit(l.closeAll) != nil {
			l.forget()
		}
	}
	return nil
}

// closeListeners closes the listeners and returns the loops. s.mu held.
func (s *Server) closeListeners() []*loopState {
	for l := range s.listeners {
		l.Close()
	}
	s.listeners = nil
	ls := make([]*loopState, 0, len(s.loops))
	for _, l := range s.loops {
		ls = append(ls, l)
	}
	return ls
}

// loopState is what a server keeps on one loop: its connections, the
// coarse clock their deadlines are on, and the date of responses. Both
// read the loop's clock (Executor.Now), so under package sim the timeouts
// run on the simulation's fake time, as the loop's timers do.
type loopState struct {
	srv      *Server
	ex       *executor.Executor
	conns    *conn
	n        int
	streamer BodyStreamer     // the server's Handler, if it is one
	handling *ResponseWriter  // the response whose handler is running
	later    hooks.PanicWatch // the binding its Later made, ended when the handler returns
	now      int64            // nanoseconds since epoch, as of the last tick
	timer    *executor.Timer
	onTick   func()

	dateSec int64
	date    []byte // "Date: ...\r\n"

	lim  limits
	hbuf []byte     // the head of a response being built
	free []*Request // requests to parse into, shared by the connections
	// the memory of responses that finished later than their handlers,
	// for the requests made next (keepSpare)
	spares []spare

	hooks []*shutdownHook // the OnShutdown registrations of the loop (shutdown.go)
}

// maxFree bounds the pool of requests of a loop.
const maxFree = 1024

func (l *loopState) getReq() *Request {
	if n := len(l.free); n > 0 {
		r := l.free[n-1]
		l.free[n-1] = nil
		l.free = l.free[:n-1]
		return r
	}
	r := &Request{}
	if n := len(l.spares); n > 0 {
		sp := l.spares[n-1]
		l.spares = l.spares[:n-1]
		r.w.hdr.kv, r.w.body, r.w.out = sp.kv, sp.body, sp.out
	}
	return r
}

// spare is the memory of a finished response whose Request cannot go back
// to the pool.
type spare struct {
	kv        []headerField
	body, out []byte
}

// keepSpare takes the memory of w, finished, whose Request cannot go back
// to the pool because it finished later than its handler (Later): its
// handler may still hold w and r, and End on a finished response must
// stay harmless, so the Request itself is left to the garbage collector.
// What is taken is the response's header list and buffers, which no one
// reads once the response has left (Header() then gives an empty list):
// the next Request made gets them. The Request's own fields (the strings
// of its head) are not touched.
func (l *loopState) keepSpare(w *ResponseWriter) {
	if len(l.spares) >= maxFree || cap(w.body) > 64<<10 || cap(w.out) > 64<<10 || cap(w.hdr.kv) == 0 {
		return
	}
	clear(w.hdr.kv[:cap(w.hdr.kv)])
	l.spares = append(l.spares, spare{kv: w.hdr.kv[:0], body: w.body[:0], out: w.out[:0]})
	w.hdr.kv, w.body, w.out = nil, nil, nil
}

// putReq gives a finished request back; one whose memory grew for a big
// request is left to the garbage collector.
func (l *loopState) putReq(r *Request) {
	if len(l.free) >= maxFree || cap(r.w.body) > 64<<10 || cap(r.w.out) > 64<<10 {
		return
	}
	r.buf, r.body, r.c = nil, nil, nil
	l.free = append(l.free, r)
}

// tickEvery is the period of the sweep, the precision of the timeouts.
func (l *loopState) tickEvery() time.Duration {
	s := l.srv
	d := min(s.idleTimeout(), s.readHeaderTimeout(), s.bodyReadTimeout()) / 4
	return min(max(d, 5*time.Millisecond), 500*time.Millisecond)
}

func (l *loopState) add(c *conn) {
	l.now = l.ex.Now().UnixNano() // the clock stands still while no connection is served
	c.next = l.conns
	if c.next != nil {
		c.next.prev = c
	}
	l.conns = c
	l.n++
}

func (l *loopState) remove(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.conns == c {
		l.conns = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	l.n--
}

// watch makes sure the sweep runs.
func (l *loopState) watch() {
	if l.timer == nil {
		l.timer = l.ex.AfterFunc(l.tickEvery(), l.onTick)
	}
}

// tick advances the clock and closes the connections past their
// deadline.
func (l *loopState) tick() {
	l.timer = nil
	l.now = l.ex.Now().UnixNano()
	for c := l.conns; c != nil; {
		next := c.next
		if c.deadline != 0 && l.now >= c.deadline && (len(c.reqs) == 0 || c.streaming != nil) {
			c.close()
		}
		c = next
	}
	if l.n > 0 {
		l.watch()
	}
}

// drain closes the idle connections of the loop, marks the others to
// close after their responses, and calls the OnShutdown functions.
func (l *loopState) drain() {
	l.callHooks()
	for c := l.conns; c != nil; {
		next := c.next
		if len(c.reqs) == 0 && c.cur == nil && c.off == len(c.in) && len(c.pend) == 0 {
			c.close()
		} else {
			c.closeAfter = true
		}
		c = next
	}
}

// forget counts the connections of a loop whose executor has closed as
// gone, and its OnShutdown registrations as stopped: netio closed their
// sockets with the executor. Off the loop, once the loop has stopped.
func (l *loopState) forget() {
	go func() {
		<-l.ex.Done()
		l.forgetNow()
	}()
}

// forgetNow is forget once the loop has stopped.
func (l *loopState) forgetNow() {
	l.srv.mu.Lock()
	n := l.n + len(l.hooks)
	l.n, l.conns, l.hooks = 0, nil, nil
	l.srv.mu.Unlock()
	for range n {
		l.srv.connGone()
	}
}

// closeAll closes every connection of the loop.
func (l *loopState) closeAll() {
	for c := l.conns; c != nil; {
		next := c.next
		c.close()
		c = next
	}
}

// dateLine returns the Date header line, made again once a second. The
// date is the loop's clock (Executor.Now): the wall clock on a loop of its
// own, the simulation's fake time on a loop that package sim steps, so a
// simulated run's responses are the same in every run of its seed.
func (l *loopState) dateLine() []byte {
	now := l.ex.Now()
	if sec := now.Unix(); sec != l.dateSec || l.date == nil {
		l.dateSec = sec
		b := append(l.date[:0], "Date: "...)
		b = now.UTC().AppendFormat(b, http.TimeFormat)
		l.date = append(b, '\r', '\n')
	}
	return l.date
}
