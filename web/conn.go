package web

// A connection's state on its loop.
//
// Invariants:
//   - everything here is read and written only on the connection's loop;
//   - in is the input being parsed: the slice the last receive returned,
//     or pend when a request spans receives; in[off:] is not parsed yet;
//   - reqs are the requests dispatched and not yet finished, in order;
//     reqs[0] writes to the connection, the others into their own out
//     buffer, sent when they reach the front;
//   - a request whose method is not safe (see safeMethod) is dispatched
//     only while reqs is empty, and nothing is dispatched while it is in
//     reqs: a request that must wait is held, parsed and not dispatched,
//     and nothing after it is parsed until it is; held is dispatched once
//     reqs is empty, and dropped once closeAfter is set (the connection
//     closes without answering it);
//   - a request's strings are parts of its own copy of its head, never
//     of in or pend; its body is a view of in;
//   - the connection receives only while reqs is empty, so the bytes a
//     request's body is in stay put until its response is finished; a
//     request split over receives is copied into pend, never one that a
//     handler holds; a chunked body is decoded in place as it arrives, so
//     pend holds its data and what is not parsed yet, not its framing;
//   - once closed or hijacked, the connection is no longer the server's:
//     nothing is parsed or written.

import (
	"io"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/netio"
)

type conn struct {
	srv *Server
	ls  *loopState
	ex  *executor.Executor
	nc  *netio.Conn

	in      []byte
	off     int
	pend    []byte
	inPend  bool
	p       parser
	cur     *Request // the request being parsed
	reqs    []*Request
	held    *Request // parsed, waiting for reqs to empty (see mayStart)
	onReady func()

	serving    bool // serve is on the stack
	closeAfter bool // no request after the current ones
	closed     bool
	hijacked   bool
	sent100    bool
	lastPOST   bool
	streaming  *Request // the request whose body is being received, streamed

	upgradeWaits bool // cur is an upgrade, parsed, waiting for the responses before it
	parsing      bool // parseAll is on the stack
	dated        bool // the responses of this round of parseAll have a Date line

	deadline int64 // on ls's coarse clock; 0: none
	started  int64 // when the current request's first bytes came

	prev, next *conn // the loop's connections
}

// maxRounds bounds how many receives one connection handles before it
// lets the loop's other work run.
const maxRounds = 16

// Wake is netio's signal that input may have arrived (executor.Waker).
func (c *conn) Wake() { c.ex.Post(c.onReady) }

func (c *conn) head() *Request {
	if len(c.reqs) == 0 {
		return nil
	}
	return c.reqs[0]
}

func (c *conn) write(p []byte) {
	if c.closed || c.hijacked {
		return
	}
	c.nc.Write(p)
}

func (c *conn) writeString(s string) {
	if c.closed || c.hijacked {
		return
	}
	c.nc.WriteString(s)
}

// getReq returns a request to parse into, from the loop's pool: an idle
// connection holds none.
func (c *conn) getReq() *Request {
	r := c.ls.getReq()
	r.c = c
	r.reset()
	return r
}

// serve parses and dispatches the requests in the input, and receives
// more while no request is in flight.
func (c *conn) serve() {
	if c.serving || c.closed || c.hijacked {
		return
	}
	c.serving = true
	defer func() { c.serving = false }()
	for range maxRounds {
		if c.streaming == nil {
			c.parsing, c.dated = true, false
			ok := c.parseAll()
			c.parsing = false
			if !ok {
				return
			}
		}
		if c.streaming != nil {
			if c.streaming.pipe.waiting {
				return // pieceRead calls serve again
			}
		} else if len(c.reqs) > 0 {
			return // finished() calls serve again
		}
		if c.closeAfter && c.streaming == nil {
			c.close()
			return
		}
		if c.streaming == nil && c.cur != nil && c.p.headEnd > 0 && !c.cur.chunked && c.cur.length > 0 && !c.cur.asked && c.ls.streamer != nil {
			c.cur.asked = true
			if c.ls.streamer.StreamBody(c.cur) {
				c.startStream(c.in[c.off:])
				continue
			}
		}
		if c.srv.draining.Load() && c.streaming == nil && c.cur == nil && c.off == len(c.in) && len(c.pend) == 0 {
			c.close()
			return
		}
		// Keep the unparsed tail: the next receive overwrites the buffer.
		rest := c.in[c.off:]
		if c.inPend {
			if c.off > 0 {
				copy(c.pend, rest)
			}
			c.pend = c.pend[:len(rest)]
		} else if len(rest) > 0 {
			c.pend = appendPend(c.pend[:0], rest)
		}
		c.in, c.off, c.inPend = nil, 0, false
		c.continue100()
		data, ok, err := c.nc.PollRecv(c)
		if !ok && err == nil {
			if len(c.pend) == 0 {
				c.pend = nil // an idle connection holds no buffer
			}
			c.arm()
			return // Wake comes when input may have arrived
		}
		if err != nil {
			if r := c.streaming; r != nil {
				r.pipe.fail(io.ErrUnexpectedEOF)
				c.streaming = nil
			}
			if err == io.EOF && (c.cur != nil || len(c.pend) > 0) {
				// The input ended inside a request: as net/http, 400.
				r := c.cur
				if r == nil {
					r = c.getReq()
				}
				c.cur = nil
				c.fail(r, errMalformed)
			}
			c.close()
			return
		}
		if c.streaming != nil {
			data = c.streamData(data)
			if len(data) == 0 {
				continue
			}
		}
		if len(c.pend) == 0 {
			c.in = data
			c.started = c.ls.now
		} else {
			c.pend = appendPend(c.pend, data)
			c.in, c.inPend = c.pend, true
		}
		c.deadline = 0
	}
	c.ex.Post(c.onReady) // let the others have the loop
}

