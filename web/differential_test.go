package web_test

// The differential test: the same bytes go to this package's server and
// to a net/http server with the same routes and handlers; their answers
// must agree on status, the headers that matter, the body and whether
// the connection closes, except where the case says this server is
// stricter, as RFC 9112 allows (then the case states what it answers).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/web"
)

// Routes of both servers.
func webRoutes() *web.Mux {
	mux := web.NewMux()
	mux.HandleFunc("GET /kv/{key}", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteString("v=" + r.PathValue("key"))
	})
	mux.HandleFunc("PUT /kv/{key}", func(w *web.ResponseWriter, r *web.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST /echo", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(r.Body())
	})
	mux.HandleFunc("GET /files/{rest...}", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("file " + r.PathValue("rest"))
	})
	mux.HandleFunc("/dir/", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("dir " + r.Method())
	})
	mux.HandleFunc("GET /trailer", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString(string(r.Body()) + "|" + r.Trailer("X-T"))
	})
	return mux
}

func stdRoutes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		io.WriteString(w, "v="+r.PathValue("key"))
	})
	mux.HandleFunc("PUT /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	mux.HandleFunc("GET /files/{rest...}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "file "+r.PathValue("rest"))
	})
	mux.HandleFunc("/dir/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "dir "+r.Method)
	})
	mux.HandleFunc("GET /trailer", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, string(b)+"|"+r.Trailer.Get("X-T"))
	})
	return mux
}

// The limits both servers run with: net/http reads MaxHeaderBytes plus
// 4096 bytes of slack.
const (
	diffHeaderBytes = 8192
	diffBodyBytes   = 1 << 16
)

// answer is what one response says.
type answer struct {
	Code    int
	Headers string // the headers that matter, "Name: value; ..."
	Body    string
	Close   bool
}

func (a answer) String() string {
	return fmt.Sprintf("%d close=%v [%s] %q", a.Code, a.Close, a.Headers, a.Body)
}

var diffHeaders = []string{"Content-Type", "Allow", "Location", "X-Content-Type-Options"}

// exchange sends raw on a new connection to addr, shuts the write side,
// and reads every response until EOF.
func exchange(t *testing.T, addr string, raw string, methods []string) []answer {
	t.Helper()
	return exchangeFunc(t, addr, raw, methods, func(resp *http.Response, b []byte) answer {
		var hs []string
		for _, h := range diffHeaders {
			if v := resp.Header.Get(h); v != "" {
				hs = append(hs, h+": "+v)
			}
		}
		a := answer{Code: resp.StatusCode, Headers: strings.Join(hs, "; "), Body: string(b), Close: resp.Close}
		if a.Code >= 400 && a.Code != 404 && a.Code != 405 {
			// Error pages word their reasons differently.
			a.Body, a.Headers = "", ""
		}
		return a
	})
}

// serveStdServer serves std with net/http on a free loopback port until
// the test ends, and waits for its connections to end before the leak
// check: some linger (closeWriteAndWait) after the server's Close.
func serveStdServer(t testing.TB, std *http.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	std.ReadHeaderTimeout = 10 * time.Second
	std.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Done()
		}
	}
	done := make(chan struct{})
	go func() { std.Serve(ln); close(done) }()
	t.Cleanup(func() { std.Close(); <-done; conns.Wait() })
	return ln.Addr().String()
}

