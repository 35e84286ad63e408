package main

// The differential test: the same raw HTTP requests and WebSocket frames
// go to examples/webkv (built from the repository and run as a process)
// and to this twin, and their answers are compared case by case: status,
// the header fields a client acts on, the body, and whether the
// connection stays open. Where RFC 6455 is stricter than gorilla/websocket
// (text that is not UTF-8), the case says what webkv must answer instead.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/wsclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startWebkv builds examples/webkv and runs it on a free port with two
// shards; it is stopped with SIGINT when the test ends, and must exit 0.
func startWebkv(t *testing.T, args ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "webkv")
	build := exec.Command("go", "build", "-o", exe, "./examples/webkv")
	build.Dir = filepath.Join("..", "..", "..") // the repository's root module
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, append([]string{"-addr", "127.0.0.1:0", "-shards", "2"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	_, rest, ok := strings.Cut(line, "listening on http://")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("webkv said %q: %v", line, err)
	}
	addr, _, _ := strings.Cut(rest, " ")
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		go io.Copy(io.Discard, br)
		if err := cmd.Wait(); err != nil {
			t.Errorf("webkv after SIGINT: %v", err)
		}
	})
	return addr
}

// startTwin serves the twin in this process.
func startTwin(t *testing.T, static string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newTwin(static)}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// answer is what a client sees of one response.
type answer struct {
	Status int
	Header map[string]string
	Body   string
	Close  bool
}

var compared = []string{"Content-Type", "Content-Length", "Allow", "Location", "Sec-Websocket-Version", "X-Content-Type-Options"}

