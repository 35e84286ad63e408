package netio

// A server: listeners, the connections they accepted, and their shutdown.
//
// Invariants:
//   - mu guards state, sets and listeners; it is taken by Serve, Shutdown
//     and Close only, never on a connection's path;
//   - a connSet belongs to one loop and is loop-owned: it holds exactly the
//     connections of that loop the server accepted and that are not yet
//     released (each given its place by ownBy, set.conns[c.ownIndex()] ==
//     c); release takes a connection out, so the set follows the
//     connections with no lock;
//   - once a set drains (Shutdown), every connection in it and every one
//     accepted later has drain set, and done is resolved when the set is
//     empty; once the server is closed, a connection accepted later is
//     closed at once.

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/shard"
)

// ErrServerClosed is what Serve returns after Shutdown or Close, and what a
// receive fails with when it would wait on a connection of a server that
// is shutting down.
var ErrServerClosed = errors.New("netio: Server closed")

// Server serves the connections of its listeners with Handler and shuts
// them down together, as http.Server does for HTTP: Shutdown stops
// accepting, lets each connection finish what its peer already sent, and
// closes it once its output is sent; Close closes everything at once.
// Listeners may belong to several executors (ServeGroup: the shards of a
// group); each loop keeps its own connections, with no lock. The zero
// value is ready once Handler is set; a Server must not be copied after
// first use.
type Server struct {
	// Handler is called on the connection's loop with each connection
	// accepted, as Serve's handle is: it owns the connection (receives,
	// writes, closes it) and should return soon.
	Handler func(*Conn)

	// IdleTimeout, if positive, closes a connection on which no byte was
	// received or sent for that long (Conn.SetIdleTimeout).
	IdleTimeout time.Duration

	mu        sync.Mutex
	state     int // serving, shutting down, closed
	sets      []*connSet
	listeners []*Listener
}

const (
	serving = iota
	shuttingDown
	closed
)

// connSet is a server's connections on one loop.
type connSet struct {
	s        *Server
	lp       *loop.Loop
	conns    []*Conn
	draining bool
	closed   bool
	done     *future.Promise[struct{}]
}

