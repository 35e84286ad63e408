package netio

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/shard"
)

// Serve accepts connections on l for as long as it is open and calls
// handle on l's loop with each one. It is the package's one accept loop:
// Server.Serve runs it too, behind the server's admission. handle owns the connection (it
// receives, writes and closes it) and should return soon: the loop runs
// everything else meanwhile; long work belongs in a spawned task. Serve
// returns at once; accepting ends when l or its executor closes. A panic in
// handle goes to the executor's panic handler, the connection is closed,
// and accepting goes on. Any goroutine.
//
// An accept that fails for another reason (EMFILE or ENFILE when the
// process or the system has no descriptor left, ENOBUFS, ...) does not end
// Serve: it waits and tries again, as net/http's Server does, 5 ms after
// the first failure, doubling to at most a second while accepts keep
// failing, and at once again after one succeeds. The first failure of each
// spell is logged with log/slog (a warning naming the executor and the
// listener); every one is counted in Stats.AcceptErrors. Connections
// waiting in the kernel's backlog meanwhile are served once descriptors
// free up.
func Serve(l *Listener, handle func(*Conn)) {
	if l == nil {
		panic("netio: Serve on nil *Listener")
	}
	if handle == nil {
		panic("netio: Serve with nil handler")
	}
	a := &acceptLoop{l: l, handle: handle}
	a.nextFn = a.next
	a.retryFn = a.retry
	l.Accept().OnComplete(a.nextFn)
}

// Back-off between failed accepts, as net/http's.
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
)

// acceptLoop is Serve's state, loop-owned: its callbacks run on l's loop.
type acceptLoop struct {
	l       *Listener
	handle  func(*Conn)
	delay   time.Duration // 0 while accepts succeed
	nextFn  func(*Conn, error)
	retryFn func()
}

func (a *acceptLoop) next(c *Conn, err error) {
	if err != nil {
		if errors.Is(err, net.ErrClosed) || errors.Is(err, executor.ErrClosed) {
			return // the listener or the executor closed
		}
		if a.delay == 0 {
			a.delay = acceptDelayMin
			slog.Warn("netio: accept failed; retrying with back-off until it succeeds",
				"executor", a.l.ex.Name(), "listener", addrString(a.l.addr), "err", err)
		} else {
			a.delay = min(2*a.delay, acceptDelayMax)
		}
		a.l.ex.AfterFunc(a.delay, a.retryFn)
		return
	}
	a.delay = 0
	a.l.Accept().OnComplete(a.nextFn)
	a.serve(c)
}

// serve calls handle with c. If handle panics, c is closed (as net/http
// closes the connection of a handler that panicked: its state is unknown,
// and nobody else may be left to close it) while the panic goes on to the
// loop's panic handler with its stack whole.
func (a *acceptLoop) serve(c *Conn) {
	returned := false
	defer func() {
		if !returned {
			c.Close()
		}
	}()
	a.handle(c)
	returned = true
}

func (a *acceptLoop) retry() { a.l.Accept().OnComplete(a.nextFn) }

// ListenGroup opens one listener per shard of g on one address, with
// SO_REUSEPORT, so the kernel spreads connections over the shards:
// listener i belongs to g.Shard(i). With port 0 the first listener picks a
// free port and the others take the same one. If one fails, those opened
// are closed and the error returned. Any goroutine.
func ListenGroup(g *shard.Group, network, address string, opts ...ListenOption) ([]*Listener, error) {
	if g == nil {
		return nil, errors.New("netio: ListenGroup with nil group")
	}
	if network == "unix" {
		return nil, fmt.Errorf("netio: listen unix %s: ListenGroup needs TCP (SO_REUSEPORT)", address)
	}
	opts = append(opts[:len(opts):len(opts)], WithReusePort())
	ls := make([]*Listener, 0, g.Len())
	for i := range g.Len() {
		l, err := Listen(g.Shard(i), network, address, opts...)
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, err
		}
		if ta, ok := l.Addr().(*net.TCPAddr); ok && i == 0 {
			// Port 0: the other shards take the port the first one got.
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = ""
			}
			address = net.JoinHostPort(host, strconv.Itoa(ta.Port))
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// ServeGroup is ListenGroup and Serve on each listener: handle runs on the
// loop of the shard whose listener accepted the connection. It returns the
// listeners (close them, or the group, to stop serving). It is
// ServeGroupOn with a server that serves each listener with Serve(l,
// handle).
func ServeGroup(g *shard.Group, network, address string, handle func(*Conn), opts ...ListenOption) ([]*Listener, error) {
	if handle == nil {
		return nil, errors.New("netio: ServeGroup with nil handler")
	}
	return ServeGroupOn(handleFunc(handle), g, network, address, opts...)
}

// handleFunc serves a listener with Serve and itself.
type handleFunc func(*Conn)

func (h handleFunc) Serve(l *Listener) error {
	Serve(l, h)
	return nil
}

// ListenerServer serves the connections a listener accepts, from its
// Serve on, as Server does. A protocol's server built on netio implements
// it too (package web's Server does), and ServeGroupOn serves a shard
// group with any of them.
type ListenerServer interface {
	// Serve starts serving l; it returns at once (an error when the
	// server cannot take l: ErrServerClosed, say).
	Serve(l *Listener) error
}

// ServeGroupOn opens one listener per shard of g on address (ListenGroup)
// and hands each to srv.Serve, so that a connection lives on the shard
// that accepted it. It returns the listeners (srv's shutdown, or the
// group's, stops them). If a listener cannot be opened or srv refuses one,
// every listener is closed and the error returned. It is the one
// implementation of ServeGroup, Server.ServeGroup and web's
// Server.ServeGroup. Any goroutine.
func ServeGroupOn(srv ListenerServer, g *shard.Group, network, address string, opts ...ListenOption) ([]*Listener, error) {
	ls, err := ListenGroup(g, network, address, opts...)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if err := srv.Serve(l); err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, err
		}
	}
	return ls, nil
}
