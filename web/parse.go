package web

// The request parser. It finds a request's head in the bytes received and
// copies it, once, into a string that every string of the Request is a
// part of (so none of them changes when the buffer is reused); the body
// stays in the buffer. It is strict
// where RFC 9112 lets a server be (obs-fold, bare CR, duplicate or
// conflicting framing headers are errors) and otherwise answers as
// net/http does, so that no byte sequence is read as one request here and
// as another by a server or proxy in front.

import (
	"bytes"
	"net/url"
	"strings"
)

// parseError is what a malformed request is answered: a status code and a
// reason for the body. A connection that sent one is closed after the
// answer.
type parseError struct {
	code   int
	reason string
}

var (
	errMalformed     = &parseError{400, "malformed HTTP request"}
	errBadVersion    = &parseError{400, "malformed HTTP version"}
	errBadMethod     = &parseError{400, "invalid method"}
	errBadTarget     = &parseError{400, "invalid request target"}
	errBadHeader     = &parseError{400, "malformed header line"}
	errObsFold       = &parseError{400, "obsolete line folding"}
	errNoHost        = &parseError{400, "missing required Host header"}
	errBadHost       = &parseError{400, "malformed Host header"}
	errManyHost      = &parseError{400, "more than one Host header"}
	errBadLength     = &parseError{400, "bad Content-Length"}
	errManyLength    = &parseError{400, "more than one Content-Length"}
	errLengthAndTE   = &parseError{400, "both Content-Length and Transfer-Encoding"}
	errTE10          = &parseError{400, "Transfer-Encoding in an HTTP/1.0 request"}
	errBadChunk      = &parseError{400, "malformed chunked encoding"}
	errUnsupportedTE = &parseError{501, "unsupported transfer encoding"}
	errVersion       = &parseError{505, "unsupported protocol version"}
	errExpect        = &parseError{417, "expectation failed"}
	errHeadTooLarge  = &parseError{431, "request header fields too large"}
	errBodyTooLarge  = &parseError{413, "request body too large"}
)

// limits are the bounds the parser enforces.
type limits struct {
	head    int   // bytes of the request line and headers, the final CRLF included
	headers int   // header fields
	body    int64 // bytes of a body (decoded, when chunked)
}

// parseState is where the parse of one request stands.
type parseState int8

const (
	parseDone parseState = iota // a whole request, head and body
	parseMore                   // more bytes are needed
	parseBad                    // a malformed request: answer and close
)

// parser parses requests; it keeps what it learnt of an incomplete
// request so that more bytes do not make it scan the head again.
type parser struct {
	scanned int // bytes of the buffer known to hold no end of head
	headEnd int // 0 until the head is parsed, then its length
}

func (p *parser) reset() { *p = parser{} }

// parse reads a request from b (which starts where the request starts)
// into r. parseDone: r is filled and n is the request's length in b;
// parseMore: b holds only part of a request (r's head is filled once
// headEnd > 0, so that Expect can be answered); parseBad: e says what
// to answer.
func (p *parser) parse(b []byte, r *Request, lim *limits) (st parseState, n int, e *parseError) {
	if p.headEnd == 0 {
		end, e := p.findHead(b, lim)
		if e != nil {
			return parseBad, 0, e
		}
		if end == 0 {
			return parseMore, 0, nil
		}
		// The one copy: every string the request hands out is a part of
		// it, and it is never written again.
		r.head = string(b[:end])
		if e := parseHead(r, lim); e != nil {
			return parseBad, 0, e
		}
		p.headEnd = end
	}
	r.buf = b
	body := b[p.headEnd:]
	switch {
	case r.chunked:
		total, used, e := scanChunked(body, r, lim)
		if e != nil {
			return parseBad, 0, e
		}
		if used == 0 {
			return parseMore, 0, nil
		}
		compactChunked(body, total)
		r.body = body[:total:total]
		return parseDone, p.headEnd + used, nil
	case r.length > 0:
		if int64(len(body)) < r.length {
			return parseMore, 0, nil
		}
		r.body = body[:r.length:r.length]
		return parseDone, p.headEnd + int(r.length), nil
	}
	r.body = nil
	return parseDone, p.headEnd, nil
}

