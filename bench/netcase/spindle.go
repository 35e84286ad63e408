package netcase

// The spindle server: a netio listener on one executor. Every connection
// is served by callbacks on the loop, with no task and no goroutine of its
// own: the connection's handler is the Waker it polls with, so waiting for
// bytes costs one poll registration, and a request costs no allocation.

import (
	"errors"
	"net"
	"sync"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// Spindle is the spindle server.
type Spindle struct {
	ex       *executor.Executor
	ln       *netio.Listener
	onAccept func(*netio.Conn, error) // s.accepted, made once

	mu  sync.Mutex
	err error // why accepting stopped, if not because of Close
}

// ServeSpindle starts a spindle server on 127.0.0.1 served by ex, which
// must not be running yet: ServeSpindle starts it, and Close closes it.
func ServeSpindle(ex *executor.Executor) (*Spindle, error) { return serveSpindle(ex) }

func serveSpindle(ex *executor.Executor, opts ...netio.ListenOption) (*Spindle, error) {
	s, err := listenSpindle(ex, opts...)
	if err != nil {
		return nil, err
	}
	ex.Start()
	return s, nil
}

// listenSpindle makes a spindle server on ex, which is not started yet.
func listenSpindle(ex *executor.Executor, opts ...netio.ListenOption) (*Spindle, error) {
	ln, err := netio.Listen(ex, "tcp", "127.0.0.1:0", opts...)
	if err != nil {
		return nil, err
	}
	s := &Spindle{ex: ex, ln: ln}
	s.onAccept = s.accepted
	ln.Accept().OnComplete(s.onAccept)
	return s, nil
}

// accepted serves a new connection and waits for the next one. On the loop.
func (s *Spindle) accepted(c *netio.Conn, err error) {
	if err != nil {
		if !errors.Is(err, net.ErrClosed) && !errors.Is(err, executor.ErrClosed) {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
		return
	}
	h := &echoConn{c: c}
	h.poll = h.serve
	h.serve()
	s.ln.Accept().OnComplete(s.onAccept)
}

// Addr returns the address the server listens on.
func (s *Spindle) Addr() string { return s.ln.Addr().String() }

// Executor returns the executor that serves the connections.
func (s *Spindle) Executor() *executor.Executor { return s.ex }

// Close closes the listener and the executor, which closes every
// connection. It returns the error that stopped accepting early, if one
// did.
func (s *Spindle) Close() error {
	s.ln.Close()
	s.ex.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// echoConn serves one connection: it answers each request of Size bytes
// with the same bytes. Loop-owned.
type echoConn struct {
	c    *netio.Conn
	poll func()      // h.serve, made once, for Wake to post
	part *[Size]byte // the start of a request split across receives; nil until one is
	n    int         // bytes in part
}

// Wake is called by c when bytes may have arrived.
func (h *echoConn) Wake() {
	if ex := h.c.Executor(); ex.OnLoop() {
		ex.Post(h.poll)
	} else {
		ex.Submit(h.poll) // fails only once ex is closed, which closes c
	}
}

// serve receives and answers until nothing more is readable, then waits
// (PollRecv registers h, and Wake runs serve again).
func (h *echoConn) serve() {
	for {
		b, ok, err := h.c.PollRecv(h)
		if err != nil {
			h.c.Close() // io.EOF or a failure: the replies written so far still go out
			return
		}
		if !ok {
			return
		}
		if err := h.answer(b); err != nil {
			h.c.Close()
			return
		}
	}
}

// answer writes the reply of every whole request in b, keeping a partial
// one for the next receive.
func (h *echoConn) answer(b []byte) error {
	if h.n > 0 {
		k := copy(h.part[h.n:], b)
		h.n += k
		b = b[k:]
		if h.n < Size {
			return nil
		}
		h.n = 0
		if _, err := h.c.Write(h.part[:]); err != nil {
			return err
		}
	}
	for len(b) >= Size {
		if _, err := h.c.Write(b[:Size]); err != nil {
			return err
		}
		b = b[Size:]
	}
	if len(b) > 0 {
		if h.part == nil {
			h.part = new([Size]byte)
		}
		h.n = copy(h.part[:], b)
	}
	return nil
}
