package websocket_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/websocket"
)

// webServer serves GET /ws (WebSocket echo) and GET /plain on a web.Server.
func webServer(t *testing.T, opts ...websocket.Option) string {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	mux.HandleFunc("/ws", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r, opts...)
		if err != nil {
			return
		}
		c.Serve(func(c *websocket.Conn, m websocket.Message) { c.WriteMessage(m.Type, m.Data) }, nil)
	})
	mux.HandleFunc("GET /plain", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("plain") })
	srv := &web.Server{Handler: mux}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ex.Close()
	})
	return l.Addr().String()
}

func TestAcceptKey(t *testing.T) {
	// RFC 6455, section 1.3.
	if got := websocket.AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("AcceptKey = %q", got)
	}
}

func TestUpgrade(t *testing.T) {
	addr := webServer(t)
	c, err := wsclient.Dial(addr, "/ws")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.C.SetDeadline(time.Now().Add(20 * time.Second))
	if err := c.Text("hi"); err != nil {
		t.Fatal(err)
	}
	op, p, err := c.ReadMessage()
	if err != nil || op != wsclient.OpText || string(p) != "hi" {
		t.Fatalf("echo: %d %q %v", op, p, err)
	}
	c.Send(normalClose)
	if code, err := c.ExpectClose(); err != nil || code != 1000 {
		t.Fatalf("close: %d %v", code, err)
	}
}

// TestUpgradeWithFrames: frames sent in the same write as the upgrade
// request (the server's buffered bytes) are served.
func TestUpgradeWithFrames(t *testing.T) {
	addr := webServer(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	req := "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	io.WriteString(nc, req+string(frames([]frame{text("early"), {Fin: true, Op: opPing, Payload: []byte("p")}, normalClose})))
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 101 || res.Header.Get("Sec-WebSocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("answer %s %v", res.Status, res.Header)
	}
	c := &wsclient.Client{C: nc, R: br}
	got := readAll(t, c)
	if want := "text:early pong:p close:1000"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestUpgradeRefused(t *testing.T) {
	addr := webServer(t)
	good := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	cases := []struct {
		name   string
		method string
		h      map[string]string
		status int
		header [2]string
	}{
		{"no upgrade headers", "GET", nil, 400, [2]string{}},
		{"POST", "POST", good, 405, [2]string{"Allow", "GET"}},
		{"no Connection", "GET", with("Connection", ""), 400, [2]string{}},
		{"Connection: keep-alive", "GET", with("Connection", "keep-alive"), 400, [2]string{}},
		{"Upgrade: h2c", "GET", with("Upgrade", "h2c"), 400, [2]string{}},
		{"version 8", "GET", with("Sec-WebSocket-Version", "8"), 400, [2]string{"Sec-WebSocket-Version", "13"}},
		{"no key", "GET", with("Sec-WebSocket-Key", ""), 400, [2]string{}},
		{"short key", "GET", with("Sec-WebSocket-Key", "c2hvcnQ="), 400, [2]string{}},
		{"key not base64", "GET", with("Sec-WebSocket-Key", "!!!!!!!!!!!!!!!!!!!!!!=="), 400, [2]string{}},
		{"foreign origin", "GET", with("Origin", "http://evil.example"), 403, [2]string{}},
		{"origin not a URL", "GET", with("Origin", "::"), 403, [2]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			req := tc.method + " /ws HTTP/1.1\r\nHost: x\r\n"
			for k, v := range tc.h {
				req += k + ": " + v + "\r\n"
			}
			// A second request after the refused one: the connection goes on.
			req += "Content-Length: 0\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n"
			io.WriteString(nc, req)
			br := bufio.NewReader(nc)
			res, err := http.ReadResponse(br, &http.Request{Method: tc.method})
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			if res.StatusCode != tc.status {
				t.Errorf("status %d, want %d", res.StatusCode, tc.status)
			}
			if tc.header[0] != "" && res.Header.Get(tc.header[0]) != tc.header[1] {
				t.Errorf("%s: %q, want %q", tc.header[0], res.Header.Get(tc.header[0]), tc.header[1])
			}
			res, err = http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || string(b) != "plain" {
				t.Errorf("next request: %d %q", res.StatusCode, b)
			}
		})
	}
}

// TestOrigin: the same host is accepted by default, and WithCheckOrigin
// replaces the check.
func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []websocket.Option
		origin string
		status int
	}{
		{"same host", nil, "http://x", 101},
		{"same host, other case", nil, "https://X", 101},
		{"other host", nil, "http://y", 403},
		{"all accepted", []websocket.Option{websocket.WithCheckOrigin(func(string, string) bool { return true })}, "http://y", 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := webServer(t, tc.opts...)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(nc, "GET /ws HTTP/1.1\r\nHost: x\r\nOrigin: "+tc.origin+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
			res, err := http.ReadResponse(bufio.NewReader(nc), &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
		})
	}
}
