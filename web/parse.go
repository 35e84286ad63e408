package web

// The request parser. It finds a request's head in the bytes received and
// copies it, once, into a string that every string of the Request is a
// part of (so none of them changes when the buffer is reused); the body
// stays in the buffer, where a chunked body is decoded in place as it
// arrives. It is strict
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
	errChunkOverhead = &parseError{400, "chunked encoding contains too much non-data"}
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
// request so that more bytes do not make it scan what it has seen again.
type parser struct {
	scanned int // bytes of the buffer known to hold no end of head
	headEnd int // 0 until the head is parsed, then its length
	ck      chunker
}

func (p *parser) reset() { *p = parser{} }

// parse reads a request from b (which starts where the request starts)
// into r. parseDone: r is filled and n is the request's length in b (a
// request that is done stays done: parse may be called again with the
// same bytes). parseMore: b holds only part of a request, and only b[:n]
// is to be kept (a chunked body is decoded in place, and the framing
// already read is dropped); r's head is filled once headEnd > 0, so that
// Expect can be answered. parseBad: e says what to answer.
func (p *parser) parse(b []byte, r *Request, lim *limits) (st parseState, n int, e *parseError) {
	if p.headEnd == 0 {
		end, e := p.findHead(b, lim)
		if e != nil {
			return parseBad, 0, e
		}
		if end == 0 {
			return parseMore, len(b), nil
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
		st, n, e := p.ck.decode(body, r, lim)
		if st == parseDone {
			r.body = body[:p.ck.out:p.ck.out]
		}
		return st, p.headEnd + n, e
	case r.length > 0:
		if int64(len(body)) < r.length {
			return parseMore, len(b), nil
		}
		r.body = body[:r.length:r.length]
		return parseDone, p.headEnd + int(r.length), nil
	}
	r.body = nil
	return parseDone, p.headEnd, nil
}

// findHead returns the length of the head at the start of b (through the
// empty line that ends it), 0 if b does not hold all of it yet, or an
// error when it is longer than the limit. Each byte is looked at once,
// whatever the pieces the head comes in.
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
	p.scanned = len(b)
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

// Chunked bodies. A chunker decodes one in place as its bytes arrive,
// and keeps where it stands across receives: the data moves down to the
// body's start, over the framing read before it, so that what the
// connection holds is the decoded data and what is not read yet (a line
// still arriving, the trailer section); each byte received is looked at a
// bounded number of times, whatever the pieces it comes in.
//
// Its rules are net/http's: a chunk-size line ends with CRLF and has no
// other CR; trailing SP and HTAB are dropped, then what follows the first
// ';' (the extensions; here they may not hold other control bytes); what
// remains is 1 to 16 hex digits (so "5 ;x" is refused, "5 " is not). A
// line and the trailer section are at most maxChunkLine bytes, CRLFs
// included. The framing (chunk-size lines and the CRLF after each chunk's
// data) may exceed 16 bytes per chunk plus twice the chunk's data by at
// most maxChunkExcess in all; beyond that the body is refused, so that
// the raw bytes of a body are at most 3 times its data plus 16 per chunk
// plus 16 KiB (and the trailer section).

// chunkStage is where a chunked body's decoding stands.
type chunkStage int8

const (
	chunkLine    chunkStage = iota // a chunk-size line
	chunkData                      // the data of a chunk
	chunkDataEnd                   // the CRLF after a chunk's data
	chunkTrailer                   // the trailer section
	chunkDone                      // the whole body is decoded
)

const (
	// maxChunkLine bounds a chunk-size line and the trailer section,
	// CRLFs included: what net/http's 4 KB read buffer holds.
	maxChunkLine = 4096
	// maxChunkExcess is how much chunk framing beyond 16 bytes per chunk
	// and twice the data is allowed, in all: net/http's figure.
	maxChunkExcess = 16 << 10
)

// chunker is where the decoding of a chunked body stands. Offsets are in
// the body (the bytes after the head).
type chunker struct {
	stage  chunkStage
	out    int   // decoded bytes: body[:out]
	in     int   // raw bytes consumed: body[in:] is still to read
	scan   int   // body[in:scan] holds no '\n' (a line still arriving)
	left   int64 // data bytes of the current chunk still to come
	excess int64 // framing beyond what the data allows, as net/http counts it
	trail  int   // where the trailer section starts (chunkTrailer)
}

// decode goes on decoding the chunked body at the start of b (all of it
// received so far). parseDone: n is the body's raw length, trailer
// section included, and the data is b[:k.out], with its trailer fields in
// r. parseMore: b[:n] is what is to be kept.
func (k *chunker) decode(b []byte, r *Request, lim *limits) (st parseState, n int, e *parseError) {
	for {
		switch k.stage {
		case chunkLine:
			nl, e := k.line(b)
			if e != nil {
				return parseBad, 0, e
			}
			if nl < 0 {
				return k.more(b)
			}
			size, e := k.chunkSize(b[k.in:nl-1], int64(lim.body)-int64(k.out))
			if e != nil {
				return parseBad, 0, e
			}
			k.in, k.scan = nl+1, nl+1
			if size == 0 {
				k.stage, k.trail = chunkTrailer, k.in
				r.trailer = r.trailer[:0]
				continue
			}
			k.stage, k.left = chunkData, size
		case chunkData:
			m := int(min(int64(len(b)-k.in), k.left))
			if m == 0 {
				return k.more(b)
			}
			copy(b[k.out:], b[k.in:k.in+m])
			k.out += m
			k.in += m
			k.left -= int64(m)
			if k.left == 0 {
				k.stage = chunkDataEnd
			}
		case chunkDataEnd:
			if len(b)-k.in >= 1 && b[k.in] != '\r' || len(b)-k.in >= 2 && b[k.in+1] != '\n' {
				return parseBad, 0, errBadChunk // data longer than its size
			}
			if len(b)-k.in < 2 {
				return k.more(b)
			}
			k.in += 2
			k.scan = k.in
			k.stage = chunkLine
		case chunkTrailer:
			nl, e := k.line(b)
			if e == nil && nl >= 0 && nl+1-k.trail > maxChunkLine || nl < 0 && len(b)-k.trail > maxChunkLine {
				e = errBadChunk // a trailer section longer than net/http reads
			}
			if e != nil {
				return parseBad, 0, e
			}
			if nl < 0 {
				return k.more(b)
			}
			if nl-1 == k.in { // the empty line: the end
				if len(r.trailer) > 0 {
					r.tail = string(b[k.trail:k.in])
				}
				k.in, k.scan = nl+1, nl+1
				k.stage = chunkDone
				continue
			}
			if len(r.trailer) >= lim.headers {
				return parseBad, 0, errBadChunk
			}
			f, ok := trailerField(b[k.in : nl-1])
			if !ok {
				return parseBad, 0, errBadChunk
			}
			o := int32(k.in - k.trail)
			r.trailer = append(r.trailer, field{span{o + f.name.off, o + f.name.end}, span{o + f.value.off, o + f.value.end}})
			k.in, k.scan = nl+1, nl+1
		case chunkDone:
			return parseDone, k.in, nil
		}
	}
}

// line finds the end of the line that starts at k.in: the index of its
// '\n', or -1 while it is still arriving. A line must end with CRLF,
// have no other CR and be at most maxChunkLine bytes long.
func (k *chunker) line(b []byte) (int, *parseError) {
	end := min(len(b), k.in+maxChunkLine)
	if k.scan < end {
		if j := indexByte(b[k.scan:end], '\n'); j >= 0 {
			nl := k.scan + j
			if nl == k.in || b[nl-1] != '\r' || indexByte(b[k.in:nl-1], '\r') >= 0 {
				return 0, errBadChunk // a bare LF or a CR inside
			}
			return nl, nil
		}
		k.scan = end
	}
	if end-k.in >= maxChunkLine {
		return 0, errBadChunk
	}
	return -1, nil
}

// chunkSize reads chunk-size line l (without its CRLF) and counts its
// framing; room is how much more data the body may hold.
func (k *chunker) chunkSize(l []byte, room int64) (int64, *parseError) {
	k.excess += int64(len(l)) + 2 // the line, and the CRLF after the data
	for len(l) > 0 && (l[len(l)-1] == ' ' || l[len(l)-1] == '\t') {
		l = l[:len(l)-1]
	}
	digits := l
	if i := indexByte(l, ';'); i >= 0 {
		digits = l[:i]
		for _, c := range l[i+1:] {
			if c < ' ' && c != '\t' || c == 0x7f {
				return 0, errBadChunk
			}
		}
	}
	if len(digits) == 0 || len(digits) > 16 {
		return 0, errBadChunk
	}
	var n uint64
	for _, c := range digits {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errBadChunk
		}
		n = n<<4 | uint64(c)
	}
	if n > uint64(room) {
		return 0, errBodyTooLarge
	}
	k.excess = max(k.excess-16-2*int64(n), 0)
	if k.excess > maxChunkExcess {
		return 0, errChunkOverhead
	}
	return int64(n), nil
}

