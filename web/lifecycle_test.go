package web_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/web"
)

// expectEOF reads c until EOF (the server closed it), failing on bytes.
func expectEOF(t *testing.T, br *bufio.Reader) {
	t.Helper()
	b, err := br.ReadByte()
	if err != io.EOF {
		t.Fatalf("read %q, %v; want EOF", b, err)
	}
}

func TestTimeouts(t *testing.T) {
	srv := &web.Server{Handler: webRoutes(), IdleTimeout: 40 * time.Millisecond, ReadHeaderTimeout: 40 * time.Millisecond, BodyReadTimeout: 40 * time.Millisecond}
	addr, _ := serve(t, srv)
	cases := map[string]string{
		"idle after a request": "GET /kv/a HTTP/1.1\r\nHost: x\r\n\r\n",
		"idle from the start":  "",
		"head never ends":      "GET /kv/a HTTP/1.1\r\nHost: x\r\n",
		"body never ends":      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, raw)
			br := bufio.NewReader(c)
			if strings.HasSuffix(raw, "\r\n\r\n") {
				readResponse(t, br, "GET")
			}
			expectEOF(t, br)
		})
	}
}

func TestLimits(t *testing.T) {
	srv := &web.Server{Handler: webRoutes(), MaxHeaderBytes: 1024, MaxHeaders: 10, MaxBodyBytes: 100}
	addr, _ := serve(t, srv)
	cases := []struct {
		name, raw string
		code      int
	}{
		{"long line", "GET /kv/" + strings.Repeat("a", 2000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431},
		{"long head in pieces", "GET /kv/a HTTP/1.1\r\n" + strings.Repeat("X-A: 0123456789\r\n", 9) + "X-B: " + strings.Repeat("b", 900) + "\r\n\r\n", 431},
		{"many headers", "GET /kv/a HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: y\r\n", 10) + "\r\n", 431},
		{"length over", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n", 413},
		{"chunked over", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + strings.Repeat("a", 64) + "\r\n40\r\n" + strings.Repeat("a", 64) + "\r\n0\r\n\r\n", 413},
		{"at the limits", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("a", 100), 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, tc.raw)
			br := bufio.NewReader(c)
			resp, _ := readResponse(t, br, "POST")
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if tc.code != 200 {
				if !resp.Close {
					t.Errorf("no Connection: close")
				}
				expectEOF(t, br)
			}
		})
	}
}

func TestExpectContinue(t *testing.T) {
	addr, _ := serve(t, &web.Server{Handler: webRoutes(), MaxBodyBytes: 100})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v; want 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	if _, b := readResponse(t, br, "POST"); string(b) != "hello" {
		t.Fatalf("body %q", b)
	}
	// Too large: 413 at once, no 100.
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 500\r\n\r\n")
	if resp, _ := readResponse(t, br, "POST"); resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

func TestStreamingResponses(t *testing.T) {
	mux := web.NewMux()
	mux.HandleFunc("GET /stream", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteString("part1,")
		w.Flush()
		w.Write([]byte(strings.Repeat("x", 10000)))
	})
	mux.HandleFunc("GET /declared", func(w *web.ResponseWriter, r *web.Request) {
		w.Header().Set("Content-Length", "5")
		w.WriteString("12345")
		if _, err := w.WriteString("6"); err != web.ErrContentLength {
			t.Errorf("write past Content-Length: %v", err)
		}
	})
	addr, _ := serve(t, &web.Server{Handler: mux})
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /stream "+proto+"\r\nHost: x\r\n\r\n")
		resp, b := readResponse(t, br, "GET")
		if len(b) != 6+10000 {
			t.Errorf("%s: %d bytes", proto, len(b))
		}
		chunked := len(resp.TransferEncoding) > 0
		if chunked != (proto == "HTTP/1.1") {
			t.Errorf("%s: chunked = %v", proto, chunked)
		}
		if proto == "HTTP/1.0" {
			expectEOF(t, br)
		}
	}
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /declared HTTP/1.1\r\nHost: x\r\n\r\nHEAD /declared HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, b := readResponse(t, br, "GET"); string(b) != "12345" || resp.ContentLength != 5 {
		t.Errorf("declared: %q %d", b, resp.ContentLength)
	}
	if resp, b := readResponse(t, br, "HEAD"); len(b) != 0 || resp.ContentLength != 5 {
		t.Errorf("HEAD declared: %q %d", b, resp.ContentLength)
	}
}

// TestShutdown: an in-flight request is answered (with Connection:
// close), an idle connection is closed, and new connections are refused.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	mux, held, started := holdRoute()
	srv := &web.Server{Handler: mux}
	addr, ex := serve(t, srv)
	idle := dial(t, addr)
	busy := dial(t, addr)
	io.WriteString(busy, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	expectEOF(t, bufio.NewReader(idle))
	go func() {
		<-release
		ex.Submit(func() { held().WriteString("late"); held().End() })
	}()
	close(release)
	br := bufio.NewReader(busy)
	resp, b := readResponse(t, br, "GET")
	if string(b) != "late" || !resp.Close {
		t.Fatalf("in flight: %q close=%v", b, resp.Close)
	}
	expectEOF(t, br)
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("dial after Shutdown succeeded")
	}
}

