package web

import (
	"errors"
	"io"
	"iter"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/netio"
)

// Errors of a ResponseWriter.
var (
	// ErrDone is returned by a write to a response that is finished.
	ErrDone = errors.New("web: response already finished")
	// ErrBodyNotAllowed is returned by a write of body bytes to a
	// response that has none (HEAD, 1xx, 204, 304). As with net/http, the
	// write is otherwise harmless.
	ErrBodyNotAllowed = errors.New("web: request method or response status code does not allow body")
	// ErrContentLength is returned by a write past the Content-Length the
	// handler set.
	ErrContentLength = errors.New("web: wrote more than the declared Content-Length")
	// ErrHijacked is returned by a write to a response whose connection was
	// taken over by Hijack.
	ErrHijacked = errors.New("web: connection has been hijacked")
	// ErrNotFirst is returned by Hijack when responses to earlier requests
	// of the connection are still unfinished.
	ErrNotFirst = errors.New("web: Hijack while earlier responses are unfinished")
	// ErrNoConn was returned by Hijack on a request served without a
	// connection.
	//
	// Deprecated: every request has its connection (package webtest
	// serves over a loopback one), so Hijack no longer returns it.
	ErrNoConn = errors.New("web: Hijack without a connection")
)

// Header is a list of response header fields. Names are kept as given and
// compared without regard to case; the zero value is empty and ready.
type Header struct {
	kv []headerField
}

type headerField struct{ name, value string }

// Set replaces the fields called name with one of value.
func (h *Header) Set(name, value string) {
	for i := range h.kv {
		if equalFold(h.kv[i].name, name) {
			h.kv[i].value = value
			h.delFrom(name, i+1)
			return
		}
	}
	h.kv = append(h.kv, headerField{name, value})
}

// Add adds a field, keeping those already called name.
func (h *Header) Add(name, value string) { h.kv = append(h.kv, headerField{name, value}) }

// Get returns the value of the first field called name, or "".
func (h *Header) Get(name string) string {
	for _, f := range h.kv {
		if equalFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// Has reports whether a field is called name.
func (h *Header) Has(name string) bool {
	for _, f := range h.kv {
		if equalFold(f.name, name) {
			return true
		}
	}
	return false
}

// Del removes the fields called name.
func (h *Header) Del(name string) { h.delFrom(name, 0) }

func (h *Header) delFrom(name string, i int) {
	kv := h.kv[:i]
	for _, f := range h.kv[i:] {
		if !equalFold(f.name, name) {
			kv = append(kv, f)
		}
	}
	clear(h.kv[len(kv):])
	h.kv = kv
}

// All yields every field, in order.
func (h *Header) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range h.kv {
			if !yield(f.name, f.value) {
				return
			}
		}
	}
}

// Len returns the number of fields.
func (h *Header) Len() int { return len(h.kv) }

func (h *Header) reset() {
	clear(h.kv)
	h.kv = h.kv[:0]
}

// ResponseWriter writes the response to one request. It lives on the
// connection's loop: call its methods there (from the handler, or later
// from a callback, a timer or a task of that loop).
//
// The response finishes when the handler returns, unless the handler
// called Later: then it finishes when End is called. Until then the
// handler may keep w and the Request and answer from anywhere on the loop.
// After the response is finished, neither may be used.
//
// The head (status line and header) leaves with the first bytes of the
// body that do not fit the response's buffer, at Flush, or at the end. A
// body that is complete by then gets a Content-Length; a longer one goes
// chunked (or, to an HTTP/1.0 client, until the connection closes), unless
// the handler set Content-Length itself.
type ResponseWriter struct {
	r        *Request
	c        *conn
	hdr      Header
	status   int
	body     []byte // body bytes not sent yet
	out      []byte // bytes of this response waiting for the responses before it
	declared int64  // the Content-Length the handler set, or -1
	sent     int64  // body bytes sent after the head
	headSent bool
	chunked  bool
	done     bool
	later    bool
	guarded  bool // Later made the panic binding (laterGuard)
	hijacked bool
	close    bool // the connection closes after this response
}

// chunkAfter is how much of a body is kept before the head leaves: a
// response up to this size goes out in one piece with a Content-Length.
const chunkAfter = 4 << 10