// findHead returns the length of the head at the start of b (through the
// empty line that ends it), 0 if b does not hold all of it yet, or an
// error when it is longer than the limit.
func (p *parser) findHead(b []byte, lim *limits) (int, *parseError) {
	i := p.scanned
	for {
		j := indexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		nl := i + j
		// The line that ends at nl is empty: "\n" or "\r\n" after the
		// previous line's '\n'.
		if nl > 0 && (b[nl-1] == '\n' || nl > 1 && b[nl-1] == '\r' && b[nl-2] == '\n') {
			if nl+1 > lim.head {
				return 0, errHeadTooLarge
			}
			return nl + 1, nil
		}
		i = nl + 1
	}
	if len(b) > lim.head {
		return 0, errHeadTooLarge
	}
	// Keep the last line's start: its end may complete the head.
	if k := lastIndexByte(b, '\n'); k >= 0 {
		p.scanned = k
	}
	return 0, nil
}

// line returns the line of b that starts at i, without its "\n" or
// "\r\n", and where the next starts. A CR elsewhere in a line is left in
// it, for the checks to reject.
func line(b string, i int) (l span, next int) {
	j := strings.IndexByte(b[i:], '\n')
	end := i + j
	next = end + 1
	if end > i && b[end-1] == '\r' {
		end--
	}
	return span{int32(i), int32(end)}, next
}

// parseHead parses the request line and header fields of r.head (which
// ends with its empty line) into r.
func parseHead(r *Request, lim *limits) *parseError {
	head := r.head
	l, next := line(head, 0)
	if e := parseRequestLine(head, l, r); e != nil {
		return e
	}
	var nlen, nte, nhost int
	var hostField span
	for {
		f, nx := line(head, next)
		if f.end == f.off {
			break
		}
		next = nx
		if c := head[f.off]; c == ' ' || c == '\t' {
			return errObsFold
		}
		colon := int32(-1)
		for k := f.off; k < f.end; k++ {
			if head[k] == ':' {
				colon = k
				break
			}
		}
		if colon <= f.off {
			return errBadHeader
		}
		name := span{f.off, colon}
		for k := name.off; k < name.end; k++ {
			if !isToken(head[k]) {
				return errBadHeader
			}
		}
		v := span{colon + 1, f.end}
		for v.off < v.end && (head[v.off] == ' ' || head[v.off] == '\t') {
			v.off++
		}
		for v.end > v.off && (head[v.end-1] == ' ' || head[v.end-1] == '\t') {
			v.end--
		}
		for k := v.off; k < v.end; k++ {
			if c := head[k]; c < ' ' && c != '\t' || c == 0x7f {
				return errBadHeader
			}
		}
		if len(r.fields) >= lim.headers {
			return errHeadTooLarge
		}
		r.fields = append(r.fields, field{name, v})
		ns, vs := r.str(name), r.str(v)
		switch len(ns) {
		case 4:
			if equalFold(ns, "host") {
				nhost++
				hostField = v
				if !r.hasHost { // an absolute-form target's authority wins
					r.host = v
				}
			}
		case 6:
			if equalFold(ns, "expect") && vs != "" {
				if !equalFold(vs, "100-continue") {
					return errExpect
				}
				r.expect = true
			}
		case 10:
			if equalFold(ns, "connection") {
				connectionTokens(vs, r)
			}
		case 14:
			if equalFold(ns, "content-length") {
				nlen++
				n, ok := parseLength(vs)
				if !ok {
					return errBadLength
				}
				r.length = n
			}
		case 17:
			if equalFold(ns, "transfer-encoding") {
				nte++
				if nte > 1 || !equalFold(vs, "chunked") {
					if r.major == 1 && r.minor == 0 {
						return errTE10
					}
					return errUnsupportedTE
				}
			}
		}
	}
	if r.major != 1 {
		return errVersion
	}
	if nhost > 1 {
		return errManyHost
	}
	// HTTP/1.1 asks for a Host field even beside an absolute-form target
	// (RFC 9112 3.2), as net/http does; and the field must be valid even
	// where the target's authority takes its place.
	if nhost == 0 && r.minor >= 1 && r.method != "CONNECT" {
		return errNoHost
	}
	if !validHost(head, hostField) || r.host != hostField && !validHost(head, r.host) {
		return errBadHost
	}
	if nlen > 1 {
		return errManyLength
	}
	if nte > 0 {
		if r.minor == 0 {
			return errTE10
		}
		if nlen > 0 {
			return errLengthAndTE
		}
		r.chunked = true
		r.length = -1
	}
	if r.length > lim.body {
		return errBodyTooLarge
	}
	if r.minor == 0 {
		r.close = !r.close && !r.keepAlive10
	}
	return nil
}

// validHost reports whether the part s of head holds only bytes net/http
// accepts in a Host field.
func validHost(head string, s span) bool {
	for k := s.off; k < s.end; k++ {
		if !validHostByte[head[k]] {
			return false
		}
	}
	return true
}

