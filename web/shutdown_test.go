package web_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// hijackRoute serves GET /up by taking the connection over; on is called,
// on the loop, with the connection and the ResponseWriter before Hijack.
func hijackRoute(on func(w *web.ResponseWriter, take func() *netio.Conn)) *web.Mux {
	mux := web.NewMux()
	mux.HandleFunc("GET /up", func(w *web.ResponseWriter, r *web.Request) {
		w.WriteHeader(http.StatusSwitchingProtocols)
		on(w, func() *netio.Conn {
			c, _, err := w.Hijack()
			if err != nil {
				panic(err)
			}
			return c
		})
	})
	return mux
}

// upgraded dials addr and reads the 101 of GET /up.
func upgraded(t *testing.T, addr string) (*bufio.Reader, func(string)) {
	t.Helper()
	c := dial(t, addr)
	io.WriteString(c, "GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "GET"}); err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return br, func(s string) { io.WriteString(c, s) }
}

// TestOnShutdown: Shutdown calls the function a hijacking handler
// registered, on its loop, and waits until the owner stops the
// registration; a registration stopped before is never called.
func TestOnShutdown(t *testing.T) {
	cases := []struct {
		name string
		// stopFirst stops the registration at once.
		stopFirst bool
	}{
		{"told, then waited for", false},
		{"stopped before", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			called := 0
			stopped := make(chan bool, 1)
			srv := &web.Server{}
			srv.Handler = hijackRoute(func(w *web.ResponseWriter, take func() *netio.Conn) {
				var c *netio.Conn
				stop := w.OnShutdown(func() {
					called++
					c.Write([]byte("going\n")) // and close when the peer says so
				})
				c = take()
				if tc.stopFirst {
					stopped <- stop()
					return
				}
				var next func([]byte, error)
				next = func(b []byte, err error) {
					if err != nil || string(b) == "ok" {
						c.Close()
						stopped <- stop()
						return
					}
					c.Recv().OnComplete(next)
				}
				c.Recv().OnComplete(next)
			})
			addr, ex := serve(t, srv)
			br, send := upgraded(t, addr)
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(context.Background()) }()
			if tc.stopFirst {
				if err := <-shut; err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
				if ok := <-stopped; !ok {
					t.Errorf("stop before Shutdown returned false")
				}
				onLoop(t, ex, func() {
					if called != 0 {
						t.Errorf("a stopped registration was called %d times", called)
					}
				})
				return
			}
			if line, err := br.ReadString('\n'); err != nil || line != "going\n" {
				t.Fatalf("read %q, %v; want the owner's goodbye", line, err)
			}
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned (%v) before the owner stopped", err)
			default:
			}
			send("ok")
			expectEOF(t, br)
			if err := <-shut; err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if ok := <-stopped; ok {
				t.Errorf("stop after the call returned true")
			}
			onLoop(t, ex, func() {
				if called != 1 {
					t.Errorf("called %d times, want 1", called)
				}
			})
		})
	}
}

// TestOnShutdownNeverStopped: a registration that is never stopped holds
// Shutdown until its context ends.
func TestOnShutdownNeverStopped(t *testing.T) {
	srv := &web.Server{}
	var stop func() bool
	srv.Handler = hijackRoute(func(w *web.ResponseWriter, take func() *netio.Conn) {
		stop = w.OnShutdown(func() {})
		take()
	})
	addr, ex := serve(t, srv)
	upgraded(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded", err)
	}
	onLoop(t, ex, func() { stop() }) // or the test's own Shutdown waits too
}

// TestOnShutdownDuringShutdown: a registration made once Shutdown has
// begun (a response held across it) is called too.
func TestOnShutdownDuringShutdown(t *testing.T) {
	mux, held, started := holdRoute()
	srv := &web.Server{Handler: mux}
	begun := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(begun) })
	addr, ex := serve(t, srv)
	c := dial(t, addr)
	io.WriteString(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	<-begun // the server is draining
	called := make(chan struct{})
	var stop func() bool
	onLoop(t, ex, func() { stop = held().OnShutdown(func() { close(called) }) })
	<-called
	onLoop(t, ex, func() {
		stop()
		held().WriteString("done")
		held().End()
	})
	if _, b := readResponse(t, bufio.NewReader(c), "GET"); string(b) != "done" {
		t.Fatalf("held response: %q", b)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestRegisterOnShutdown: every function registered starts at Shutdown.
func TestRegisterOnShutdown(t *testing.T) {
	srv := &web.Server{}
	calls := make(chan int, 4)
	for i := range 2 {
		srv.RegisterOnShutdown(func() { calls <- i })
	}
	serve(t, srv)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{<-calls: true, <-calls: true}
	if !got[0] || !got[1] {
		t.Fatalf("called %v, want both", got)
	}
}

// holdRoute serves GET /hold by holding the response (Later): held
// returns it once started is closed.
func holdRoute() (mux *web.Mux, held func() *web.ResponseWriter, started chan struct{}) {
	var w *web.ResponseWriter
	started = make(chan struct{})
	mux = web.NewMux()
	mux.HandleFunc("GET /hold", func(rw *web.ResponseWriter, r *web.Request) {
		rw.Later()
		w = rw
		close(started)
	})
	return mux, func() *web.ResponseWriter { return w }, started
}

// onLoop runs fn on ex's loop and waits for it.
func onLoop(t *testing.T, ex interface{ Submit(func()) error }, fn func()) {
	t.Helper()
	done := make(chan struct{})
	if err := ex.Submit(func() { fn(); close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
}