func (w *ResponseWriter) reuse(old *ResponseWriter, r *Request) {
	old.hdr.reset()
	*w = ResponseWriter{r: r, c: r.c, hdr: old.hdr, body: old.body[:0], out: old.out[:0], declared: -1}
}

// Header returns the response's header fields, to set before the head
// leaves (WriteHeader, or the first bytes of the body).
func (w *ResponseWriter) Header() *Header { return &w.hdr }

// WriteHeader sets the response's status code (200 if it is never
// called). Only the first call counts; the head itself leaves with the
// body, as described on the type. Codes outside 100-999 panic, as in
// net/http.
func (w *ResponseWriter) WriteHeader(code int) {
	w.mustLoop("WriteHeader")
	if code < 100 || code > 999 {
		panic("web: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.status == 0 && !w.done {
		w.status = code
	}
}

// Status returns the status code set so far (0 before WriteHeader).
func (w *ResponseWriter) Status() int { return w.status }

// Write adds p to the body. It never blocks: the bytes are copied.
func (w *ResponseWriter) Write(p []byte) (int, error) { return w.writeBody(p) }

// WriteString is Write of a string.
func (w *ResponseWriter) WriteString(s string) (int, error) {
	return w.writeBody(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
}

func (w *ResponseWriter) writeBody(p []byte) (int, error) {
	w.mustLoop("Write")
	if err := w.writable(); err != nil {
		return 0, err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, ErrBodyNotAllowed
	}
	if w.declared < 0 && !w.headSent && w.hdr.Has("Content-Length") {
		w.declared = parseDeclared(w.hdr.Get("Content-Length"))
	}
	if w.declared >= 0 && w.sent+int64(len(w.body))+int64(len(p)) > w.declared {
		return 0, ErrContentLength
	}
	if w.r.method == "HEAD" {
		if !w.headSent {
			w.sent += int64(len(p)) // counted for the Content-Length of the head
		}
		return len(p), nil
	}
	if w.headSent {
		w.emitBody(p)
		return len(p), nil
	}
	w.body = append(w.body, p...)
	if len(w.body) > chunkAfter {
		w.sendHead(false)
	}
	return len(p), nil
}

func (w *ResponseWriter) writable() error {
	switch {
	case w.hijacked:
		return ErrHijacked
	case w.done:
		return ErrDone
	}
	return nil
}

// emitBody sends body bytes after the head: as a chunk, or as they are.
func (w *ResponseWriter) emitBody(p []byte) {
	w.sent += int64(len(p))
	if w.chunked {
		var b [20]byte
		h := strconv.AppendInt(b[:0], int64(len(p)), 16)
		h = append(h, '\r', '\n')
		w.emit(h)
		w.emit(p)
		w.emitString("\r\n")
		return
	}
	w.emit(p)
}

// Flush sends the head and the body written so far without waiting for
// the end (chunked, unless Content-Length was set). The bytes reach the
// kernel at the end of the loop's batch, like every write; a handler that
// writes a lot goes at its client's pace by awaiting the connection's
// Flush future (Request.Conn().Flush()) between writes.
func (w *ResponseWriter) Flush() error {
	w.mustLoop("Flush")
	if err := w.writable(); err != nil {
		return err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.headSent {
		w.sendHead(false)
	}
	return nil
}

// Later tells the server that the response does not finish when the
// handler returns: the handler keeps w and the Request, and finishes the
// response with End, from a callback, a timer or a task on the loop.
// Responses to later requests on the connection wait for it, in order.
//
// The callbacks, timers and tasks the handler registers after Later carry
// the response with them (through whatever they register in turn): if one
// of them panics before the response is finished, the panic is reported
// as any other on the loop (to its future, or to the executor's panic
// handler) and the response ends. It is a 500 Internal Server Error when
// nothing of it was written yet; either way the connection closes after
// it, so that a client never takes part of a response for all of it.
func (w *ResponseWriter) Later() {
	w.mustLoop("Later")
	if w.guarded {
		return
	}
	w.later, w.guarded = true, true
	if ls := w.c.ls; ls.handling == w {
		ls.later = hooks.ObservePanics(w.c.ex, (*laterGuard)(w))
	}
}

// laterOwn is Later for web's own handlers whose continuations are web's
// code and never panic (the file server: what user code it calls runs in
// fileio jobs, which recover): the response finishes later, without the
// panic binding, which costs an allocation. A Later of the handler's
// after it still makes the binding for its own continuations.
func (w *ResponseWriter) laterOwn() { w.later = true }

// laterGuard is a response that finishes later, as the continuations that
// are to finish it carry it (hooks.ObservePanics, see Later): a
// hooks.PanicObserver.
type laterGuard ResponseWriter

// ObservePanic ends the response after a panic in one of those
// continuations: with a 500 if nothing of it was written, else by closing
// the connection at once; a finished response is left alone.
func (g *laterGuard) ObservePanic(any) {
	w := (*ResponseWriter)(g)
	if w.done || w.hijacked || w.c.closed || w.c.hijacked {
		return
	}
	if w.headSent || len(w.body) > 0 {
		w.c.close()
		return
	}
	w.hdr.reset()
	w.status, w.declared, w.close = 0, -1, true
	Error(w, "500 Internal Server Error", http.StatusInternalServerError)
	w.End()
}

// End finishes the response: what is left of the head and body leaves,
// and the responses to the requests after it may follow. End on a
// finished response does nothing. A handler that did not call Later does
// not need End: returning ends the response.
func (w *ResponseWriter) End() {
	w.mustLoop("End")
	if w.done || w.hijacked {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.c.streaming == w.r {
		// The handler is done before its body: what is left of it cannot
		// be told from the next request without reading it; close.
		w.close = true
		w.c.streaming = nil
		w.r.pipe.fail(io.ErrUnexpectedEOF)
	}
	if !w.headSent {
		w.sendHead(true)
	} else {
		if len(w.body) > 0 {
			b := w.body
			w.body = w.body[:0]
			w.emitBody(b)
		}
		if w.chunked {
			w.emitString("0\r\n\r\n")
		} else if w.declared >= 0 && w.sent < w.declared {
			w.close = true // the client cannot know the body ended
		}
	}
	w.done = true
	w.c.finished(w.r)
}

// mustLoop panics when the caller does not hold the response's loop: a
// ResponseWriter is the loop's, and a write from another goroutine would
// race with the server instead of failing.
func (w *ResponseWriter) mustLoop(op string) {
	if !w.c.ex.OnLoop() {
		panic("web: ResponseWriter." + op + " called from a goroutine that does not hold the connection's loop; use Executor().Submit")
	}
}

// Done reports whether the response is finished.
func (w *ResponseWriter) Done() bool { return w.done }

// Executor returns the executor whose loop serves the response.
func (w *ResponseWriter) Executor() *executor.Executor { return w.c.ex }

// Hijack takes the connection over, for a protocol that follows an
// upgrade (WebSocket): the server stops reading from it and forgets it,
// and the caller owns it from then on (it reads, writes and closes it).
// buffered holds the bytes the server had received past the request: the
// start of the new protocol's input, a view of the receive buffer valid
// until the next receive on c.
//
// The responses to the requests before this one have all been written by
// then: the server dispatches a request that asks for an upgrade
// (Connection: upgrade) only once they are, and for other requests Hijack
// fails with ErrNotFirst while they are not. If the handler set a status
// (101, typically) and header fields, the head leaves first, without a
// body; otherwise nothing is written for this request. After Hijack, w
// writes nothing, the Request's strings stay as they are (as always) but
// its Body and buffered are views of c's receive buffer, valid until the
// next receive on c, and the server's Shutdown and Close no longer touch
// c.
func (w *ResponseWriter) Hijack() (c *netio.Conn, buffered []byte, err error) {
	w.mustLoop("Hijack")
	if err := w.writable(); err != nil {
		return nil, nil, err
	}
	return w.c.hijack(w)
}

// parseDeclared reads a Content-Length the handler set, or -1.
func parseDeclared(s string) int64 {
	n, ok := parseLength(trimOWS(s))
	if !ok {
		return -1
	}
	return n
}

// bodyAllowed reports whether a response with status code may have a
// body.
func bodyAllowed(code int) bool {
	return code >= 200 && code != 204 && code != 304
}

func (w *ResponseWriter) emit(p []byte) {
	if w.c.head() == w.r {
		w.c.write(p)
		return
	}
	w.out = append(w.out, p...)
}

func (w *ResponseWriter) emitString(s string) {
	if w.c.head() == w.r {
		w.c.writeString(s)
		return
	}
	w.out = append(w.out, s...)
}

// sendHead sends the status line and header fields, then the body
// buffered so far; final says the body is complete, so it gets a
// Content-Length.
func (w *ResponseWriter) sendHead(final bool) {
	w.headSent = true
	c := w.c
	r := w.r
	h := c.ls.hbuf[:0]
	h = append(h, statusLine(w.status)...)
	allowed := bodyAllowed(w.status)
	isHead := r.method == "HEAD"
	if w.declared < 0 && w.hdr.Has("Content-Length") {
		w.declared = parseDeclared(w.hdr.Get("Content-Length"))
	}
	if v := w.hdr.Get("Connection"); v != "" && containsToken(v, "close") {
		w.close = true
	}
	if r.close || c.srv.draining.Load() && c.reqs[len(c.reqs)-1] == r {
		w.close = true
	}
	hasTE := w.hdr.Has("Transfer-Encoding")
	for _, f := range w.hdr.kv {
		if !allowed && (equalFold(f.name, "Content-Length") || equalFold(f.name, "Transfer-Encoding")) && w.status != 304 {
			continue
		}
		if equalFold(f.name, "Connection") && w.close {
			continue
		}
		h = appendField(h, f.name, f.value)
	}
	if !w.hdr.Has("Date") {
		h = append(h, c.dateLine()...)
	}
	if allowed && !w.hdr.Has("Content-Type") && !w.hdr.Has("Content-Encoding") && len(w.body) > 0 {
		h = appendField(h, "Content-Type", http.DetectContentType(w.body))
	}
	switch {
	case !allowed || hasTE:
		if hasTE {
			w.close = w.close || !r.ProtoAtLeast(1, 1)
		}
	case w.declared >= 0:
	case final && (!isHead || w.sent > 0 || len(w.body) > 0):
		n := int64(len(w.body))
		if isHead {
			n = w.sent
		}
		h = append(h, "Content-Length: "...)
		h = strconv.AppendInt(h, n, 10)
		h = append(h, '\r', '\n')
	case final: // HEAD without a body written: no length known
	case isHead:
	case r.ProtoAtLeast(1, 1):
		w.chunked = true
		h = append(h, "Transfer-Encoding: chunked\r\n"...)
	default: // HTTP/1.0: the body ends with the connection
		w.close = true
	}
	if w.close {
		h = append(h, "Connection: close\r\n"...)
	} else if !r.ProtoAtLeast(1, 1) {
		h = append(h, "Connection: keep-alive\r\n"...)
	}
	h = append(h, '\r', '\n')
	c.ls.hbuf = h
	w.emit(h)
	if isHead {
		w.sent = 0
		w.body = w.body[:0]
		return
	}
	if len(w.body) > 0 && allowed {
		b := w.body
		w.body = w.body[:0]
		if final && !w.chunked {
			w.sent += int64(len(b))
			w.emit(b)
		} else {
			w.emitBody(b)
		}
	}
	if w.declared >= 0 && final && w.sent < w.declared {
		w.close = true
	}
}

// appendField appends "name: value\r\n", with CR and LF in the value
// turned to spaces (as net/http does) so that a value cannot end the head.
func appendField(h []byte, name, value string) []byte {
	h = append(h, name...)
	h = append(h, ':', ' ')
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		h = append(h, c)
	}
	return append(h, '\r', '\n')
}

// containsToken reports whether the comma-separated list v holds tok.
func containsToken(v, tok string) bool {
	for v != "" {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		if equalFold(trimOWS(v[:i]), tok) {
			return true
		}
		v = v[min(i+1, len(v)):]
	}
	return false
}

var statusLines = func() (t [1000]string) {
	for code := 100; code < 1000; code++ {
		t[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n"
	}
	return t
}()

func statusLine(code int) string { return statusLines[code] }
