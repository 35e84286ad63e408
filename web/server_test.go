package web_test

import (
	"bufio"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

func TestServeBasic(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /hello/{name}", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("hello, " + r.PathValue("name"))
	})
	mux.HandleFunc("POST /echo", func(w *web.ResponseWriter, r *web.Request) {
		w.Write(r.Body())
	})
	mux.HandleFunc("GET /slow/{ms}", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		ms := r.PathValue("ms")
		var d int
		fmt.Sscan(ms, &d)
		msg := "slept " + ms
		r.Executor().AfterFunc(time.Duration(d)*time.Millisecond, func() {
			w.WriteString(msg)
			w.End()
		})
	})
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	// Pipelined: a slow one first, then fast ones; order must hold.
	io.WriteString(c, "GET /slow/30 HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /hello/bob HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"+
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"+
		"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"+
		"PUT /hello/bob HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	want := []struct {
		code int
		body string
	}{{200, "slept 30"}, {200, "hello, bob"}, {200, "abcde"}, {200, "abcde"}, {404, "404 page not found\n"}, {405, "Method Not Allowed\n"}}
	for i, wt := range want {
		resp, b := readResponse(t, br, "GET")
		if resp.StatusCode != wt.code || string(b) != wt.body {
			t.Errorf("response %d: %d %q, want %d %q", i, resp.StatusCode, b, wt.code, wt.body)
		}
		if wt.code == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("Allow = %q", resp.Header.Get("Allow"))
		}
	}
	// A malformed request: 400 and close.
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n")
	resp, _ := readResponse(t, br, "GET")
	if resp.StatusCode != 400 || !resp.Close {
		t.Errorf("obs-fold: %d close=%v", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after 400: %v, want EOF", err)
	}
}

// TestHandlerPanic: a panic in a handler closes its connection and
// reaches the executor's panic handler; the server goes on serving.
func TestHandlerPanic(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /boom", func(w *web.ResponseWriter, r *web.Request) { panic("boom") })
	mux.HandleFunc("GET /ok", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("ok") })
	panics := make(chan any, 1)
	ex := executor.New(executor.WithPanicHandler(func(v any) { panics <- v }))
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &web.Server{Handler: mux}
	srv.Serve(l)
	defer srv.Close()
	c := dial(t, l.Addr().String())
	io.WriteString(c, "GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := bufio.NewReader(c).ReadByte(); err != io.EOF {
		t.Fatalf("after a panic: %v, want EOF", err)
	}
	if v := <-panics; fmt.Sprint(v) != "boom" {
		t.Fatalf("panic handler got %v", v)
	}
	c = dial(t, l.Addr().String())
	io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, b := readResponse(t, bufio.NewReader(c), "GET"); string(b) != "ok" {
		t.Fatalf("got %q", b)
	}
}
