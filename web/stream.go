package web

// Request bodies streamed to mounted http.Handlers.
//
// A request with a Content-Length body for a route served by an
// http.Handler (Mount, FromHTTP) is dispatched as soon as its head is
// parsed; its body goes to the handler's goroutine as it arrives.
//
// Invariants:
//   - the request's strings are parts of its own copy of its head, so
//     the receives that bring its body overwrite nothing it points into;
//     no loop handler holds a view of the input meanwhile (the streaming
//     request is the only one in flight);
//   - the loop receives for the body only once the goroutine has read all
//     of the previous piece (flow control: TCP holds the client back);
//   - every piece is a copy, handed over under the pipe's lock.

import (
	"io"
	"sync"

	"github.com/spindle-rt/spindle/executor"
)

// bodyPipe carries a body from the loop to a mounted handler's goroutine.
type bodyPipe struct {
	ex    *executor.Executor
	c     *conn // loop side
	ready chan struct{}

	mu    sync.Mutex
	buf   []byte
	store []byte
	err   error // io.EOF once the body has ended, or why it failed

	remain  int64 // loop side: body bytes not received yet
	waiting bool  // loop side: a piece is with the goroutine
}

func newBodyPipe(c *conn, remain int64) *bodyPipe {
	return &bodyPipe{ex: c.ex, c: c, ready: make(chan struct{}, 1), remain: remain}
}

func (p *bodyPipe) signal() {
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// push hands a copy of b to the goroutine; last says the body ends with
// it. Loop side; only when no piece is with the goroutine.
func (p *bodyPipe) push(b []byte, last bool) {
	p.mu.Lock()
	p.store = append(p.store[:0], b...)
	p.buf = p.store
	if last {
		p.err = io.EOF
	}
	p.mu.Unlock()
	p.waiting = len(b) > 0
	p.signal()
}

// fail ends the body with err. Loop side.
func (p *bodyPipe) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.buf = nil
	p.mu.Unlock()
	p.signal()
}

// Read is the handler's Body.Read.
func (p *bodyPipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.buf) > 0 {
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			empty := len(p.buf) == 0
			ended := p.err != nil
			p.mu.Unlock()
			if empty && !ended {
				// Ask the loop for the next piece.
				p.ex.Submit(p.c.pieceRead)
			}
			return n, nil
		}
		if err := p.err; err != nil {
			p.mu.Unlock()
			return 0, err
		}
		p.mu.Unlock()
		select {
		case <-p.ready:
		case <-p.ex.Done():
			return 0, executor.ErrClosed
		}
	}
}

func (p *bodyPipe) Close() error { return nil }

// streams reports whether the handler of r reads its body as a stream (a
// mounted http.Handler).
func (s *Server) streams(r *Request) bool {
	switch h := s.Handler.(type) {
	case stdHandler:
		return true
	case *Mux:
		return h.streams(r)
	}
	return false
}

// streams reports whether the route of r is a mounted http.Handler.
func (m *Mux) streams(r *Request) bool {
	p := r.Path()
	if r.method == "CONNECT" || p == "" || !isClean(p) {
		return false
	}
	pat := m.match(stripPort(r.Host()), r.method, p, r.path.off, r)
	r.values = r.values[:0] // matched again when served
	if pat == nil || !pat.exact(p) && !hasSlashSuffix(p) {
		return false
	}
	_, ok := pat.h.(stdHandler)
	return ok
}

func hasSlashSuffix(p string) bool { return p != "" && p[len(p)-1] == '/' }

// startStream dispatches c.cur, whose head is parsed and whose body is
// still arriving, to a handler that streams it. b is the input from the
// request's start.
func (c *conn) startStream(b []byte) {
	r := c.cur
	got := b[c.p.headEnd:]
	r.buf, r.body = nil, nil
	r.pipe = newBodyPipe(c, r.length-int64(len(got)))
	c.cur = nil
	c.off = len(c.in)
	c.streaming = r
	c.lastPOST = r.method == "POST"
	if r.close {
		c.closeAfter = true
	}
	c.continue100For(r)
	r.pipe.push(got, false)
	c.dispatch(r)
}

// pieceRead is the goroutine's word that it has read the last piece: the
// loop receives the next one.
func (c *conn) pieceRead() {
	r := c.streaming
	if r == nil || c.closed {
		return
	}
	r.pipe.waiting = false
	if !c.serving {
		c.serve()
	}
}

// streamData hands received bytes to the streaming request and returns
// what follows its body (the next requests).
func (c *conn) streamData(data []byte) []byte {
	r := c.streaming
	p := r.pipe
	n := int64(len(data))
	if n > p.remain {
		n = p.remain
	}
	p.remain -= n
	last := p.remain == 0
	p.push(data[:n], last)
	if last {
		c.streaming = nil
	}
	return data[n:]
}
