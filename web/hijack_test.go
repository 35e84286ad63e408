package web_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

// TestHijack upgrades a connection after a pipelined request: the first
// response is written before the 101, and the bytes sent right after the
// upgrade request reach the new owner as buffered.
func TestHijack(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /first", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("first") })
	mux.HandleFunc("GET /up", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Upgrade", "echo")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, buffered, err := w.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		c.Write([]byte(strings.ToUpper(string(buffered))))
		var next func([]byte, error)
		next = func(b []byte, err error) {
			if err != nil {
				c.Close()
				return
			}
			c.Write([]byte(strings.ToUpper(string(b))))
			c.Recv().OnComplete(next)
		}
		c.Recv().OnComplete(next)
	})
	srv := &web.Server{Handler: mux}
	addr, _ := serve(t, srv)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nhello")
	resp, b := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || string(b) != "first" {
		t.Fatalf("first: %d %q", resp.StatusCode, b)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "HELLO" {
		t.Fatalf("buffered: %q %v", got, err)
	}
	io.WriteString(c, "more")
	got = got[:4]
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "MORE" {
		t.Fatalf("after: %q %v", got, err)
	}
}

// TestHijackNotFirst: Hijack fails while an earlier response is
// unfinished (a request without Connection: upgrade is not held back).
func TestHijackNotFirst(t *testing.T) {
	var held *web.ResponseWriter
	hijackErr := make(chan error, 1)
	mux := web.NewMux()
	mux.HandleFunc("GET /hold", func(w *web.ResponseWriter, r *web.Request) { w.Later(); held = w })
	mux.HandleFunc("GET /try", func(w *web.ResponseWriter, r *web.Request) {
		_, _, err := w.Hijack()
		hijackErr <- err
		w.WriteString("no")
		held.WriteString("held")
		held.End()
	})
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\nGET /try HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"held", "no"} {
		if _, b := readResponse(t, br, "GET"); string(b) != want {
			t.Fatalf("got %q, want %q", b, want)
		}
	}
	if err := <-hijackErr; err != web.ErrNotFirst {
		t.Fatalf("Hijack: %v, want ErrNotFirst", err)
	}
}

// TestUpgradeWaits: an upgrade request pipelined behind a response that
// finishes later waits for it, parsed (its chunked body decoded once),
// and is dispatched once that response is written.
func TestUpgradeWaits(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /slow", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		r.Executor().Post(func() { w.WriteString("slow"); w.End() })
	})
	mux.HandleFunc("POST /up", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Upgrade", "echo")
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("X-Body", string(r.Body())+"|"+r.Trailer("X-T"))
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, buffered, err := w.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		c.Write([]byte(strings.ToUpper(string(buffered))))
		c.Close()
	})
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"2;x\r\nhi\r\n3\r\n th\r\n0\r\nX-T: t\r\n\r\nhello")
	if resp, b := readResponse(t, br, "GET"); resp.StatusCode != 200 || string(b) != "slow" {
		t.Fatalf("first: %d %q", resp.StatusCode, b)
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	if got := resp.Header.Get("X-Body"); got != "hi th|t" {
		t.Errorf("upgrade request's body and trailer %q, want %q", got, "hi th|t")
	}
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "HELLO" {
		t.Fatalf("buffered: %q %v", got, err)
	}
}
