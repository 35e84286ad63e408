package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/wsclient"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs a server with two shards on a free loopback port, shut down
// when the test ends.
func start(t *testing.T) (*Server, string) {
	t.Helper()
	return startShards(t, 2)
}

// startShards is start with n shards.
func startShards(t *testing.T, n int) (*Server, string) {
	t.Helper()
	return startWith(t, n, func(*Server) {})
}

// startWith is startShards with setup run on the server before it
// listens.
func startWith(t *testing.T, n int, setup func(*Server)) (*Server, string) {
	t.Helper()
	s := NewServer(n)
	setup(s)
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, s.Addr().String()
}

// client is an HTTP client whose idle connections close with the test.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func do(t *testing.T, c *http.Client, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestKV(t *testing.T) {
	_, addr := start(t)
	c := client(t)
	base := "http://" + addr
	// Enough keys that both shards own some.
	for i := range 20 {
		k := fmt.Sprintf("key%d", i)
		if res, _ := do(t, c, "PUT", base+"/kv/"+k, strings.NewReader("v"+k)); res.StatusCode != 204 {
			t.Fatalf("PUT %s: %d", k, res.StatusCode)
		}
	}
	for i := range 20 {
		k := fmt.Sprintf("key%d", i)
		res, body := do(t, c, "GET", base+"/kv/"+k+"?ignored=1", nil)
		if res.StatusCode != 200 || body != "v"+k || res.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("GET %s: %d %q %q", k, res.StatusCode, body, res.Header.Get("Content-Type"))
		}
		res, body = do(t, c, "HEAD", base+"/kv/"+k, nil)
		if res.StatusCode != 200 || body != "" || res.ContentLength != int64(len("v"+k)) {
			t.Fatalf("HEAD %s: %d %q %d", k, res.StatusCode, body, res.ContentLength)
		}
	}
	cases := []struct {
		method, path string
		body         string
		status       int
		want         string
	}{
		{"GET", "/kv/missing", "", 404, "404 page not found\n"},
		{"HEAD", "/kv/missing", "", 404, ""},
		{"GET", "/kv/", "", 404, "404 page not found\n"},
		{"PUT", "/kv/a%20b", "spaced", 204, ""},
		{"GET", "/kv/a%20b", "", 200, "spaced"},
		{"DELETE", "/kv/key3", "", 204, ""},
		{"GET", "/kv/key3", "", 404, "404 page not found\n"},
		{"DELETE", "/kv/key3", "", 404, "404 page not found\n"},
		{"PATCH", "/kv/key4", "", 405, "Method Not Allowed\n"},
		{"POST", "/echo", "echo me", 200, "echo me"},
		{"POST", "/echo", "", 200, ""},
		{"GET", "/slow/0", "", 200, "slept 0"},
		{"GET", "/slow/25", "", 200, "slept 25"},
		{"GET", "/slow/10001", "", 400, ""},
		{"GET", "/slow/-1", "", 400, ""},
		{"GET", "/slow/abc", "", 400, ""},
		{"GET", "/nowhere", "", 404, "404 page not found\n"},
	}
	for _, tc := range cases {
		res, body := do(t, c, tc.method, base+tc.path, strings.NewReader(tc.body))
		if res.StatusCode != tc.status || (tc.want != "" || tc.status < 300) && body != tc.want {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, res.StatusCode, body, tc.status, tc.want)
		}
		if tc.status == 405 && res.Header.Get("Allow") != "DELETE, GET, HEAD, PUT" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, res.Header.Get("Allow"))
		}
	}
}