// Serve accepts connections on l and calls s.Handler with each, on l's
// loop, until l closes or s shuts down. It returns at once (nil), or
// ErrServerClosed, closing l, after Shutdown or Close. It is Serve(l, ...)
// with a handler that records each connection for Shutdown and Close,
// then calls Handler. Any goroutine.
func (s *Server) Serve(l *Listener) error {
	if l == nil {
		panic("netio: Server.Serve on nil *Listener")
	}
	if s.Handler == nil {
		panic("netio: Server.Serve with nil Handler")
	}
	s.mu.Lock()
	if s.state != serving {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	var set *connSet
	for _, cs := range s.sets {
		if cs.lp == l.lp {
			set = cs
		}
	}
	if set == nil {
		set = &connSet{s: s, lp: l.lp}
		s.sets = append(s.sets, set)
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	Serve(l, set.add)
	return nil
}

// ServeGroup is ListenGroup and Serve on each listener: one listener per
// shard of g on one address, each connection served on the shard that
// accepted it. It returns the listeners.
func (s *Server) ServeGroup(g *shard.Group, network, address string, opts ...ListenOption) ([]*Listener, error) {
	if s.Handler == nil {
		return nil, errors.New("netio: Server.ServeGroup with nil Handler")
	}
	return ServeGroupOn(s, g, network, address, opts...)
}

// add starts serving a connection accepted on the set's loop.
func (set *connSet) add(c *Conn) {
	if set.closed {
		c.interruptWith(net.ErrClosed)
		return
	}
	c.ownBy(set, len(set.conns))
	set.conns = append(set.conns, c)
	if d := set.s.IdleTimeout; d > 0 {
		c.SetIdleTimeout(d)
	}
	if set.draining {
		c.drainNow() // nothing is pending yet: later receives that would wait fail
	}
	set.s.Handler(c)
}

// remove takes a released connection out of the set.
func (set *connSet) remove(c *Conn) {
	i, last := c.ownIndex(), len(set.conns)-1
	if i < 0 || i > last || set.conns[i] != c {
		return
	}
	set.conns[i] = set.conns[last]
	set.conns[i].ownBy(set, i)
	set.conns[last] = nil
	set.conns = set.conns[:last]
	c.ownBy(nil, -1)
	if len(set.conns) == 0 {
		set.conns = nil // a burst is over: give the array back
		if set.done != nil {
			set.done.Resolve(struct{}{})
		}
	}
}

// drainAll starts the set's shutdown and returns the future of its end.
func (set *connSet) drainAll() *future.Future[struct{}] {
	if set.done == nil {
		set.done = future.NewPromise[struct{}]((*executor.Executor)(set.lp))
	}
	set.draining = true
	for _, c := range append([]*Conn(nil), set.conns...) {
		c.drainNow()
	}
	if len(set.conns) == 0 {
		set.done.Resolve(struct{}{})
	}
	return set.done.Future()
}

// closeAll closes every connection of the set at once.
func (set *connSet) closeAll() {
	set.closed = true
	for _, c := range append([]*Conn(nil), set.conns...) {
		c.interruptWith(net.ErrClosed)
	}
}

// Shutdown shuts s down gracefully, as http.Server.Shutdown does: it
// closes the listeners, then lets every connection finish. A receive that
// would wait for the peer fails with ErrServerClosed (one that has bytes
// to return, or whose Reader holds the start of a token, goes on), so a
// handler finishes the requests its peer already sent and then ends the
// connection, as on any receive error; Close sends what was written. When
// every connection is closed and its output sent, Shutdown returns nil. If
// ctx ends first it closes the rest at once (Close) and returns ctx's
// error. A connection's close may wait out its linger (DefaultLinger, 5 s,
// or WithLinger's) for a peer that does not read what was written: give
// ctx a deadline, or the listener a shorter linger, to bound the wait. It
// may not be called from one of the server's loops. Any other goroutine.
func (s *Server) Shutdown(ctx context.Context) error {
	sets := s.stop(shuttingDown)
	var waits []*future.Future[struct{}]
	for _, set := range sets {
		f, err := future.Do(ctx, (*executor.Executor)(set.lp), func() (*future.Future[struct{}], error) {
			return set.drainAll(), nil
		})
		if err == nil {
			waits = append(waits, f)
		} else if !errors.Is(err, executor.ErrClosed) {
			s.Close()
			return err
		}
	}
	for _, f := range waits {
		if _, err := f.Await(ctx); err != nil && !errors.Is(err, executor.ErrClosed) {
			s.Close()
			return err
		}
	}
	return nil
}

// Close closes s at once, as http.Server.Close does: the listeners, and
// every connection (what the kernel takes at once of their output is sent,
// the rest dropped; pending receives fail with net.ErrClosed). It returns
// once they are closed. It may not be called from one of the server's
// loops. Any other goroutine.
func (s *Server) Close() error {
	for _, set := range s.stop(closed) {
		_, _ = future.Do(context.Background(), (*executor.Executor)(set.lp), func() (struct{}, error) {
			set.closeAll()
			return struct{}{}, nil
		}) // executor.ErrClosed: its connections are closed already
	}
	return nil
}

// stop moves s to state (shutting down or closed) unless it is there
// already, closes its listeners and returns its sets.
func (s *Server) stop(state int) []*connSet {
	s.mu.Lock()
	s.state = max(s.state, state)
	sets, ls := append([]*connSet(nil), s.sets...), s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, set := range sets {
		if set.lp.OnLoop() {
			panic("netio: Server.Shutdown or Close called from one of the server's loops; call it from another goroutine")
		}
	}
	for _, l := range ls {
		l.Close()
	}
	return sets
}