// more drops the framing read so far, moving what is not read yet (and
// the trailer fields read) down to the end of the decoded data, and
// returns how many bytes of b are to be kept.
func (k *chunker) more(b []byte) (parseState, int, *parseError) {
	from := k.in
	if k.stage == chunkTrailer {
		from = k.trail
	}
	gap := from - k.out
	if gap == 0 {
		return parseMore, len(b), nil
	}
	n := copy(b[k.out:], b[from:])
	k.in -= gap
	k.scan -= gap
	k.trail -= gap
	return parseMore, k.out + n, nil
}

// trailerField checks a trailer line (without its CRLF) as a header line
// is checked, and returns its name and value, as spans of l.
func trailerField(l []byte) (field, bool) {
	if l[0] == ' ' || l[0] == '\t' {
		return field{}, false // obs-fold
	}
	colon := indexByte(l, ':')
	if colon <= 0 {
		return field{}, false
	}
	for _, c := range l[:colon] {
		if !isToken(c) {
			return field{}, false
		}
	}
	vo, ve := colon+1, len(l)
	for vo < ve && (l[vo] == ' ' || l[vo] == '\t') {
		vo++
	}
	for ve > vo && (l[ve-1] == ' ' || l[ve-1] == '\t') {
		ve--
	}
	for _, c := range l[vo:ve] {
		if c < ' ' && c != '\t' || c == 0x7f {
			return field{}, false
		}
	}
	return field{span{0, int32(colon)}, span{int32(vo), int32(ve)}}, true
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

func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }

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