// exchange sends raw on a new connection, reads n responses to requests
// of the given methods, then sends a probe request: open says whether the
// connection still answers.
func exchange(t *testing.T, addr, raw string, methods []string, body bool) (as []answer, open bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(nc, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	for _, m := range methods {
		res, err := http.ReadResponse(br, &http.Request{Method: m})
		if err != nil {
			t.Fatalf("response %d: %v", len(as)+1, err)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("body %d: %v", len(as)+1, err)
		}
		a := answer{Status: res.StatusCode, Header: map[string]string{}, Close: res.Close}
		if body {
			a.Body = string(b)
		}
		for _, h := range compared {
			if !body && (h == "Content-Length" || h == "X-Content-Type-Options") {
				continue
			}
			if v := res.Header.Get(h); v != "" {
				a.Header[h] = v
			}
		}
		as = append(as, a)
		if res.Close {
			return as, false
		}
	}
	if _, err := io.WriteString(nc, "GET /kv/probe HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return as, false
	}
	_, err = http.ReadResponse(br, &http.Request{Method: "GET"})
	return as, err == nil
}

func req(method, target string, headers ...string) string {
	s := method + " " + target + " HTTP/1.1\r\nHost: x\r\n"
	for _, h := range headers {
		s += h + "\r\n"
	}
	return s + "\r\n"
}

func put(target, body string) string {
	return fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
}

const upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="

func TestHTTP(t *testing.T) {
	spindle, twin := startWebkv(t), startTwin(t, "")
	big := strings.Repeat("b", 1<<20)
	cases := []struct {
		name    string
		raw     string
		methods []string
		noBody  bool // bodies (and so their lengths) differ in wording only: the page, 413
	}{
		{"put", put("/kv/d1", "hello"), []string{"PUT"}, false},
		{"get", req("GET", "/kv/d1"), []string{"GET"}, false},
		{"head", req("HEAD", "/kv/d1"), []string{"HEAD"}, false},
		{"query ignored", req("GET", "/kv/d1?x=y"), []string{"GET"}, false},
		{"missing", req("GET", "/kv/nope"), []string{"GET"}, false},
		{"head missing", req("HEAD", "/kv/nope"), []string{"HEAD"}, false},
		{"empty key", req("GET", "/kv/"), []string{"GET"}, false},
		{"escaped key", put("/kv/a%2Fb", "s") + req("GET", "/kv/a%2Fb") + req("GET", "/kv/a/b"), []string{"PUT", "GET", "GET"}, false},
		{"delete twice", req("DELETE", "/kv/d1") + req("DELETE", "/kv/d1") + req("GET", "/kv/d1"), []string{"DELETE", "DELETE", "GET"}, false},
		{"patch", req("PATCH", "/kv/d1"), []string{"PATCH"}, false},
		{"post kv", req("POST", "/kv/d1", "Content-Length: 0"), []string{"POST"}, false},
		{"put chunked", "PUT /kv/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" + req("GET", "/kv/c"), []string{"PUT", "GET"}, false},
		{"put 1 MiB", put("/kv/big", big) + req("HEAD", "/kv/big"), []string{"PUT", "HEAD"}, false},
		{"put 1 MiB + 1", put("/kv/huge", big+"x"), []string{"PUT"}, true},
		{"echo", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", []string{"POST"}, false},
		{"echo empty", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", []string{"POST"}, false},
		{"echo chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n", []string{"POST"}, false},
		{"echo GET", req("GET", "/echo"), []string{"GET"}, false},
		{"slow", req("GET", "/slow/1") + req("GET", "/slow/0"), []string{"GET", "GET"}, false},
		{"slow bad", req("GET", "/slow/abc") + req("GET", "/slow/10001") + req("GET", "/slow/-1"), []string{"GET", "GET", "GET"}, false},
		{"not found", req("GET", "/nothing/here"), []string{"GET"}, false},
		{"pipelined", put("/kv/p", "1") + req("GET", "/kv/p") + req("DELETE", "/kv/p") + req("GET", "/kv/p"), []string{"PUT", "GET", "DELETE", "GET"}, false},
		{"http/1.0", "GET /kv/c HTTP/1.0\r\n\r\n", []string{"GET"}, false},
		{"connection close", req("GET", "/kv/c", "Connection: close"), []string{"GET"}, false},
		{"unclean path", req("GET", "/kv/../echo"), []string{"GET"}, false},
		{"page", req("GET", "/"), []string{"GET"}, true},
		{"ws without upgrade", req("GET", "/ws/echo"), []string{"GET"}, false},
		{"ws version 8", req("GET", "/ws/echo", strings.Replace(upgrade, "Version: 13", "Version: 8", 1)), []string{"GET"}, false},
		{"ws bad key", req("GET", "/ws/echo", strings.Replace(upgrade, "dGhlIHNhbXBsZSBub25jZQ==", "c2hvcnQ=", 1)), []string{"GET"}, false},
		{"ws no Connection", req("GET", "/ws/watch", strings.Replace(upgrade, "Connection: Upgrade", "Connection: keep-alive", 1)), []string{"GET"}, false},
		{"ws foreign origin", req("GET", "/ws/echo", upgrade, "Origin: http://elsewhere.example"), []string{"GET"}, false},
		{"ws POST", req("POST", "/ws/echo", "Content-Length: 0"), []string{"POST"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, aOpen := exchange(t, spindle, tc.raw, tc.methods, !tc.noBody)
			b, bOpen := exchange(t, twin, tc.raw, tc.methods, !tc.noBody)
			if fmt.Sprint(a) != fmt.Sprint(b) || aOpen != bOpen {
				t.Errorf("webkv: %+v open %v\ntwin:  %+v open %v", a, aOpen, b, bOpen)
			}
		})
	}
}

// wsRun upgrades path on a new connection, sends frames and returns what
// the server sends back up to its close frame, and whether it then closed
// the connection.
func wsRun(t *testing.T, addr, path string, raw []byte) (seen []string, closed bool) {
	t.Helper()
	c, err := wsclient.Dial(addr, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.C.SetDeadline(time.Now().Add(30 * time.Second))
	// Send while reading: a server may refuse a message from its header
	// (1009) and close with the rest unread, which resets the connection
	// under a writer that is still sending; the reader has its close frame
	// by then.
	sent := make(chan error, 1)
	go func() { sent <- c.SendRaw(raw) }()
	defer func() {
		if err := <-sent; err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("sending the frames: %v", err)
		}
	}()
	for {
		f, err := c.Read()
		if err != nil {
			return append(seen, "error"), false
		}
		s := fmt.Sprintf("%d:%d:%q", f.Op, len(f.Payload), f.Payload[:min(len(f.Payload), 16)])
		if f.Op == wsclient.OpClose {
			s = fmt.Sprintf("close:%d", wsclient.CloseCode(f.Payload))
		}
		seen = append(seen, s)
		if f.Op == wsclient.OpClose {
			break
		}
	}
	_, err = io.Copy(io.Discard, c.R)
	return seen, err == nil || errors.Is(err, syscall.ECONNRESET)
}

func frames(fs ...wsclient.Frame) []byte {
	var b []byte
	for _, f := range fs {
		b = wsclient.AppendFrame(b, f, true, [4]byte{9, 8, 7, 6})
	}
	return b
}

type fr = wsclient.Frame

func TestWebSocket(t *testing.T) {
	spindle, twin := startWebkv(t), startTwin(t, "")
	closeOK := fr{Fin: true, Op: wsclient.OpClose, Payload: wsclient.ClosePayload(1000, "")}
	big := bytes.Repeat([]byte("z"), 1<<20)
	cases := []struct {
		name string
		raw  []byte
		rfc  string // what webkv must answer where RFC 6455 is stricter than the twin
	}{
		{"text", frames(fr{Fin: true, Op: 1, Payload: []byte("hi")}, closeOK), ""},
		{"binary", frames(fr{Fin: true, Op: 2, Payload: []byte{0, 1, 2}}, closeOK), ""},
		{"1 MiB", frames(fr{Fin: true, Op: 2, Payload: big}, closeOK), ""},
		{"1 MiB + 1", frames(fr{Fin: true, Op: 2, Payload: append(big, 1)}), ""},
		{"fragments over 1 MiB", frames(fr{Op: 2, Payload: big}, fr{Fin: true, Op: 0, Payload: []byte{1}}), ""},
		{"fragmented", frames(fr{Op: 1, Payload: []byte("a")}, fr{Op: 0, Payload: []byte("b")}, fr{Fin: true, Op: 0, Payload: []byte("c")}, closeOK), ""},
		{"ping between fragments", frames(fr{Op: 1, Payload: []byte("a")}, fr{Fin: true, Op: 9, Payload: []byte("p")}, fr{Fin: true, Op: 0, Payload: []byte("b")}, closeOK), ""},
		{"ping", frames(fr{Fin: true, Op: 9, Payload: []byte("hello")}, closeOK), ""},
		{"pong", frames(fr{Fin: true, Op: 10, Payload: []byte("x")}, fr{Fin: true, Op: 1, Payload: []byte("after")}, closeOK), ""},
		{"close empty", frames(fr{Fin: true, Op: 8}), ""},
		{"close 4000", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(4000, "x")}), ""},
		{"close 1005", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(1005, "")}), ""},
		{"close 1006", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(1006, "")}), ""},
		{"close 1015", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(1015, "")}), ""},
		{"close 999", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(999, "")}), ""},
		{"close 1 byte", frames(fr{Fin: true, Op: 8, Payload: []byte{3}}), "close:1002"}, // section 5.5.1; gorilla answers 1005
		{"ping 126", frames(fr{Fin: true, Op: 9, Payload: bytes.Repeat([]byte("p"), 126)}), ""},
		{"fragmented ping", frames(fr{Op: 9, Payload: []byte("p")}), ""},
		{"rsv1", frames(fr{Fin: true, Rsv: 0x40, Op: 1, Payload: []byte("x")}), ""},
		{"opcode 3", frames(fr{Fin: true, Op: 3}), ""},
		{"continuation first", frames(fr{Fin: true, Op: 0, Payload: []byte("x")}), ""},
		{"text in fragments", frames(fr{Op: 1, Payload: []byte("a")}, fr{Fin: true, Op: 1, Payload: []byte("b")}), ""},
		{"unmasked", wsclient.AppendFrame(nil, fr{Fin: true, Op: 1, Payload: []byte("x")}, false, [4]byte{}), ""},
		// Section 8.1: gorilla does not check received text and echoes it.
		{"invalid utf-8", frames(fr{Fin: true, Op: 1, Payload: []byte{0xff, 'a'}}, closeOK), "close:1007"},
		{"invalid utf-8 across fragments", frames(fr{Op: 1, Payload: []byte("\xce\xba\xe1\xbd")}, fr{Fin: true, Op: 0, Payload: []byte("\xb9\xcf\x83\xed\xa0\x80")}, closeOK), "close:1007"},
		{"close reason not utf-8", frames(fr{Fin: true, Op: 8, Payload: wsclient.ClosePayload(1000, "\xff")}), "close:1007"}, // section 8.1, as Autobahn 7.5.1; gorilla answers 1002
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, aClosed := wsRun(t, spindle, "/ws/echo", tc.raw)
			b, bClosed := wsRun(t, twin, "/ws/echo", tc.raw)
			if !aClosed || !bClosed {
				t.Errorf("after the close frame: webkv closed %v, twin closed %v", aClosed, bClosed)
			}
			if tc.rfc != "" {
				if strings.Join(a, " ") != tc.rfc {
					t.Errorf("webkv: %q, want %q (RFC 6455; the twin answers %q)", a, tc.rfc, b)
				}
				return
			}
			if strings.Join(a, " ") != strings.Join(b, " ") {
				t.Errorf("webkv: %q\ntwin:  %q", a, b)
			}
		})
	}
}

