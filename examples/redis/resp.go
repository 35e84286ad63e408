package main

// RESP2: the request parser and the reply writer.
//
// The parser follows Redis 7's processInlineBuffer and
// processMultibulkBuffer (networking.c) step by step, so that malformed
// input gets the same reply and leaves the connection in the same state:
//
//   - a request starting with '*' is a multibulk request: "*<n>\r\n" then n
//     times "$<len>\r\n<len bytes>\r\n". The line ends are found by looking
//     for '\r' and skipping the byte after it, as Redis does, and the two
//     bytes after a bulk are skipped whatever they are;
//   - any other request is an inline request: a line split into arguments
//     with Redis's sdssplitargs rules (quotes, escapes);
//   - "*<n>" with n <= 0 and an empty inline line are skipped;
//   - lengths are checked against the limits as soon as their line has
//     arrived, before anything of that size is allocated: nothing the
//     parser allocates is larger than what the peer has actually sent;
//   - a line is refused as too long where redis-server refuses it: when
//     one of its reads ends more than 64 KB past the line's start and
//     before its end (qbuf, reads.go, replays where its reads end; over
//     TLS it reads a record at a time, as this server receives them);
//   - the search for a line's end resumes where the last one stopped, so
//     that a line arriving a byte at a time costs time linear in its
//     length.
//
// Invariants: a parser works on one buffer at a time (parse's buf), from
// pos; the request in progress (if any) starts at start and its arguments
// so far are spans relative to start, so that the unparsed tail
// buf[start:] can be moved (rebase) without touching them. scan is where
// the search for the end of the line at pos resumes (nul: it met a NUL,
// and the line never ends); q's pos is pos.

import (
	"strconv"
)

// Redis's limits (server.h, config.c).
const (
	// inlineMax is PROTO_INLINE_MAX_SIZE: the longest inline request, and
	// the longest count line of a multibulk request, Redis waits for.
	inlineMax = 64 * 1024
	// DefaultMaxBulk is proto-max-bulk-len's default: the longest argument.
	DefaultMaxBulk = 512 * 1024 * 1024
	// DefaultMaxMultibulk is the largest element count Redis 7 accepts in
	// a multibulk request (INT_MAX). Elements are not allocated ahead of
	// their arrival, so a large count costs nothing by itself; the query
	// buffer limit bounds what a request may hold.
	DefaultMaxMultibulk = 1<<31 - 1
)

// protoError is a malformed request: the text of Redis's reply, without
// "ERR Protocol error: ".
type protoError string

// span is an argument of the request in progress, relative to its start.
type span struct{ off, end int }

// parser splits a connection's input into requests.
type parser struct {
	maxBulk      int64
	maxMultibulk int64

	start     int    // where the request in progress starts
	pos       int    // where parsing resumes
	multibulk int64  // elements still to read of a multibulk request; 0: none begun
	bulk      int64  // length of the bulk being read; -1: its "$" line comes next
	spans     []span // the arguments read so far of the request in progress

	perRead bool // each input given is one of redis-server's reads (TLS: it reads a record at a time)

	scan int        // where the search for the end of the line at pos resumes
	nul  bool       // the line at pos has a NUL before its end: it never ends
	long protoError // the line at pos is refused unless more input arrives at once (stalled)
	fail protoError // a line refused on stalled: the next call's error
	q    qbuf       // redis-server's reads (reads.go)
}

func newParser(maxBulk, maxMultibulk int64) parser {
	return parser{maxBulk: maxBulk, maxMultibulk: maxMultibulk, bulk: -1, q: newQbuf()}
}

// moveTo moves the parser past an element ending at e. (The search for
// the next line starts at pos, past scan; nul and long are only set for
// a line whose end has not been found.)
func (p *parser) moveTo(e int) {
	p.pos = e
	if e > p.q.end {
		p.q.readTo(e)
	}
	p.q.pos = e
}

// stalled says that no more input has arrived than buf, parsed: the read
// redis-server makes ends there. If the line in progress is one it would
// refuse unless that read brought its end, stalled leaves the read and
// reports true: the caller gives the rest of the line a moment to arrive
// before it calls refuse.
func (p *parser) stalled(buf []byte) bool {
	if p.long != "" {
		return true
	}
	p.q.short(len(buf))
	return false
}

// refuse refuses the line in progress (see stalled), at the next call of
// next, if it is still one redis-server would refuse once its read ends
// at the end of buf.
func (p *parser) refuse(buf []byte) {
	if p.long != "" {
		p.q.short(len(buf))
		p.fail = p.long
	}
}