// connectionTokens reads the tokens of a Connection header.
func connectionTokens(v string, r *Request) {
	for v != "" {
		var tok string
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		tok, v = trimOWS(v[:i]), v[min(i+1, len(v)):]
		switch {
		case equalFold(tok, "close"):
			r.close = true
		case equalFold(tok, "keep-alive"):
			r.keepAlive10 = true
		case equalFold(tok, "upgrade"):
			r.upgrade = true
		}
	}
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// parseLength parses a Content-Length value: decimal digits only.
func parseLength(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseRequestLine parses "METHOD SP target SP HTTP/x.y" (span l of b).
func parseRequestLine(b string, l span, r *Request) *parseError {
	s := b[l.off:l.end]
	sp1 := -1
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			sp1 = i
			break
		}
	}
	if sp1 < 0 {
		return errMalformed
	}
	sp2 := -1
	for i := sp1 + 1; i < len(s); i++ {
		if s[i] == ' ' {
			sp2 = i
			break
		}
	}
	if sp2 < 0 {
		return errMalformed
	}
	method, target, proto := s[:sp1], s[sp1+1:sp2], s[sp2+1:]
	switch {
	case proto == "HTTP/1.1":
		r.major, r.minor = 1, 1
	case proto == "HTTP/1.0":
		r.major, r.minor = 1, 0
	case len(proto) == 8 && proto[:5] == "HTTP/" && isDigit(proto[5]) && proto[6] == '.' && isDigit(proto[7]):
		r.major, r.minor = proto[5]-'0', proto[7]-'0'
	default:
		return errBadVersion
	}
	if method == "" {
		return errBadMethod
	}
	for i := 0; i < len(method); i++ {
		if !isToken(method[i]) {
			return errBadMethod
		}
	}
	r.method = internMethod(method)
	off := l.off + int32(sp1) + 1
	r.target = span{off, off + int32(len(target))}
	return parseTarget(target, off, r)
}

// parseTarget checks the request-target as url.ParseRequestURI would
// (what net/http accepts) and finds its path and query. Targets of plain
// bytes are checked here without allocating; others go through
// url.ParseRequestURI.
func parseTarget(t string, off int32, r *Request) *parseError {
	if t == "" {
		return errBadTarget
	}
	plain := t[0] == '/'
	for i := 0; i < len(t) && plain; i++ {
		plain = plainTargetByte[t[i]]
	}
	q := len(t)
	for i := 0; i < len(t); i++ {
		if t[i] == '?' {
			q = i
			break
		}
	}
	if plain {
		r.path = span{off, off + int32(q)}
		if q < len(t) {
			r.hasQ = true
			r.query = span{off + int32(q) + 1, off + int32(len(t))}
		}
		return nil
	}
	connect := r.method == "CONNECT" && t[0] != '/'
	raw := t
	if connect {
		raw = "http://" + t
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return errBadTarget
	}
	switch {
	case connect:
		r.host = span{off, off + int32(len(t))}
		r.hasHost = true
		return nil
	case t == "*":
		return nil
	case t[0] == '/':
		r.path = span{off, off + int32(q)}
	default: // absolute-form: scheme://authority/path?query
		i := indexString(t, "://")
		if i < 0 {
			// "scheme:opaque": no path the server routes on.
			break
		}
		a := i + 3
		pe := a
		for pe < q && t[pe] != '/' {
			pe++
		}
		if u.Host != "" {
			r.host = span{off + int32(a), off + int32(pe)}
			if at := lastIndexByteString(t[a:pe], '@'); at >= 0 {
				r.host.off = off + int32(a+at+1)
			}
			r.hasHost = true
		}
		r.path = span{off + int32(pe), off + int32(q)}
	}
	if q < len(t) {
		r.hasQ = true
		r.query = span{off + int32(q) + 1, off + int32(len(t))}
	}
	return nil
}