// TestWatch: the watchers of both see the same lines for the same
// changes, made over several connections (so on both shards of webkv).
func TestWatch(t *testing.T) {
	for name, addr := range map[string]string{"webkv": startWebkv(t), "twin": startTwin(t, "")} {
		t.Run(name, func(t *testing.T) {
			w, err := wsclient.Dial(addr, "/ws/watch")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.C.SetDeadline(time.Now().Add(30 * time.Second))
			w.Send(fr{Fin: true, Op: wsclient.OpPing, Payload: []byte("ready")})
			if op, _, err := w.ReadMessage(); err != nil || op != wsclient.OpPong {
				t.Fatalf("pong: %d %v", op, err)
			}
			var want []string
			for i := range 4 {
				k := fmt.Sprintf("w%d", i)
				exchange(t, addr, put("/kv/"+k, "v"), []string{"PUT"}, true)
				exchange(t, addr, req("DELETE", "/kv/"+k), []string{"DELETE"}, true)
				want = append(want, "put "+k, "del "+k)
			}
			var got []string
			for range want {
				_, p, err := w.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(p))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		})
	}
}

// TestStatic compares /static/ with -static DIR: webkv's file server
// against http.FileServer in the twin, over the same directory (the
// answers' bodies byte for byte; multipart ranges are web's differential
// test's, their boundaries being random).
func TestStatic(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.txt": "hello", "page.html": "<p>x</p>", "noext": "plain text\n",
		"big.bin": strings.Repeat("0123456789abcdef", 1<<16), "site/index.html": "<h1>i</h1>", "dir/b.txt": "b",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spindle, twin := startWebkv(t, "-static", dir), startTwin(t, dir)
	plain := startWebkv(t)
	for _, tc := range []struct {
		name    string
		raw     string
		methods []string
	}{
		{"file", req("GET", "/static/a.txt"), []string{"GET"}},
		{"html", req("GET", "/static/page.html"), []string{"GET"}},
		{"sniffed", req("GET", "/static/noext"), []string{"GET"}},
		{"big", req("GET", "/static/big.bin"), []string{"GET"}},
		{"head", req("HEAD", "/static/big.bin"), []string{"HEAD"}},
		{"range", req("GET", "/static/big.bin", "Range: bytes=1000-500000"), []string{"GET"}},
		{"range past end", req("GET", "/static/a.txt", "Range: bytes=10-20"), []string{"GET"}},
		{"range malformed", req("GET", "/static/a.txt", "Range: bytes=x"), []string{"GET"}},
		{"not modified", req("GET", "/static/a.txt", "If-None-Match: *"), []string{"GET"}},
		{"precondition failed", req("GET", "/static/a.txt", "If-Match: \"x\""), []string{"GET"}},
		{"index", req("GET", "/static/site/"), []string{"GET"}},
		{"index redirect", req("GET", "/static/site/index.html"), []string{"GET"}},
		{"directory redirect", req("GET", "/static/dir"), []string{"GET"}},
		{"listing", req("GET", "/static/dir/"), []string{"GET"}},
		{"root listing", req("GET", "/static/"), []string{"GET"}},
		{"missing", req("GET", "/static/nope"), []string{"GET"}},
		{"dotdot", req("GET", "/static/../../etc/passwd"), []string{"GET"}},
		{"dotdot escaped", req("GET", "/static/%2e%2e/%2e%2e/etc/passwd"), []string{"GET"}},
		{"put", req("PUT", "/static/a.txt", "Content-Length: 0"), []string{"PUT"}},
		{"pipelined", req("GET", "/static/big.bin") + req("GET", "/static/a.txt") + req("HEAD", "/static/dir"), []string{"GET", "GET", "HEAD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, aOpen := exchange(t, spindle, tc.raw, tc.methods, true)
			b, bOpen := exchange(t, twin, tc.raw, tc.methods, true)
			if fmt.Sprint(a) != fmt.Sprint(b) || aOpen != bOpen {
				t.Errorf("webkv: %.500v open %v\ntwin:  %.500v open %v", a, aOpen, b, bOpen)
			}
		})
	}
	if a, _ := exchange(t, plain, req("GET", "/static/a.txt"), []string{"GET"}, true); a[0].Status != 404 {
		t.Errorf("without -static: %+v, want 404", a[0])
	}
}