// next parses the next request in buf. It returns its arguments (appended
// to argv; slices of buf, or for inline requests with escapes, new
// slices), ok true once a whole request has been read (with no arguments
// for a request that Redis skips), or ok false if more input is needed.
// A malformed request returns its protoError.
func (p *parser) next(buf []byte, argv [][]byte) (_ [][]byte, ok bool, perr protoError) {
	if p.fail != "" {
		return argv, false, p.fail
	}
	if p.multibulk == 0 {
		if p.pos >= len(buf) {
			return argv, false, ""
		}
		p.start = p.pos
		if buf[p.pos] != '*' {
			return p.inline(buf, argv)
		}
		// The count line.
		nl := p.lineFast(buf, '\r') // line, its first loop inlined
		if nl < 0 {
			var e protoError
			if nl, e = p.lineRest(buf, '\r', "too big mbulk count string", -1-nl); nl < 0 {
				return argv, false, e
			}
		}
		if nl+1 >= len(buf) {
			return argv, false, "" // Redis skips the byte after '\r', once it has arrived
		}
		n, valid := parseInt(buf[p.pos+1 : nl])
		if !valid || n > p.maxMultibulk {
			return argv, false, "invalid multibulk length"
		}
		p.moveTo(nl + 2)
		if n <= 0 {
			return argv, true, ""
		}
		p.multibulk, p.bulk, p.spans = n, -1, p.spans[:0]
	}
	for p.multibulk > 0 {
		if p.bulk < 0 {
			nl := p.lineFast(buf, '\r')
			if nl < 0 {
				var e protoError
				if nl, e = p.lineRest(buf, '\r', "too big bulk count string", -1-nl); nl < 0 {
					return argv, false, e
				}
			}
			if nl+1 >= len(buf) {
				return argv, false, ""
			}
			if buf[p.pos] != '$' {
				return argv, false, protoError("expected '$', got '" + string(buf[p.pos:p.pos+1]) + "'")
			}
			n, valid := parseInt(buf[p.pos+1 : nl])
			if !valid || n < 0 || n > p.maxBulk {
				return argv, false, "invalid bulk length"
			}
			p.moveTo(nl + 2)
			p.bulk = n
			if n >= bigArg {
				p.q.bigLine(n)
			}
		}
		if int64(len(buf)-p.pos) < p.bulk+2 {
			return argv, false, ""
		}
		end := p.pos + int(p.bulk)
		p.spans = append(p.spans, span{p.pos - p.start, end - p.start})
		if p.q.big >= 0 {
			p.q.argEnd(end + 2)
		}
		p.moveTo(end + 2)
		p.bulk = -1
		p.multibulk--
	}
	for _, s := range p.spans {
		argv = append(argv, buf[p.start+s.off:p.start+s.end:p.start+s.end])
	}
	return argv, true, ""
}

// line finds the end of the line at p.pos, the index of its first end
// byte, as Redis's strchr over its query buffer does: a NUL byte ends the
// search, so a line with a NUL before its end never ends (Redis waits for
// more input, until the line is too long). The search resumes where the
// last one stopped. It returns -1 while the end has not arrived, with
// tooBig once redis-server would refuse the line (qbuf.refuses); a line
// it would refuse unless more input arrives at once is left for stalled.
// A line that ends within 64 KB takes the first loop only.
func (p *parser) line(buf []byte, end byte, tooBig protoError) (int, protoError) {
	if i := p.lineFast(buf, end); i < 0 {
		return p.lineRest(buf, end, tooBig, -1-i)
	} else {
		return i, ""
	}
}

// lineFast is line's first loop, over the line's first 64 KB: it returns
// the end's index, or -1-i for the i it stopped at (a NUL, the end of
// buf, or 64 KB into the line).
func (p *parser) lineFast(buf []byte, end byte) int {
	i, lim := p.scan, len(buf)
	if i < p.pos {
		i = p.pos
	}
	if lim > p.pos+inlineMax {
		lim = p.pos + inlineMax + 1
	}
	for ; i < lim; i++ {
		c := buf[i]
		if c == end {
			return i
		}
		if c == 0 {
			break
		}
	}
	return -1 - i
}

// lineRest is line past its first loop, which stopped at i: at a NUL, at
// the end of buf, or 64 KB into the line.
func (p *parser) lineRest(buf []byte, end byte, tooBig protoError, i int) (int, protoError) {
	nl := -1
	for ; i < len(buf); i++ {
		if c := buf[i]; c == end {
			nl = i
			break
		} else if c == 0 {
			p.nul = true
			break
		}
	}
	p.scan = i // the end, a NUL, or where the next search resumes
	if p.perRead {
		// redis-server reads a TLS record at a time, as the server
		// receives them: its read ends where buf does.
		if nl < 0 && len(buf)-p.pos > inlineMax {
			return -1, tooBig
		}
		return nl, ""
	}
	last := nl // the reads that end at last at the latest have not brought the end
	if nl < 0 {
		last = len(buf)
	} else {
		p.long = ""
	}
	if last-p.pos > inlineMax {
		if p.q.refuses(p.pos, last) {
			return -1, tooBig
		}
		if nl < 0 {
			p.long = tooBig // refused at the next read, unless it brings the end
		}
	}
	return nl, ""
}

