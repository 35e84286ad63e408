package web

import (
	"iter"
	"net"
	"net/url"
	"strings"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// span is a part of a request's head: head[off:end].
type span struct{ off, end int32 }

// field is one header line of a request: its name and value.
type field struct{ name, value span }

// pathValue is the value a wildcard of the matched pattern took.
type pathValue struct {
	name  string
	v     span
	set   string // a value given by SetPathValue
	isSet bool
}

// Request is an HTTP request as the server parsed it, valid until its
// response is finished (the handler returns, or End after Later).
//
// Its strings (Method, Target, Path, RawQuery, Host, header and trailer
// values, PathValue, Query's values) are ordinary Go strings: they never
// change, so a handler may keep them, use them as map keys or send them
// to another goroutine. They are parts of one copy of the request's head
// made when it was parsed (a kept string keeps that copy, a few hundred
// bytes for a browser's request, in memory, as any substring does;
// strings.Clone keeps only itself). Body is the exception: a []byte view
// of the bytes received, valid until the response is finished; a handler
// that keeps the body longer copies it (bytes.Clone). A Request belongs
// to its connection's loop; read it there.
type Request struct {
	head        string // the request line and header fields: every span is of it
	tail        string // a chunked body's trailer section: the trailer's spans are of it
	buf         []byte // the bytes received the request was parsed from: its body is in them
	method      string
	target      span
	path        span
	query       span // without the '?'; off == end when there is none
	major       uint8
	minor       uint8
	hasQ        bool
	fields      []field
	host        span
	hasHost     bool
	length      int64 // Content-Length; -1 with chunked
	chunked     bool
	close       bool // the connection closes after the response
	expect      bool // Expect: 100-continue
	upgrade     bool // Connection: upgrade
	keepAlive10 bool // Connection: keep-alive
	body        []byte
	trailer     []field // spans of tail
	values      []pathValue
	pattern     string
	pipe        *bodyPipe // a body streamed to its handler (BodyStreamer)
	asked       bool      // the server asked the handler whether it streams the body
	router      *Mux      // the Mux whose match route is (StreamBody), for its ServeHTTP
	route       *pattern
	slash       bool // the route is a redirect to the path with a slash

	c *conn
	w ResponseWriter
}

// str returns the part s of the head.
func (r *Request) str(s span) string { return r.head[s.off:s.end] }

// Method returns the request's method, as sent ("GET", "POST", ...).
func (r *Request) Method() string { return r.method }

// Target returns the request-target as sent: "/path?query", an absolute
// URL, an authority (CONNECT) or "*".
func (r *Request) Target() string { return r.str(r.target) }

// Path returns the path of the target, still escaped, without the query:
// "/a%20b" for "/a%20b?x=1". For an absolute-form target it is the URL's
// path; for "*" and CONNECT's authority it is empty.
func (r *Request) Path() string { return r.str(r.path) }

// RawQuery returns the query of the target, without the '?', still
// escaped.
func (r *Request) RawQuery() string { return r.str(r.query) }

// Query parses the target's query. It allocates; a handler on the hot path
// reads RawQuery.
func (r *Request) Query() url.Values {
	v, _ := url.ParseQuery(r.RawQuery())
	return v
}

// Proto returns the request's version, "HTTP/1.1" or "HTTP/1.0".
func (r *Request) Proto() string {
	if r.major == 1 && r.minor == 0 {
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

// ProtoAtLeast reports whether the request's version is at least
// major.minor.
func (r *Request) ProtoAtLeast(major, minor int) bool {
	return int(r.major) > major || int(r.major) == major && int(r.minor) >= minor
}

// Host returns the Host header (or the authority of an absolute-form
// target, which takes its place).
func (r *Request) Host() string { return r.str(r.host) }

// Header returns the value of the first header field called name (case
// insensitive), or "".
func (r *Request) Header(name string) string {
	for _, f := range r.fields {
		if equalFold(r.str(f.name), name) {
			return r.str(f.value)
		}
	}
	return ""
}

// HeaderValues returns the values of every header field called name, in
// order. It allocates the slice.
func (r *Request) HeaderValues(name string) []string {
	var vs []string
	for _, f := range r.fields {
		if equalFold(r.str(f.name), name) {
			vs = append(vs, r.str(f.value))
		}
	}
	return vs
}

// Headers yields every header field of the request, name and value, in
// the order received; names are as sent (not canonicalised).
func (r *Request) Headers() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range r.fields {
			if !yield(r.str(f.name), r.str(f.value)) {
				return
			}
		}
	}
}

// Trailer returns the value of the first trailer field called name of a
// chunked body, or "".
func (r *Request) Trailer(name string) string {
	for _, f := range r.trailer {
		if equalFold(r.tail[f.name.off:f.name.end], name) {
			return r.tail[f.value.off:f.value.end]
		}
	}
	return ""
}

// ContentLength returns the length of the body: the Content-Length sent,
// or, for a chunked body, its decoded length.
func (r *Request) ContentLength() int64 {
	if r.pipe != nil {
		return r.length
	}
	return int64(len(r.body))
}

// Chunked reports whether the body came with Transfer-Encoding: chunked.
func (r *Request) Chunked() bool { return r.chunked }

// Body returns the whole body. The server reads it before calling the
// handler (up to Server.MaxBodyBytes). It is a view of the bytes
// received, not a copy, valid until the response is finished: the memory
// is reused for later requests, so a handler that keeps the body (or
// a part of it) longer copies it, and string(r.Body()) is a copy. (A
// Content-Length body for a mounted http.Handler is streamed to it
// instead, and Body is nil.)
func (r *Request) Body() []byte { return r.body }

// Close reports whether the connection closes once the response is
// written: the client asked for it, or the request was HTTP/1.0 without
// keep-alive.
func (r *Request) Close() bool { return r.close }

// PathValue returns the value the wildcard called name took in the
// pattern that matched the request, unescaped, or "" if there is no such
// wildcard. An escaped value is unescaped into a new string; others are
// parts of the request's head, as Path is.
func (r *Request) PathValue(name string) string {
	for _, v := range r.values {
		if v.name == name {
			if v.isSet {
				return v.set
			}
			s := r.str(v.v)
			if strings.IndexByte(s, '%') < 0 {
				return s
			}
			if u, err := url.PathUnescape(s); err == nil {
				return u
			}
			return s
		}
	}
	return ""
}

// SetPathValue sets the value of wildcard name, as net/http's
// Request.SetPathValue does: PathValue(name) then returns value.
func (r *Request) SetPathValue(name, value string) {
	for i := range r.values {
		if r.values[i].name == name {
			r.values[i].set, r.values[i].isSet = value, true
			return
		}
	}
	r.values = append(r.values, pathValue{name: name, set: value, isSet: true})
}

// Pattern returns the pattern of the route that matched the request, as
// registered ("GET /kv/{key}"), or "".
func (r *Request) Pattern() string { return r.pattern }

// Conn returns the connection the request came on.
func (r *Request) Conn() *netio.Conn {
	if r.c == nil {
		return nil
	}
	return r.c.nc
}

// RemoteAddr returns the address of the client.
func (r *Request) RemoteAddr() net.Addr {
	if r.c == nil {
		return nil
	}
	return r.c.nc.RemoteAddr()
}

// Executor returns the executor whose loop serves the request: the one to
// set timers on and to come back to (Submit) from other goroutines.
func (r *Request) Executor() *executor.Executor {
	if r.c == nil {
		return nil
	}
	return r.c.ex
}

// reset readies r for the next request of its connection, keeping its
// slices' memory.
func (r *Request) reset() {
	c, fields, values, trailer := r.c, r.fields[:0], r.values[:0], r.trailer[:0]
	w := r.w
	*r = Request{c: c, fields: fields, values: values, trailer: trailer}
	r.w.reuse(&w, r)
}

// release drops what a finished request refers to, before it goes back to
// the loop's pool: a pooled request keeps no one's strings or bytes.
func (r *Request) release() {
	r.head, r.tail, r.buf, r.body, r.pattern = "", "", nil, nil, ""
	clear(r.values[:cap(r.values)])
}

// equalFold reports whether a and b are equal under ASCII case folding.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
