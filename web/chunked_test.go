package web

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// fed is what parsing a request piece by piece came to.
type fed struct {
	st   parseState
	r    *Request
	e    *parseError
	held int // the most bytes held at once
	used int // the request's length in the bytes sent (parseDone)
}

// feedPieces parses raw as the connection does: piece by piece, each
// appended to what the parser kept of the ones before. A complete request
// is parsed once more from the bytes held, as a waiting upgrade is, and
// must come out the same.
func feedPieces(raw []byte, piece int, lim *limits) (fed, error) {
	var p parser
	r := &Request{}
	r.reset()
	var buf []byte
	f := fed{r: r}
	for off := 0; ; {
		end := min(off+piece, len(raw))
		buf = append(buf, raw[off:end]...)
		off = end
		f.held = max(f.held, len(buf))
		st, n, e := p.parse(buf, r, lim)
		f.st, f.e = st, e
		switch st {
		case parseBad:
			return f, nil
		case parseDone:
			if st2, n2, _ := p.parse(buf, r, lim); st2 != parseDone || n2 != n {
				return f, fmt.Errorf("parsed again: %v %d, first %v %d", st2, n2, st, n)
			}
			// The bytes held after the request are the last ones sent.
			f.used = off - (len(buf) - n)
			return f, nil
		}
		if n > len(buf) {
			return f, fmt.Errorf("keep %d of %d bytes", n, len(buf))
		}
		buf = buf[:n]
		if off == len(raw) {
			return f, nil
		}
	}
}

// feed is feedPieces for one request that is all of raw.
func feed(t *testing.T, raw []byte, piece int, lim *limits) (parseState, *Request, *parseError, int) {
	t.Helper()
	f, err := feedPieces(raw, piece, lim)
	if err != nil {
		t.Fatal(err)
	}
	if f.st == parseDone && f.used != len(raw) {
		t.Fatalf("request of %d bytes, sent %d", f.used, len(raw))
	}
	return f.st, f.r, f.e, f.held
}

const chunkedHead = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

// TestChunkedPieces: a chunked body decodes to the same data, trailer and
// length whatever the pieces it arrives in, and what the parser holds is
// the head, the data and at most a line (never the framing read).
func TestChunkedPieces(t *testing.T) {
	lim := limits{head: 8192, headers: 100, body: 1 << 20}
	bodies := []struct {
		name, chunks, data, trailer string
	}{
		{"plain", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", ""},
		{"extensions", "5;a=b;c=\"d e\"\r\nhello\r\n0;x\r\n\r\n", "hello", ""},
		{"trailer", "2\r\nab\r\n0\r\nX-T: tv\r\nX-U:  u \r\n\r\n", "ab", "tv"},
		{"one-byte chunks", strings.Repeat("1\r\nx\r\n", 3000) + "0\r\n\r\n", strings.Repeat("x", 3000), ""},
		{"big chunks", strings.Repeat("4000\r\n"+strings.Repeat("y", 0x4000)+"\r\n", 8) + "0\r\n\r\n", strings.Repeat("y", 8*0x4000), ""},
		{"empty", "0\r\n\r\n", "", ""},
	}
	for _, b := range bodies {
		raw := []byte(chunkedHead + b.chunks)
		for _, piece := range []int{1, 2, 3, 7, 100, 4096, 16 << 10, len(raw)} {
			t.Run(fmt.Sprintf("%s/%d", b.name, piece), func(t *testing.T) {
				st, r, e, held := feed(t, raw, piece, &lim)
				if st != parseDone {
					t.Fatalf("state %v (%v)", st, e)
				}
				if string(r.Body()) != b.data {
					t.Fatalf("body %.40q (%d bytes), want %.40q (%d)", r.Body(), len(r.Body()), b.data, len(b.data))
				}
				if got := r.Trailer("x-t"); got != b.trailer {
					t.Fatalf("trailer %q, want %q", got, b.trailer)
				}
				// Held: the head, the data, and at most a line and a
				// piece not read yet.
				if bound := len(chunkedHead) + len(b.data) + maxChunkLine + piece; held > bound {
					t.Fatalf("held %d bytes, more than %d", held, bound)
				}
			})
		}
	}
}

// refusedAt returns how many bytes of n chunks of d bytes whose size
// lines are l bytes long (CRLF excluded) net/http reads before it refuses
// them for their overhead (through the line that takes the excess over
// 16 KiB), or -1 if it does not.
func refusedAt(n, d, l int) int {
	excess := 0
	for k := range n {
		excess = max(excess+l+2-16-2*d, 0)
		if excess > maxChunkExcess {
			return k*(l+2+d+2) + l + 2
		}
	}
	return -1
}

// TestChunkedOverhead: chunk framing beyond net/http's allowance (16
// bytes per chunk and twice its data, and 16 KiB in all) is refused as
// soon as the line that exceeds it is read, whatever the pieces; within
// the allowance the body is read, holding no more than its data and a
// line.
func TestChunkedOverhead(t *testing.T) {
	lim := limits{head: 8192, headers: 100, body: 4 << 20}
	chunks := func(n, d, l int) string {
		line := fmt.Sprintf("%x", d)
		if l > len(line) {
			line += ";" + strings.Repeat("e", l-len(line)-1)
		}
		return strings.Repeat(line+"\r\n"+strings.Repeat("d", d)+"\r\n", n) + "0\r\n\r\n"
	}
	cases := []struct {
		name    string
		n, d, l int
	}{
		{"one-byte chunks, 4000-byte extensions", 1000, 1, 4000},
		{"one-byte chunks, 100-byte extensions", 1000, 1, 100},
		{"one-byte chunks, 17-byte lines", 20000, 1, 17},
		{"one-byte chunks, 16-byte lines", 20000, 1, 16},
		{"2 KiB chunks, 4000-byte extensions", 200, 0x800, 4000},
		{"16 KiB chunks, 1000-byte extensions", 100, 0x4000, 1000},
	}
	for _, tc := range cases {
		at := refusedAt(tc.n, tc.d, tc.l)
		for _, piece := range []int{1, 100, 16 << 10} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, piece), func(t *testing.T) {
				if piece == 1 && tc.n*(tc.d+tc.l) > 1<<20 {
					t.Skip("a byte at a time: too long")
				}
				raw := []byte(chunkedHead + chunks(tc.n, tc.d, tc.l))
				if at < 0 {
					st, r, e, held := feed(t, raw, piece, &lim)
					if st != parseDone || len(r.Body()) != tc.n*tc.d {
						t.Fatalf("state %v (%v), body %d bytes; want the body read", st, e, len(r.Body()))
					}
					if bound := len(chunkedHead) + tc.n*tc.d + maxChunkLine + piece; held > bound {
						t.Fatalf("held %d bytes of %d sent, more than %d", held, len(raw), bound)
					}
					return
				}
				// Only the bytes through the line that exceeds: the
				// parser must refuse with no more.
				st, _, e, _ := feed(t, raw[:len(chunkedHead)+at], piece, &lim)
				if st != parseBad || e != errChunkOverhead {
					t.Fatalf("state %v (%v) after %d bytes of body, want %v", st, e, at, errChunkOverhead)
				}
			})
		}
	}
	// Lines and trailer sections are bounded on their own.
	for _, tc := range []struct{ name, chunks string }{
		{"line too long", "1;" + strings.Repeat("e", maxChunkLine) + "\r\nx\r\n0\r\n\r\n"},
		{"trailer section too long", "1\r\nx\r\n0\r\n" + strings.Repeat("X-A: "+strings.Repeat("b", 90)+"\r\n", 50) + "\r\n"},
	} {
		raw := []byte(chunkedHead + tc.chunks)
		// What precedes the line or section, and maxChunkLine+1 bytes of it.
		cut := len(chunkedHead) + strings.LastIndex(tc.chunks[:20], "\n") + 1 + maxChunkLine + 1
		for _, piece := range []int{1, 100, 16 << 10} {
			if st, _, e, _ := feed(t, raw[:cut], piece, &lim); st != parseBad || e != errBadChunk {
				t.Errorf("%s/%d: state %v (%v), want %v", tc.name, piece, st, e, errBadChunk)
			}
		}
	}
}

