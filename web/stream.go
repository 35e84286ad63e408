package web

// Request bodies streamed to handlers that take them as they arrive.
//
// A request with a Content-Length body whose handler asks for it
// (BodyStreamer: a mounted http.Handler, a Mux route to one, any handler
// of the program's) is dispatched as soon as its head is parsed; its body
// goes to the handler's goroutine as it arrives.
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
	"errors"
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

// errReadOnLoop fails a read of a streamed body on the loop, which would
// wait for the loop itself.
var errReadOnLoop = errors.New("web: a streamed request body read on the connection's loop; read it from another goroutine")

// Read is the handler's Body.Read.
func (p *bodyPipe) Read(b []byte) (int, error) {
	if p.ex.OnLoop() {
		return 0, errReadOnLoop
	}
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

// BodyStreamer is a Handler that takes the bodies of some requests as
// they arrive rather than whole. The server asks it, on the loop, once the
// head of a request with a Content-Length body is parsed and the body has
// not all come with it; if StreamBody reports true, ServeHTTP is called at
// once, and the handler reads the body from Request.BodyStream on a
// goroutine of its own (it calls Later, and ends the response on the loop
// once it is done: Executor().Submit). The loop receives the next piece of
// the body once the goroutine has read the last, so a fast client is held
// back by TCP and the server holds one piece at a time. A body that came
// whole with its head, a chunked one (read whole first, as for every
// handler) and one StreamBody declines reach ServeHTTP whole: BodyStream
// is nil and Body has it. MaxBodyBytes bounds streamed bodies too. A
// handler that answers before it has read all of a streamed body gets its
// connection closed after the response.
//
// A handler made by FromHTTP (Mount) streams every such body. Mux is a
// BodyStreamer that asks the handler of the route that matches and keeps
// the match for ServeHTTP, so that the route is found once; a middleware
// that wraps a handler passes the question on in the same way. The server
// knows nothing else of its Handler.
type BodyStreamer interface {
	Handler
	// StreamBody reports whether ServeHTTP takes r's body as a stream. r's
	// head is parsed; its Body is not there yet. It is called at most once
	// per request, on the loop, and should be quick.
	StreamBody(r *Request) bool
}

// StreamBody asks the handler of the route that matches r, and keeps the
// match for ServeHTTP.
func (m *Mux) StreamBody(r *Request) bool {
	p := r.Path()
	if r.method == "CONNECT" || p == "" || !isClean(p) {
		return false // ServeHTTP redirects or matches otherwise
	}
	pat, slash := m.find(stripPort(r.Host()), p, r.path.off, r)
	r.router, r.route, r.slash = m, pat, slash
	if pat == nil || slash {
		return false
	}
	bs, ok := pat.h.(BodyStreamer)
	return ok && bs.StreamBody(r)
}

// BodyStream returns the body of a request whose handler takes it as a
// stream (BodyStreamer), to be read on a goroutine other than the loop's
// (a read on the loop fails at once: it would wait for the loop itself);
// Read returns io.EOF at its end, io.ErrUnexpectedEOF if the connection
// ended first, executor.ErrClosed once the loop has closed. For any other
// request it returns nil: read Body. Close does nothing.
func (r *Request) BodyStream() io.ReadCloser {
	if r.pipe == nil {
		return nil
	}
	return r.pipe
}

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
