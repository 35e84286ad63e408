package web

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// FuzzParse reads the same bytes with this package's parser and with
// net/http's (http.ReadRequest, plus the checks its server adds). Where
// both accept, they must agree on method, target, host, header fields,
// body and where the request ends; where this parser accepts, net/http
// must too (a request net/http refuses and this parser took would be one
// more reading of the bytes: the start of smuggling).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /a/b?c=d HTTP/1.0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
		"GET http://h:80/p HTTP/1.1\r\nHost: b\r\n\r\n",
		"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /%41 HTTP/1.1\nHost: a\nX:  y \n\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"PUT /x HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nab",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 ;x\r\nhello\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee\r\nx\r\n1 \r\ny\r\n0\r\nA: b\r\nC: d\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://h/p HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	lim := limits{head: 8192, headers: 100, body: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p parser
		r := &Request{}
		r.reset()
		buf := bytes.Clone(data)
		st, n, e := p.parse(buf, r, &lim)
		// The same bytes in pieces, as they may arrive: the same outcome.
		for _, piece := range []int{1, 7, 64} {
			f, err := feedPieces(data, piece, &lim)
			if err != nil {
				t.Fatalf("in pieces of %d: %v", piece, err)
			}
			if f.st != st || f.e != e {
				t.Fatalf("in pieces of %d: %v %v, at once %v %v: %q", piece, f.st, f.e, st, e, data)
			}
			if st == parseDone && (f.used != n || !bytes.Equal(f.r.Body(), r.Body()) || !slices.Equal(trailerOf(f.r), trailerOf(r))) {
				t.Fatalf("in pieces of %d: length %d, body %q, trailer %q; at once %d, %q, %q: %q",
					piece, f.used, f.r.Body(), trailerOf(f.r), n, r.Body(), trailerOf(r), data)
			}
		}
		if st != parseDone {
			return
		}
		std, used, err := stdRead(data)
		if err != nil {
			t.Fatalf("accepted what net/http refuses (%v): %q", err, data)
		}
		if used != n {
			t.Fatalf("request ends at %d, net/http's at %d: %q", n, used, data)
		}
		if r.Method() != std.Method || r.Target() != std.RequestURI {
			t.Fatalf("request line %q %q, net/http %q %q", r.Method(), r.Target(), std.Method, std.RequestURI)
		}
		if r.Host() != std.Host {
			t.Fatalf("host %q, net/http %q", r.Host(), std.Host)
		}
		ours := http.Header{}
		for k, v := range r.Headers() {
			ck := http.CanonicalHeaderKey(k)
			switch ck {
			case "Host", "Transfer-Encoding", "Content-Length":
				continue
			}
			ours[ck] = append(ours[ck], v)
		}
		theirs := std.Header.Clone()
		for _, k := range []string{"Host", "Transfer-Encoding", "Content-Length"} {
			delete(theirs, k)
		}
		if !headersEqual(ours, theirs) {
			t.Fatalf("headers %v, net/http %v", ours, theirs)
		}
		if !bytes.Equal(r.Body(), std.body) {
			t.Fatalf("body %q, net/http %q", r.Body(), std.body)
		}
		for k, vs := range std.Trailer {
			if got := r.Trailer(k); got != vs[0] {
				t.Fatalf("trailer %s: %q, net/http %q", k, got, vs[0])
			}
		}
	})
}

// trailerOf lists r's trailer fields, "name: value".
func trailerOf(r *Request) []string {
	var fs []string
	for _, f := range r.trailer {
		fs = append(fs, r.tail[f.name.off:f.name.end]+": "+r.tail[f.value.off:f.value.end])
	}
	return fs
}

type stdReq struct {
	*http.Request
	body []byte
}

// stdRead reads a request as net/http's server would: ReadRequest, the
// server's own checks, and the whole body. It returns how many bytes of
// data the request took.
func stdRead(data []byte) (*stdReq, int, error) {
	rd := bytes.NewReader(data)
	br := bufio.NewReader(rd)
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, 0, err
	}
	if req.ProtoMajor != 1 {
		return nil, 0, errVersion
	}
	// ReadRequest moves Host out of the header, into req.Host.
	// An empty Host field counts as one: look for it in the bytes.
	head, _, _ := bytes.Cut(data, []byte("\n\r\n"))
	head, _, _ = bytes.Cut(head, []byte("\n\n"))
	hasHost := bytes.Contains(bytes.ToLower(head), []byte("\nhost:"))
	if req.ProtoAtLeast(1, 1) && !hasHost && req.Method != "CONNECT" {
		return nil, 0, errNoHost
	}
	for i := 0; i < len(req.Host); i++ {
		if !validHostByte[req.Host[i]] {
			return nil, 0, errBadHost
		}
	}
	for k, vs := range req.Header {
		if k == "" || strings.ContainsFunc(k, func(c rune) bool { return c >= 0x80 || !isToken(byte(c)) }) {
			return nil, 0, errBadHeader
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
					return nil, 0, errBadHeader
				}
			}
		}
	}
	if e := req.Header.Get("Expect"); e != "" && !strings.EqualFold(e, "100-continue") {
		return nil, 0, errExpect
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, 0, err
	}
	return &stdReq{req, body}, len(data) - rd.Len() - br.Buffered(), nil
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