// TestChunkSizeLine: a chunk-size line is read as net/http reads it.
func TestChunkSizeLine(t *testing.T) {
	lim := limits{head: 8192, headers: 100, body: 1 << 20}
	cases := []struct {
		line string
		ok   bool
	}{
		{"5", true},
		{"5 ", true},
		{"5\t \t", true},
		{"5;x", true},
		{"5; x = \"y z\"", true},
		{"5;", true},
		{"5;x ", true},
		{"0000000000000005", true},
		{"00000000000000005", false},
		{"5 ;x", false},
		{"5\t;x", false},
		{" 5", false},
		{"5 5", false},
		{"", false},
		{";x", false},
		{"-5", false},
		{"0x5", false},
		{"5;\x01", false},
		{"5;a\rb", false},
	}
	for _, tc := range cases {
		raw := []byte(chunkedHead + tc.line + "\r\nhello\r\n0\r\n\r\n")
		st, r, e, _ := feed(t, raw, len(raw), &lim)
		if ok := st == parseDone; ok != tc.ok {
			t.Errorf("%q: state %v (%v), want ok=%v", tc.line, st, e, tc.ok)
		} else if ok && string(r.Body()) != "hello" {
			t.Errorf("%q: body %q", tc.line, r.Body())
		}
	}
	// A bare LF ends no chunk line.
	raw := []byte(chunkedHead + "5\nhello\r\n0\r\n\r\n")
	if st, _, _, _ := feed(t, raw, len(raw), &lim); st != parseBad {
		t.Errorf("bare LF: state %v", st)
	}
}

// TestFindHeadPieces: a head that comes a byte at a time is found at the
// same place as one that comes whole.
func TestFindHeadPieces(t *testing.T) {
	lim := limits{head: 8192, headers: 100, body: 1 << 20}
	raw := []byte("GET /a HTTP/1.1\r\nHost: x\r\nX-Long: " + strings.Repeat("v", 3000) + "\r\n\r\n")
	st, r, e, _ := feed(t, raw, 1, &lim)
	if st != parseDone || r.Header("x-long") != strings.Repeat("v", 3000) {
		t.Fatalf("state %v (%v)", st, e)
	}
	if !bytes.Equal([]byte(r.head), raw) {
		t.Fatalf("head %q", r.head)
	}
}