// TestPutLimits: a value of 1 MiB is taken, chunked too; one byte more
// is 413 and the connection closes.
func TestPutLimits(t *testing.T) {
	_, addr := start(t)
	c := client(t)
	base := "http://" + addr
	big := bytes.Repeat([]byte("x"), MaxValue)
	if res, _ := do(t, c, "PUT", base+"/kv/big", bytes.NewReader(big)); res.StatusCode != 204 {
		t.Fatalf("PUT 1 MiB: %d", res.StatusCode)
	}
	if res, body := do(t, c, "GET", base+"/kv/big", nil); res.StatusCode != 200 || len(body) != MaxValue {
		t.Fatalf("GET big: %d %d", res.StatusCode, len(body))
	}
	// Chunked: net/http sends a body of unknown length so.
	if res, _ := do(t, c, "PUT", base+"/kv/chunked", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd"))); res.StatusCode != 204 {
		t.Fatalf("chunked PUT: %d", res.StatusCode)
	}
	if _, body := do(t, c, "GET", base+"/kv/chunked", nil); body != "abcd" {
		t.Fatalf("chunked value %q", body)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(nc, "PUT /kv/huge HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", MaxValue+1)
	nc.Write(append(big, 'x'))
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != 413 || !res.Close {
		t.Fatalf("PUT 1 MiB + 1: %d, close %v", res.StatusCode, res.Close)
	}
	// Then the connection closes: EOF, or a reset when the server closed
	// with the rest of the body unread.
	if _, err := br.ReadByte(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after 413: %v, want EOF", err)
	}
	if res, _ := do(t, c, "GET", base+"/kv/huge", nil); res.StatusCode != 404 {
		t.Fatalf("GET huge: %d", res.StatusCode)
	}
}

func TestPage(t *testing.T) {
	_, addr := start(t)
	c := client(t)
	do(t, c, "PUT", "http://"+addr+"/kv/listed", strings.NewReader("1"))
	res, body := do(t, c, "GET", "http://"+addr+"/", nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for _, want := range []string{`id="key"`, `id="value"`, `id="set"`, `id="del"`, "/ws/watch", `data-key="listed"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// Pipelined after the page, a change of a key is not in the page, nor is
// a key it deletes missing from it, whichever shard owns the key: the
// page reads every shard in the order of the connection's requests.
func TestPagePipelined(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			_, addr := startShards(t, shards)
			c := client(t)
			const keys = 8 // on both shards
			for i := range keys {
				do(t, c, "PUT", fmt.Sprintf("http://%s/kv/old%d", addr, i), strings.NewReader("1"))
			}
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			var req strings.Builder
			req.WriteString("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			for i := range keys {
				fmt.Fprintf(&req, "DELETE /kv/old%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				fmt.Fprintf(&req, "PUT /kv/new%d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n2", i)
			}
			if _, err := io.WriteString(nc, req.String()); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(nc)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			page, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				if !bytes.Contains(page, []byte(fmt.Sprintf(`data-key="old%d"`, i))) {
					t.Errorf("the page lacks old%d, deleted after it", i)
				}
				if bytes.Contains(page, []byte(fmt.Sprintf(`data-key="new%d"`, i))) {
					t.Errorf("the page lists new%d, set after it", i)
				}
			}
			for range 2 * keys {
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				if res.StatusCode != 204 {
					t.Fatalf("%s: %d, want 204", res.Request.Method, res.StatusCode)
				}
			}
		})
	}
}

func TestWSEcho(t *testing.T) {
	_, addr := start(t)
	ws, err := wsclient.Dial(addr, "/ws/echo")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.C.SetDeadline(time.Now().Add(20 * time.Second))
	big := bytes.Repeat([]byte{7}, MaxValue)
	ws.Text("hello")
	ws.Binary([]byte{0, 1, 2})
	ws.Binary(big)
	for _, want := range []struct {
		op byte
		n  int
	}{{wsclient.OpText, 5}, {wsclient.OpBinary, 3}, {wsclient.OpBinary, MaxValue}} {
		op, p, err := ws.ReadMessage()
		if err != nil || op != want.op || len(p) != want.n {
			t.Fatalf("echo: %d %d %v, want %d %d", op, len(p), err, want.op, want.n)
		}
	}
	ws.Binary(append(big, 1))
	if code, err := ws.ExpectClose(); err != nil || code != 1009 {
		t.Fatalf("message of 1 MiB + 1: close %d %v, want 1009", code, err)
	}
}

// TestWSWatch: a watcher on each shard's connections sees every change,
// whichever shard owns the key and whichever served the request, in the
// order the changes were answered, with one shard and with two.
func TestWSWatch(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			_, addr := startShards(t, shards)
			var ws []*wsclient.Client
			for range 4 {
				w, err := wsclient.Dial(addr, "/ws/watch")
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				w.C.SetDeadline(time.Now().Add(20 * time.Second))
				ws = append(ws, w)
			}
			// A ping round trip on each: its upgrade is done and it is watching.
			for _, w := range ws {
				w.Send(wsclient.Frame{Fin: true, Op: wsclient.OpPing, Payload: []byte("r")})
				if op, _, err := w.ReadMessage(); err != nil || op != wsclient.OpPong {
					t.Fatalf("pong: %d %v", op, err)
				}
			}
			c := client(t)
			var want []string
			for i := range 6 {
				k := fmt.Sprintf("w%d", i)
				do(t, c, "PUT", "http://"+addr+"/kv/"+k, strings.NewReader("x"))
				want = append(want, "put "+k)
				if i%2 == 1 {
					do(t, c, "DELETE", "http://"+addr+"/kv/"+k, nil)
					want = append(want, "del "+k)
				}
			}
			do(t, c, "DELETE", "http://"+addr+"/kv/w1", nil) // 404: nothing announced
			for i, w := range ws {
				var got []string
				for range want {
					op, p, err := w.ReadMessage()
					if err != nil || op != wsclient.OpText {
						t.Fatalf("watcher %d: %d %v", i, op, err)
					}
					got = append(got, string(p))
				}
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("watcher %d: %q, want %q", i, got, want)
				}
			}
		})
	}
}

// TestShutdownClosesWebSockets: a graceful shutdown sends 1001.
func TestShutdownClosesWebSockets(t *testing.T) {
	s := NewServer(2)
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	ws, err := wsclient.Dial(s.Addr().String(), "/ws/watch")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	defer ws.Close()
	ws.C.SetDeadline(time.Now().Add(20 * time.Second))
	ws.Send(wsclient.Frame{Fin: true, Op: wsclient.OpPing})
	ws.ReadMessage()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	f, err := ws.Read()
	if err != nil || f.Op != wsclient.OpClose || wsclient.CloseCode(f.Payload) != 1001 {
		t.Fatalf("at shutdown: %v %v, want close 1001", f, err)
	}
	ws.Send(wsclient.Frame{Fin: true, Op: wsclient.OpClose, Payload: f.Payload})
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
