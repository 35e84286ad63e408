package web

// Serving an http.Handler from a route.
//
// Invariants:
//   - the handler runs on a goroutine of its own; everything it writes
//     reaches the loop through Submit, in order, and the goroutine waits
//     for the loop to take each piece before it writes more, so a handler
//     that writes a lot holds at most one piece plus its buffer;
//   - the Request's bytes stay put until End, which runs only after the
//     handler has returned, so the goroutine may read the body in place.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
)

// Mount registers h, an http.Handler, for pattern. h runs off the loop, on
// a goroutine of its own, with a *http.Request made from the request (its
// path values set), and its response goes back to the loop into the
// connection's order of responses. A Content-Length body is streamed to
// it as it arrives (h runs as soon as the head is there, and the loop
// receives the next piece once h has read the last: TCP holds a fast
// client back); a chunked body is read whole first, as for loop handlers.
// A handler that answers without reading all of a streamed body gets its
// connection closed after the response. A service moves from net/http route by route: the routes
// that need the standard library (or code written for it) are mounted,
// and the others are served on the loop.
func (m *Mux) Mount(pattern string, h http.Handler) { m.Handle(pattern, FromHTTP(h)) }

// FromHTTP returns a Handler that serves with h, as Mount describes.
func FromHTTP(h http.Handler) Handler {
	if h == nil {
		panic("web: FromHTTP with nil http.Handler")
	}
	return stdHandler{h}
}

type stdHandler struct{ h http.Handler }

// StreamBody reports true: h reads a Content-Length body as it arrives.
func (stdHandler) StreamBody(*Request) bool { return true }

// stdChunk bounds how much a mounted handler's response holds before it
// goes to the loop.
const stdChunk = 32 << 10

func (s stdHandler) ServeHTTP(w *ResponseWriter, r *Request) {
	req, err := stdRequest(r)
	if err != nil {
		Error(w, "400 Bad Request", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	req = req.WithContext(ctx)
	w.Later()
	rw := &stdWriter{w: w, header: make(http.Header), ack: make(chan bool, 1), cancel: cancel}
	go rw.run(s.h, req)
}

// stdRequest makes the *http.Request of r. r's strings never change, so
// it shares them.
func stdRequest(r *Request) (*http.Request, error) {
	target := r.Target()
	var u *url.URL
	var err error
	if r.method == "CONNECT" && !strings.HasPrefix(target, "/") {
		u = &url.URL{Host: target}
	} else if u, err = url.ParseRequestURI(target); err != nil {
		return nil, err
	}
	h := make(http.Header, len(r.fields))
	for _, f := range r.fields {
		k := http.CanonicalHeaderKey(r.str(f.name))
		if k == "Host" {
			continue
		}
		h[k] = append(h[k], r.str(f.value))
	}
	req := &http.Request{
		Method:        r.method,
		URL:           u,
		Proto:         r.Proto(),
		ProtoMajor:    int(r.major),
		ProtoMinor:    int(r.minor),
		Header:        h,
		Host:          r.Host(),
		ContentLength: int64(len(r.body)),
		Close:         r.close,
		RequestURI:    target,
		Pattern:       r.pattern,
	}
	if a := r.RemoteAddr(); a != nil {
		req.RemoteAddr = a.String()
	}
	if r.pipe != nil {
		req.Body = r.pipe
		req.ContentLength = r.length
	} else if len(r.body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(r.body))
	} else {
		req.Body = http.NoBody
	}
	if r.chunked {
		req.TransferEncoding = []string{"chunked"}
		if len(r.trailer) > 0 {
			req.Trailer = make(http.Header)
			for _, f := range r.trailer {
				k := http.CanonicalHeaderKey(r.tail[f.name.off:f.name.end])
				req.Trailer[k] = append(req.Trailer[k], r.tail[f.value.off:f.value.end])
			}
		}
	}
	for _, v := range r.values {
		if v.name != "" {
			req.SetPathValue(v.name, r.PathValue(v.name))
		}
	}
	return req, nil
}

// stdWriter is the http.ResponseWriter of a mounted handler, on its
// goroutine.
type stdWriter struct {
	w       *ResponseWriter // loop side: touched only in Submit'ed code
	header  http.Header
	code    int
	buf     []byte
	sent    bool // the head went to the loop
	failed  bool // the loop is gone
	aborted bool // the handler panicked after the head was sent
	ack     chan bool
	cancel  context.CancelFunc
}

func (s *stdWriter) Header() http.Header { return s.header }

func (s *stdWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if s.code == 0 {
		s.code = code
	}
}

func (s *stdWriter) Write(p []byte) (int, error) {
	if s.failed {
		return 0, http.ErrHandlerTimeout
	}
	if s.code == 0 {
		s.code = http.StatusOK
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), stdChunk-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf) >= stdChunk {
			if !s.send(false, false) {
				return n - len(p), errLoopGone
			}
		}
	}
	return n, nil
}

var errLoopGone = fmt.Errorf("web: the connection's loop is gone")

// Flush sends what was written so far (http.Flusher).
func (s *stdWriter) Flush() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	s.send(true, false)
}

// send hands the head (the first time) and the buffered bytes to the
// loop, and waits for it to take them; end finishes the response.
func (s *stdWriter) send(flush, end bool) bool {
	if s.failed {
		return false
	}
	aborted := s.aborted
	var hdr http.Header
	if !s.sent {
		hdr = s.header.Clone()
		s.sent = true
	}
	code, body := s.code, s.buf
	w := s.w
	err := w.c.ex.Submit(func() {
		if hdr != nil {
			h := w.Header()
			for k, vs := range hdr {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			if code == 0 {
				code = http.StatusOK
			}
			w.WriteHeader(code)
		}
		if len(body) > 0 {
			w.Write(body)
		}
		switch {
		case end && aborted:
			w.close = true
			w.End()
		case end:
			w.End()
		case flush:
			w.Flush()
		}
		s.ack <- !w.c.closed
	})
	if err != nil {
		s.failed = true
		return false
	}
	var ok bool
	select {
	case ok = <-s.ack:
	case <-w.c.ex.Done(): // closed: the queued call may never run
	}
	s.buf = s.buf[:0]
	if !ok {
		s.failed = true
	}
	return ok
}

// run serves req with h, then ends the response; a panic is logged and,
// if nothing was sent yet, answered with 500.
func (s *stdWriter) run(h http.Handler, req *http.Request) {
	defer s.cancel()
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				slog.Error("web: panic in mounted http.Handler", "panic", v, "stack", string(debug.Stack()))
			}
			if !s.sent {
				s.header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
				s.code, s.buf = http.StatusInternalServerError, append(s.buf[:0], "500 Internal Server Error\n"...)
			} else {
				s.aborted = true
			}
		}
		if s.code == 0 {
			s.code = http.StatusOK
		}
		s.send(false, true)
	}()
	h.ServeHTTP(s, req)
}