// dateLine returns the Date header line of a response. The clock is read
// once per round of parseAll, which the responses to pipelined requests
// share, and once for each response finished outside one.
func (c *conn) dateLine() []byte {
	if c.parsing && c.dated {
		return c.ls.date
	}
	c.dated = c.parsing
	return c.ls.dateLine()
}

// appendPend appends data to pend, doubling its capacity when it grows:
// append grows a large slice by a quarter, which would copy a body
// gathered from many receives several times over.
func appendPend(pend, data []byte) []byte {
	if n := len(pend) + len(data); n > cap(pend) {
		p := make([]byte, len(pend), max(n, 2*cap(pend)))
		copy(p, pend)
		pend = p
	}
	return append(pend, data...)
}

// arm sets the deadline of the wait that begins.
func (c *conn) arm() {
	s := c.srv
	var d int64
	switch {
	case c.streaming != nil || c.cur != nil && c.p.headEnd > 0:
		d = c.started + int64(s.bodyReadTimeout())
	case len(c.pend) > 0:
		d = c.started + int64(s.readHeaderTimeout())
	default:
		d = c.ls.now + int64(s.idleTimeout())
	}
	c.deadline = d
	c.ls.watch()
}

// continue100 answers Expect: 100-continue for a request whose body is
// about to be read.
func (c *conn) continue100() {
	if c.p.headEnd == 0 {
		return
	}
	c.continue100For(c.cur)
}

func (c *conn) continue100For(r *Request) {
	if r == nil || c.sent100 || !r.expect || !r.ProtoAtLeast(1, 1) {
		return
	}
	c.sent100 = true
	c.writeString("HTTP/1.1 100 Continue\r\n\r\n")
}

// parseAll dispatches every complete request of the input; it returns
// false when the connection is gone.
func (c *conn) parseAll() bool {
	if r := c.held; r != nil {
		if c.closeAfter || len(c.reqs) > 0 {
			return true // finished() calls serve again, or closes
		}
		if c.srv.draining.Load() {
			c.closeAfter = true // shutting down: no new request
			return true
		}
		c.held = nil
		if !c.start(r) {
			return !c.closed && !c.hijacked
		}
	}
	for !c.closeAfter && c.off < len(c.in) {
		if c.closed || c.hijacked {
			return false
		}
		if c.srv.draining.Load() && (c.cur == nil || c.upgradeWaits) {
			c.closeAfter = true // shutting down: no new request
			break
		}
		b := c.in[c.off:]
		if c.lastPOST && c.cur == nil {
			// Tolerance for old clients that end a POST body with CRLF.
			k := 0
			for k < len(b) && k < 4 && (b[k] == '\r' || b[k] == '\n') {
				k++
			}
			c.off += k
			b = b[k:]
			if len(b) == 0 {
				break
			}
		}
		r := c.cur
		if r == nil {
			r = c.getReq()
			c.cur = r
			c.p.reset()
			c.sent100 = false
		}
		st, n, e := c.p.parse(b, r, &c.ls.lim)
		switch st {
		case parseMore:
			// The parser may have dropped bytes it has read (the framing
			// of a chunked body): keep only what it still needs.
			c.in = c.in[:c.off+n]
			return true
		case parseBad:
			c.cur = nil
			c.off = len(c.in)
			c.fail(r, e)
			return !c.closed
		}
		if r.upgrade && len(c.reqs) > 0 {
			// An upgrade waits for the responses before it, so that its
			// handler may Hijack; it stays parsed (c.cur, c.p) until then.
			c.upgradeWaits = true
			return true
		}
		c.cur, c.upgradeWaits = nil, false
		c.off += n
		c.lastPOST = r.method == "POST"
		if !c.mayStart(r) {
			c.held = r
			return true // finished() calls serve again
		}
		if !c.start(r) {
			break
		}
	}
	return !c.closed && !c.hijacked
}

// mayStart reports whether r, parsed, may be dispatched now: a request
// whose method is not safe waits for every earlier response to finish,
// and no request starts while one that is not safe is unfinished (RFC
// 9112 §9.3.2: only safe requests are processed in parallel). By the
// invariant, a request that is not safe in reqs is its only one.
func (c *conn) mayStart(r *Request) bool {
	n := len(c.reqs)
	return n == 0 || safeMethod(r.method) && safeMethod(c.reqs[n-1].method)
}