// scanChunked checks the chunked body at the start of b. used is 0 while
// b holds only part of it; once it holds all, used is the body's encoded
// length (trailer section included) and total its decoded length. The
// trailer fields go to r, as parts of a copy of the trailer section.
func scanChunked(b []byte, r *Request, lim *limits) (total int64, used int, e *parseError) {
	i := 0
	for {
		j := indexByte(b[i:], '\n')
		if j < 0 {
			if len(b)-i > maxChunkLine {
				return 0, 0, errBadChunk
			}
			return 0, 0, nil
		}
		if j > maxChunkLine || j == 0 || b[i+j-1] != '\r' {
			return 0, 0, errBadChunk
		}
		size, ok := chunkSize(b[i : i+j-1])
		if !ok {
			return 0, 0, errBadChunk
		}
		i += j + 1
		if size == 0 {
			break
		}
		if total+size > lim.body {
			return 0, 0, errBodyTooLarge
		}
		total += size
		if int64(len(b)-i) < size+2 {
			return 0, 0, nil
		}
		i += int(size)
		if b[i] != '\r' || b[i+1] != '\n' {
			return 0, 0, errBadChunk
		}
		i += 2
	}
	// The trailer section: header fields, then an empty line.
	r.trailer = r.trailer[:0]
	trail := i // where the trailer section starts
	for n := 0; ; n++ {
		j := indexByte(b[i:], '\n')
		if j < 0 {
			if len(b)-i > maxChunkLine {
				return 0, 0, errBadChunk
			}
			return 0, 0, nil
		}
		if j == 0 || b[i+j-1] != '\r' {
			return 0, 0, errBadChunk
		}
		ln := b[i : i+j-1]
		lo := i
		i += j + 1
		if len(ln) == 0 {
			if n > 0 {
				r.tail = string(b[trail:lo])
			}
			return total, i, nil
		}
		if n >= lim.headers || ln[0] == ' ' || ln[0] == '\t' {
			return 0, 0, errBadChunk
		}
		colon := indexByte(ln, ':')
		if colon <= 0 {
			return 0, 0, errBadChunk
		}
		for _, c := range ln[:colon] {
			if !isToken(c) {
				return 0, 0, errBadChunk
			}
		}
		vo, ve := colon+1, len(ln)
		for vo < ve && (ln[vo] == ' ' || ln[vo] == '\t') {
			vo++
		}
		for ve > vo && (ln[ve-1] == ' ' || ln[ve-1] == '\t') {
			ve--
		}
		for _, c := range ln[vo:ve] {
			if c < ' ' && c != '\t' || c == 0x7f {
				return 0, 0, errBadChunk
			}
		}
		o := int32(lo - trail)
		r.trailer = append(r.trailer, field{span{o, o + int32(colon)}, span{o + int32(vo), o + int32(ve)}})
	}
}

// maxChunkLine bounds a chunk-size line and a trailer line.
const maxChunkLine = 4096

// chunkSize parses a chunk-size line (without its CRLF): hex digits, then
// optional whitespace and extensions, which are ignored.
func chunkSize(l []byte) (int64, bool) {
	var n int64
	i := 0
	for ; i < len(l); i++ {
		c := l[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			goto rest
		}
		if i >= 15 {
			return 0, false
		}
		n = n<<4 | int64(d)
	}
rest:
	if i == 0 {
		return 0, false
	}
	for ; i < len(l) && (l[i] == ' ' || l[i] == '\t'); i++ {
	}
	if i < len(l) && l[i] != ';' {
		return 0, false
	}
	for ; i < len(l); i++ {
		if c := l[i]; c < ' ' && c != '\t' || c == 0x7f {
			return 0, false
		}
	}
	return n, true
}

// compactChunked moves the data of the (checked, complete) chunked body at
// the start of b to its first total bytes.
func compactChunked(b []byte, total int64) {
	w, i := 0, 0
	for int64(w) < total {
		j := indexByte(b[i:], '\n')
		size, _ := chunkSize(b[i : i+j-1])
		i += j + 1
		copy(b[w:], b[i:i+int(size)])
		w += int(size)
		i += int(size) + 2
	}
}

// internMethod returns the constant for a common method, so that
// comparing it costs less and a kept method does not keep the head;
// others are parts of the head.
func internMethod(m string) string {
	switch m {
	case "GET":
		return "GET"
	case "HEAD":
		return "HEAD"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "DELETE":
		return "DELETE"
	case "OPTIONS":
		return "OPTIONS"
	case "PATCH":
		return "PATCH"
	case "CONNECT":
		return "CONNECT"
	case "TRACE":
		return "TRACE"
	}
	return m
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isToken reports whether c may appear in a token (RFC 9110 5.6.2).
func isToken(c byte) bool { return tokenByte[c] }

var tokenByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validHostByte are the bytes net/http accepts in a Host header.
var validHostByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!$%&()*+,-.:;=[']_~" {
		t[c] = true
	}
	return t
}()

// plainTargetByte are the bytes of an origin-form target that
// url.ParseRequestURI takes as they are (no escape to check, no
// fragment): unreserved, sub-delims, ':', '@', '/', '?'.
var plainTargetByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "-._~!$&'()*+,;=:@/?" {
		t[c] = true
	}
	return t
}()

func indexByte(b []byte, c byte) int     { return bytes.IndexByte(b, c) }
func lastIndexByte(b []byte, c byte) int { return bytes.LastIndexByte(b, c) }

func lastIndexByteString(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func indexString(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func (e *parseError) Error() string { return "web: " + e.reason }