// TestShutdownTimeout: a request that never finishes makes Shutdown wait
// until its ctx ends, then close.
func TestShutdownTimeout(t *testing.T) {
	mux := web.NewMux()
	started := make(chan struct{})
	mux.HandleFunc("GET /never", func(w *web.ResponseWriter, r *web.Request) { w.Later(); close(started) })
	srv := &web.Server{Handler: mux}
	addr, _ := serve(t, srv)
	c := dial(t, addr)
	io.WriteString(c, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	expectEOF(t, bufio.NewReader(c))
}

// TestServeGroup serves from every shard of a group; each connection's
// requests run on the loop of its shard.
func TestServeGroup(t *testing.T) {
	g := shard.New(2)
	g.Start()
	defer g.Close()
	mux := web.NewMux()
	mux.HandleFunc("GET /where", func(w *web.ResponseWriter, r *web.Request) {
		if !r.Executor().OnLoop() {
			t.Error("handler off its loop")
		}
		w.WriteString("ok")
	})
	srv := &web.Server{Handler: mux}
	ls, err := srv.ServeGroup(g, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 {
		t.Fatalf("%d listeners", len(ls))
	}
	addr := ls[0].Addr().String()
	for range 8 {
		c := dial(t, addr)
		io.WriteString(c, "GET /where HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, b := readResponse(t, bufio.NewReader(c), "GET"); string(b) != "ok" {
			t.Fatalf("got %q", b)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownAfterExecutorClose: Shutdown returns when the executor
// closed first (netio closed the connections with it).
func TestShutdownAfterExecutorClose(t *testing.T) {
	srv := &web.Server{Handler: webRoutes()}
	addr, ex := serve(t, srv)
	c := dial(t, addr)
	io.WriteString(c, "GET /kv/a HTTP/1.1\r\nHost: x\r\n\r\n")
	readResponse(t, bufio.NewReader(c), "GET")
	ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestShutdownWhileExecutorCloses: Shutdown waits for a request that
// never finishes; the executor's Close ends the wait, since nothing is
// left on a closed loop to wait for.
func TestShutdownWhileExecutorCloses(t *testing.T) {
	mux := web.NewMux()
	started := make(chan struct{})
	mux.HandleFunc("GET /never", func(w *web.ResponseWriter, r *web.Request) { w.Later(); close(started) })
	mux.HandleFunc("GET /ok", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("ok") })
	srv := &web.Server{Handler: mux}
	addr, ex := serve(t, srv)
	c := dial(t, addr)
	idle := dial(t, addr)
	io.WriteString(idle, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	idleR := bufio.NewReader(idle)
	readResponse(t, idleR, "GET") // accepted and served: Shutdown will find it idle
	io.WriteString(c, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	expectEOF(t, idleR) // Shutdown's drain has run on the loop
	ex.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return after the executor closed")
	}
}

// TestChunkOverheadRefused: a client that sends one-byte chunks with long
// extensions (framing that costs the server far more than the data) gets
// a 400 after the first few, and the connection closes; one that sends
// one-byte chunks without them has its body read.
func TestChunkOverheadRefused(t *testing.T) {
	addr, _ := serve(t, &web.Server{Handler: webRoutes()})
	const head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	t.Run("long extensions", func(t *testing.T) {
		c := dial(t, addr)
		// Up to 4 MB of framing for 1,000 bytes of data, written while
		// the answer is read.
		chunk := "1;" + strings.Repeat("e", 4000) + "\r\nx\r\n"
		wrote := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, head)
			for i := 0; i < 1000 && err == nil; i++ {
				_, err = io.WriteString(c, chunk)
			}
			wrote <- err
		}()
		br := bufio.NewReader(c)
		resp, body := readResponse(t, br, "POST")
		if resp.StatusCode != 400 || !strings.Contains(string(body), "too much non-data") {
			t.Errorf("answer %d %q, want 400 for too much non-data", resp.StatusCode, body)
		}
		if !resp.Close {
			t.Error("the answer does not close the connection")
		}
		expectEOF(t, br)
		c.Close() // ends the writer, if it is still writing
		<-wrote
	})
	t.Run("one-byte chunks", func(t *testing.T) {
		c := dial(t, addr)
		const n = 100_000
		wrote := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, head+strings.Repeat("1\r\nx\r\n", n)+"0\r\n\r\n")
			wrote <- err
		}()
		resp, body := readResponse(t, bufio.NewReader(c), "POST")
		if resp.StatusCode != 200 || string(body) != strings.Repeat("x", n) {
			t.Errorf("answer %d, %d bytes; want 200 and the %d bytes sent", resp.StatusCode, len(body), n)
		}
		if err := <-wrote; err != nil {
			t.Error(err)
		}
	})
}

// TestDate: every response carries a Date of the time it was written,
// those to pipelined requests (which share a reading of the clock) and
// one finished later alike.
func TestDate(t *testing.T) {
	mux := webRoutes()
	mux.HandleFunc("GET /later", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		r.Executor().Post(func() { w.WriteString("later"); w.End() })
	})
	addr, _ := serve(t, &web.Server{Handler: mux})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	before := time.Now().Truncate(time.Second)
	io.WriteString(c, strings.Repeat("GET /kv/a HTTP/1.1\r\nHost: x\r\n\r\n", 3)+"GET /later HTTP/1.1\r\nHost: x\r\n\r\n")
	for i := range 4 {
		resp, _ := readResponse(t, br, "GET")
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil || d.Before(before) || d.After(time.Now()) {
			t.Errorf("response %d: Date %q (%v), want between %v and now", i, resp.Header.Get("Date"), err, before)
		}
	}
}