// safeMethod reports whether m is a safe method (RFC 9110 §9.2.1), whose
// requests may be processed in parallel with each other.
func safeMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return false
}

// start dispatches r, parsed; it returns false when no request may be
// parsed after it for now: what follows an upgrade is the new protocol's,
// not requests, until the handler has hijacked or answered.
func (c *conn) start(r *Request) bool {
	if r.close {
		c.closeAfter = true
	}
	c.dispatch(r)
	return !r.upgrade || r.w.done
}

// dispatch runs the handler of r.
func (c *conn) dispatch(r *Request) {
	c.reqs = append(c.reqs, r)
	w := &r.w
	if r.method == "OPTIONS" && r.Target() == "*" {
		// As net/http: the server answers OPTIONS * itself.
		w.Header().Set("Content-Length", "0")
		w.End()
		return
	}
	// Later binds w to the continuations the handler registers after it
	// (hooks.ObservePanics, see laterGuard); the binding ends with the
	// handler.
	outer, outerLater := c.ls.handling, c.ls.later
	c.ls.handling, c.ls.later = w, hooks.PanicWatch{}
	defer func() {
		c.ls.later.End()
		c.ls.handling, c.ls.later = outer, outerLater
		if v := recover(); v != nil {
			// As net/http: the connection closes, and the panic goes on to
			// the executor's panic handler (http.ErrAbortHandler included,
			// which aborts the response on purpose).
			c.close()
			panic(v)
		}
	}()
	c.srv.handler().ServeHTTP(w, r)
	if !w.later && !w.done && !w.hijacked {
		w.End()
	}
}

// fail answers a malformed request and closes the connection after it.
func (c *conn) fail(r *Request, e *parseError) {
	c.closeAfter = true
	r.close = true
	if r.major == 0 {
		r.major, r.minor = 1, 1
	}
	c.reqs = append(c.reqs, r)
	w := &r.w
	w.status = e.code
	w.hdr.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteString(statusText(e.code))
	w.WriteString(": ")
	w.WriteString(e.reason)
	w.End()
}

// statusText is "404 Not Found" for 404.
func statusText(code int) string { return statusLine(code)[len("HTTP/1.1 ") : len(statusLine(code))-2] }

// finished is called when r's response is finished: the responses that
// waited for it go out, in order.
func (c *conn) finished(r *Request) {
	for len(c.reqs) > 0 && c.reqs[0].w.done {
		f := c.reqs[0]
		copy(c.reqs, c.reqs[1:])
		c.reqs[len(c.reqs)-1] = nil
		c.reqs = c.reqs[:len(c.reqs)-1]
		if !f.w.later {
			f.release()
			c.ls.putReq(f)
		} else if !f.w.hijacked {
			c.ls.keepSpare(&f.w)
		}
		if f.w.close {
			c.closeAfter = true
			// Requests after one that closes the connection are not
			// answered.
			for _, x := range c.reqs {
				x.w.done = true
			}
			c.reqs = c.reqs[:0]
			c.dropHeld()
			break
		}
		if len(c.reqs) > 0 {
			if n := c.reqs[0]; len(n.w.out) > 0 {
				c.write(n.w.out)
				n.w.out = n.w.out[:0]
			}
		}
	}
	if len(c.reqs) > 0 {
		return
	}
	if c.closeAfter {
		c.close()
		return
	}
	if !c.serving && !c.closed && !c.hijacked {
		c.ex.Post(c.onReady)
	}
}

// dropHeld gives back the held request, which no handler has seen: the
// connection closes, or is hijacked, without answering it.
func (c *conn) dropHeld() {
	if r := c.held; r != nil {
		c.held = nil
		r.release()
		c.ls.putReq(r)
	}
}

// hijack hands the connection over to w's handler.
func (c *conn) hijack(w *ResponseWriter) (*netio.Conn, []byte, error) {
	if c.closed {
		return nil, nil, ErrDone
	}
	if c.head() != w.r {
		return nil, nil, ErrNotFirst
	}
	if w.status != 0 && !w.headSent {
		// The head as set, without framing of a body: a 101, usually.
		h := append(c.ls.hbuf[:0], statusLine(w.status)...)
		for _, f := range w.hdr.kv {
			h = appendField(h, f.name, f.value)
		}
		h = append(h, '\r', '\n')
		c.ls.hbuf = h
		c.write(h)
		w.headSent = true
	}
	w.hijacked = true
	c.hijacked = true
	c.reqs = c.reqs[:0]
	c.dropHeld()
	rest := c.in[c.off:]
	c.ls.remove(c)
	c.srv.connGone()
	return c.nc, rest, nil
}

// close closes the connection (what was written still leaves).
func (c *conn) close() {
	if c.closed || c.hijacked {
		return
	}
	c.closed = true
	if r := c.streaming; r != nil {
		r.pipe.fail(io.ErrUnexpectedEOF)
		c.streaming = nil
	}
	for _, r := range c.reqs {
		r.w.done = true
	}
	c.reqs = nil
	c.dropHeld()
	c.nc.Close()
	c.ls.remove(c)
	c.srv.connGone()
}