// exchangeFunc is exchange with the answers made by conv from each
// response (but 100 Continue) and its body.
func exchangeFunc(t *testing.T, addr string, raw string, methods []string, conv func(*http.Response, []byte) answer) []answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		io.WriteString(c, raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	br := bufio.NewReader(c)
	var as []answer
	for i := 0; ; i++ {
		if _, err := br.Peek(1); err != nil {
			return as // EOF or reset: the server closed
		}
		m := "GET"
		if i < len(methods) {
			m = methods[i]
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil && !resp.Close {
			t.Fatalf("response %d body: %v", i, err)
		}
		if resp.StatusCode == 100 {
			i--
			continue
		}
		as = append(as, conv(resp, b))
	}
}

const host = "Host: example.com\r\n"

// chunkedEcho is the head of a chunked POST to /echo.
const chunkedEcho = "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n"

var diffCases = []struct {
	name    string
	raw     string
	methods []string // of the responses, when not all GET
	// stricter, when set, is what this server answers where it is
	// stricter than net/http, as RFC 9112 allows: "CODE" or "CODE close"
	// per response, joined by ",".
	stricter string
}{
	// Well formed.
	{name: "get", raw: "GET /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "get query", raw: "GET /kv/a?x=1&y HTTP/1.1\r\n" + host + "\r\n"},
	{name: "head", raw: "HEAD /kv/a HTTP/1.1\r\n" + host + "\r\n", methods: []string{"HEAD"}},
	{name: "post length", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhello"},
	{name: "post chunked", raw: chunkedEcho + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"},
	{name: "chunk extensions", raw: chunkedEcho + "5;a=b;c\r\nhello\r\n0;x\r\n\r\n"},
	{name: "chunk uppercase hex", raw: chunkedEcho + "A\r\n0123456789\r\n0\r\n\r\n"},
	{name: "trailers", raw: "GET /trailer HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: tv\r\n\r\n"},
	{name: "te uppercase", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"},
	{name: "pipelined", raw: "GET /kv/a HTTP/1.1\r\n" + host + "\r\nGET /kv/b HTTP/1.1\r\n" + host + "\r\nPOST /echo HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\nokGET /kv/c HTTP/1.1\r\n" + host + "\r\n"},
	{name: "http10", raw: "GET /kv/a HTTP/1.0\r\n\r\nGET /kv/b HTTP/1.0\r\n\r\n"},
	{name: "http10 keep-alive", raw: "GET /kv/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /kv/b HTTP/1.0\r\n\r\nGET /kv/c HTTP/1.0\r\n\r\n"},
	{name: "connection close", raw: "GET /kv/a HTTP/1.1\r\n" + host + "Connection: close\r\n\r\nGET /kv/b HTTP/1.1\r\n" + host + "\r\n"},
	{name: "connection close token list", raw: "GET /kv/a HTTP/1.1\r\n" + host + "Connection: foo, Close\r\n\r\nGET /kv/b HTTP/1.1\r\n" + host + "\r\n"},
	{name: "not found", raw: "GET /nope HTTP/1.1\r\n" + host + "\r\n"},
	{name: "method not allowed", raw: "DELETE /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "head via get", raw: "HEAD /files/x/y HTTP/1.1\r\n" + host + "\r\n", methods: []string{"HEAD"}},
	{name: "multi wildcard", raw: "GET /files/a/b%2Fc HTTP/1.1\r\n" + host + "\r\n"},
	{name: "escaped key", raw: "GET /kv/a%20b HTTP/1.1\r\n" + host + "\r\n"},
	{name: "subtree", raw: "PATCH /dir/x/y HTTP/1.1\r\n" + host + "\r\n"},
	{name: "subtree redirect", raw: "GET /dir HTTP/1.1\r\n" + host + "\r\n"},
	{name: "unclean path", raw: "GET /kv/../kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "double slash", raw: "GET //kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "absolute form no host", raw: "GET http://other.example/kv/a HTTP/1.1\r\n\r\n"},
	{name: "absolute form bad host", raw: "GET http://other.example/kv/a HTTP/1.1\r\nHost: a/b\r\n\r\n"},
	{name: "absolute form http10 no host", raw: "GET http://other.example/kv/a HTTP/1.0\r\n\r\n"},
	{name: "absolute form", raw: "GET http://other.example/kv/a?q HTTP/1.1\r\n" + host + "\r\n"},
	{name: "fragment", raw: "GET /kv/a#frag HTTP/1.1\r\n" + host + "\r\n"},
	{name: "expect continue", raw: "POST /echo HTTP/1.1\r\n" + host + "Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"},
	{name: "bare LF", raw: "GET /kv/a HTTP/1.1\nHost: x\n\n"},
	{name: "header whitespace", raw: "GET /kv/a HTTP/1.1\r\nhost:\t example.com \t\r\nX-A:b\r\n\r\n"},
	{name: "get with body", raw: "GET /kv/a HTTP/1.1\r\n" + host + "Content-Length: 3\r\n\r\nabcGET /kv/b HTTP/1.1\r\n" + host + "\r\n"},
	{name: "length with spaces", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length:  2 \r\n\r\nhi"},
	{name: "crlf after post", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\nhi\r\nGET /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "non-ascii value", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A: \xff\xfe\r\n\r\n"},
	{name: "options star", raw: "OPTIONS * HTTP/1.1\r\n" + host + "\r\n"},
	{name: "get star", raw: "GET * HTTP/1.1\r\n" + host + "\r\n"},
	{name: "http11 minor 2", raw: "GET /kv/a HTTP/1.2\r\n" + host + "\r\n"},
	{name: "put no body", raw: "PUT /kv/a HTTP/1.1\r\n" + host + "Content-Length: 0\r\n\r\n"},
	{name: "incomplete body", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 10\r\n\r\nabc", stricter: "400 close"},
	{name: "incomplete head", raw: "GET /kv/a HTTP/1.1\r\n" + host},

	// Malformed framing: smuggling attempts.
	{name: "cl and te", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /kv/smuggled HTTP/1.1\r\n" + host + "\r\n", stricter: "400 close"},
	{name: "te and cl", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n0\r\n\r\nGET /kv/smuggled HTTP/1.1\r\n" + host + "\r\n", stricter: "400 close"},
	{name: "two lengths differ", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab"},
	{name: "two lengths same", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nab", stricter: "400 close"},
	{name: "length list", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 2, 2\r\n\r\nab"},
	{name: "length negative", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: -1\r\n\r\n"},
	{name: "length plus", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: +2\r\n\r\nab"},
	{name: "length hex", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 0x2\r\n\r\nab"},
	{name: "length empty", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: \r\n\r\n"},
	{name: "length huge", raw: "POST /echo HTTP/1.1\r\n" + host + "Content-Length: 99999999999999999999999\r\n\r\n"},
	{name: "te gzip", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip\r\n\r\n"},
	{name: "te list", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
	{name: "te twice", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	{name: "te xchunked", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"},
	{name: "te space before colon", raw: "POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
	{name: "te http10", raw: "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nhi", stricter: "400 close"},
	{name: "chunk size bad", raw: chunkedEcho + "zz\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk size overflow", raw: chunkedEcho + "fffffffffffffffff1\r\nx\r\n0\r\n\r\n"},
	{name: "chunk size negative", raw: chunkedEcho + "-1\r\nx\r\n0\r\n\r\n"},
	{name: "chunk data too long", raw: chunkedEcho + "2\r\nabc\r\n0\r\n\r\n"},
	{name: "chunk bare LF", raw: chunkedEcho + "2\nab\r\n0\r\n\r\n"},
	{name: "chunk space before extension", raw: chunkedEcho + "5 ;x\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk tab before extension", raw: chunkedEcho + "5\t;x\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk space in size", raw: chunkedEcho + "5 5\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk space before size", raw: chunkedEcho + " 5\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk space after size", raw: chunkedEcho + "5 \t\r\nhello\r\n0 \r\n\r\n"},
	{name: "chunk space in extension", raw: chunkedEcho + "5; a = \"b c\" \r\nhello\r\n0;\r\n\r\n"},
	{name: "chunk control byte in extension", raw: chunkedEcho + "5;a\x01\r\nhello\r\n0\r\n\r\n", stricter: "400 close"},
	{name: "chunk size 16 digits", raw: chunkedEcho + "0000000000000005\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk size 17 digits", raw: chunkedEcho + "00000000000000005\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk CR in line", raw: chunkedEcho + "5;a\rb\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk line too long", raw: chunkedEcho + "5;" + strings.Repeat("a", 4100) + "\r\nhello\r\n0\r\n\r\n"},
	{name: "chunk overhead", raw: chunkedEcho + strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 20) + "0\r\n\r\n"},
	{name: "chunk overhead allowed", raw: chunkedEcho + strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 15) + "0\r\n\r\n"},
	{name: "one-byte chunks", raw: chunkedEcho + strings.Repeat("1\r\nx\r\n", 5000) + "0\r\n\r\n"},
	{name: "trailer too long", raw: "GET /trailer HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: tv\r\n" + strings.Repeat("X-A: "+strings.Repeat("b", 90)+"\r\n", 50) + "\r\n"},
	{name: "chunk size empty", raw: chunkedEcho + "\r\nab\r\n0\r\n\r\n"},

	// Malformed heads.
	{name: "obs-fold", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A: a\r\n b\r\n\r\n", stricter: "400 close"},
	{name: "obs-fold first", raw: "GET /kv/a HTTP/1.1\r\n X-A: b\r\n" + host + "\r\n"},
	{name: "space before colon", raw: "GET /kv/a HTTP/1.1\r\nHost : example.com\r\n\r\n"},
	{name: "nul in value", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A: a\x00b\r\n\r\n"},
	{name: "nul in name", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X\x00A: b\r\n\r\n"},
	{name: "nul in target", raw: "GET /kv/a\x00 HTTP/1.1\r\n" + host + "\r\n"},
	{name: "cr in value", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A: a\rb\r\n\r\n"},
	{name: "no colon", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A\r\n\r\n"},
	{name: "empty name", raw: "GET /kv/a HTTP/1.1\r\n" + host + ": b\r\n\r\n"},
	{name: "no host", raw: "GET /kv/a HTTP/1.1\r\n\r\n"},
	{name: "two hosts", raw: "GET /kv/a HTTP/1.1\r\n" + host + "Host: other\r\n\r\n"},
	{name: "bad host", raw: "GET /kv/a HTTP/1.1\r\nHost: a/b\r\n\r\n"},
	{name: "version junk", raw: "GET /kv/a HTTP/1.x\r\n" + host + "\r\n"},
	{name: "version lower", raw: "GET /kv/a http/1.1\r\n" + host + "\r\n"},
	{name: "version 2", raw: "GET /kv/a HTTP/2.0\r\n" + host + "\r\n"},
	{name: "version 0.9", raw: "GET /kv/a HTTP/0.9\r\n" + host + "\r\n"},
	{name: "version long", raw: "GET /kv/a HTTP/1.10\r\n" + host + "\r\n"},
	{name: "version trailing space", raw: "GET /kv/a HTTP/1.1 \r\n" + host + "\r\n"},
	{name: "no version", raw: "GET /kv/a\r\n" + host + "\r\n"},
	{name: "bad method", raw: "G(T /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "double space", raw: "GET  /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "bad escape", raw: "GET /kv/%zz HTTP/1.1\r\n" + host + "\r\n"},
	{name: "leading crlf", raw: "\r\nGET /kv/a HTTP/1.1\r\n" + host + "\r\n"},
	{name: "empty line only", raw: "\r\n\r\n"},
	{name: "expect other", raw: "POST /echo HTTP/1.1\r\n" + host + "Expect: 200-ok\r\nContent-Length: 1\r\n\r\nx"},
	{name: "long line", raw: "GET /kv/" + strings.Repeat("a", 3*diffHeaderBytes) + " HTTP/1.1\r\n" + host + "\r\n"},
	{name: "long header", raw: "GET /kv/a HTTP/1.1\r\n" + host + "X-A: " + strings.Repeat("b", 3*diffHeaderBytes) + "\r\n\r\n"},
	{name: "many headers", raw: "GET /kv/a HTTP/1.1\r\n" + host + strings.Repeat("X-A: b\r\n", 120) + "\r\n", stricter: "431 close"},
	{name: "body too large", raw: "POST /echo HTTP/1.1\r\n" + host + fmt.Sprintf("Content-Length: %d\r\n\r\n", diffBodyBytes+1) + strings.Repeat("x", diffBodyBytes+1), stricter: "413 close"},
	{name: "error then request", raw: "GET /kv/a HTTP/1.1\r\nHost : x\r\n\r\nGET /kv/b HTTP/1.1\r\n" + host + "\r\n"},
	{name: "pipelined then error", raw: "GET /kv/a HTTP/1.1\r\n" + host + "\r\nGET /kv/b HTTP/1.1\r\n" + host + "X-A: \x01\r\n\r\nGET /kv/c HTTP/1.1\r\n" + host + "\r\n"},
}

func TestDifferential(t *testing.T) {
	addr, _ := serve(t, &web.Server{Handler: webRoutes(), MaxHeaderBytes: diffHeaderBytes + 4096, MaxBodyBytes: diffBodyBytes})
	stdAddr := serveStdServer(t, &http.Server{Handler: stdRoutes(), MaxHeaderBytes: diffHeaderBytes})

	for _, tc := range diffCases {
		t.Run(tc.name, func(t *testing.T) {
			got := exchange(t, addr, tc.raw, tc.methods)
			want := exchange(t, stdAddr, tc.raw, tc.methods)
			if tc.stricter != "" {
				var codes []string
				for _, a := range got {
					s := fmt.Sprint(a.Code)
					if a.Close {
						s += " close"
					}
					codes = append(codes, s)
				}
				if strings.Join(codes, ",") != tc.stricter {
					t.Errorf("stricter case: got %v, want %s (net/http: %v)", got, tc.stricter, want)
				}
				if slices.Equal(got, want) {
					t.Errorf("net/http answers the same (%v): the case is not stricter", want)
				}
				return
			}
			if !slices.Equal(got, want) {
				t.Errorf("answers differ\n web:      %v\n net/http: %v", got, want)
			}
		})
	}
}