// inline parses an inline request at p.pos.
func (p *parser) inline(buf []byte, argv [][]byte) ([][]byte, bool, protoError) {
	nl, e := p.line(buf, '\n', "too big inline request")
	if nl < 0 {
		return argv, false, e
	}
	line := buf[p.pos:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	p.moveTo(nl + 1)
	argv, ok := splitArgs(line, argv)
	if !ok {
		return argv, false, "unbalanced quotes in request"
	}
	return argv, true, ""
}

// tail returns where the unparsed input starts: the beginning of the
// request in progress, or the first byte not yet looked at.
func (p *parser) tail() int {
	if p.multibulk > 0 {
		return p.start
	}
	return p.pos
}

// rebase says that the input from tail() on now starts at offset 0 of a
// new buffer.
func (p *parser) rebase() {
	t := p.tail()
	p.pos -= t
	p.start -= t
	p.scan -= t
	p.q.rebase(t)
}

// parseInt is Redis's string2ll: an optional '-', then digits with no
// leading zero (unless the number is "0"), fitting an int64; nothing else,
// not even spaces or a '+'.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg, b = true, b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v < uint64(c-'0') {
			return 0, false
		}
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// splitArgs splits an inline request as Redis's sdssplitargs does. Tokens
// without quotes are slices of line; tokens with quotes are new slices
// (their escapes are decoded). A NUL byte ends the line, as it ends the C
// string sdssplitargs reads. ok is false for unbalanced quotes, or a
// closing quote that is not followed by a space or the end.
func splitArgs(line []byte, argv [][]byte) (_ [][]byte, ok bool) {
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	i := 0
	for {
		for at(i) != 0 && isSpace(at(i)) {
			i++
		}
		if at(i) == 0 {
			return argv, true
		}
		// The fast path: a token with no quotes is a slice of line.
		begin := i
		for c := at(i); c != 0 && c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != '"' && c != '\''; c = at(i) {
			i++
		}
		if c := at(i); c != '"' && c != '\'' {
			argv = append(argv, line[begin:i:i])
			continue
		}
		// A token with quotes is decoded into a copy.
		tok := append(make([]byte, 0, i-begin+16), line[begin:i]...)
		inq, insq := false, false
		for done := false; !done; {
			c := at(i)
			switch {
			case inq:
				switch {
				case c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)):
					tok = append(tok, hexVal(at(i+2))<<4|hexVal(at(i+3)))
					i += 3
				case c == '\\' && at(i+1) != 0:
					i++
					e := at(i)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					tok = append(tok, e)
				case c == '"' || c == 0:
					if !closes(c, at(i+1)) {
						return argv, false
					}
					done = true
				default:
					tok = append(tok, c)
				}
			case insq:
				switch {
				case c == '\\' && at(i+1) == '\'':
					i++
					tok = append(tok, '\'')
				case c == '\'' || c == 0:
					if !closes(c, at(i+1)) {
						return argv, false
					}
					done = true
				default:
					tok = append(tok, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					tok = append(tok, c)
				}
			}
			if at(i) != 0 {
				i++
			}
		}
		argv = append(argv, tok)
	}
}

// closes reports whether c ends a quoted token well: a closing quote
// followed by a space or the end of the line (not the end of the line
// itself: the quotes are unbalanced).
func closes(c, next byte) bool { return c != 0 && (next == 0 || isSpace(next)) }

// Replies. Every writer appends to b and returns it.

func appendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendError appends "-<msg>\r\n"; msg carries its prefix ("ERR ...",
// "WRONGTYPE ..."). Line breaks in msg become spaces, as Redis makes them.
func appendError(b []byte, msg string) []byte {
	b = append(b, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

func appendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

func appendBulkString(b []byte, v string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

func appendNull(b []byte) []byte      { return append(b, "$-1\r\n"...) }
func appendNullArray(b []byte) []byte { return append(b, "*-1\r\n"...) }

func appendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

const (
	replyOK     = "+OK\r\n"
	errWrongTyp = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInt   = "ERR value is not an integer or out of range"
	errSyntax   = "ERR syntax error"
)
