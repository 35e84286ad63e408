package web_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

// uploader is a handler of the program's own that takes PUT bodies as a
// stream: it counts their bytes on a goroutine and answers from the loop.
type uploader struct {
	asked *atomic.Int32 // StreamBody's calls
}

func (u uploader) StreamBody(r *web.Request) bool {
	u.asked.Add(1)
	return r.Method() == "PUT"
}

func (u uploader) ServeHTTP(w *web.ResponseWriter, r *web.Request) {
	body := r.BodyStream()
	if body == nil {
		fmt.Fprintf(w, "whole %d %s", len(r.Body()), r.PathValue("id"))
		return
	}
	id := r.PathValue("id")
	w.Later()
	go func() {
		n, err := io.Copy(io.Discard, body)
		w.Executor().Submit(func() {
			fmt.Fprintf(w, "streamed %d %v %s", n, err, id)
			w.End()
		})
	}()
}

// A handler outside the package takes bodies as they arrive through
// BodyStreamer, as the server's Handler or as a route of a Mux, nested or
// not, and is asked once per request whose body has not all come with
// its head, however many pieces it comes in. Bodies it does not stream
// are read whole, as usual, and MaxBodyBytes bounds both.
func TestBodyStreamer(t *testing.T) {
	const big = 1 << 20
	for _, tc := range []struct {
		name  string
		build func(h web.Handler) web.Handler
		id    string
	}{
		{"handler", func(h web.Handler) web.Handler { return h }, ""},
		{"mux route", func(h web.Handler) web.Handler {
			m := web.NewMux()
			m.Handle("/up/{id}", h)
			return m
		}, "7"},
		{"nested mux", func(h web.Handler) web.Handler {
			inner := web.NewMux()
			inner.Handle("/up/{id}", h)
			outer := web.NewMux()
			outer.Handle("/up/", inner)
			return outer
		}, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			srv := &web.Server{Handler: tc.build(uploader{&asked}), MaxBodyBytes: 2 * big}
			addr, _ := serve(t, srv)
			do := func(method string, n int) string {
				req, err := http.NewRequest(method, "http://"+addr+"/up/7", bytes.NewReader(make([]byte, n)))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return fmt.Sprintf("%d %s", resp.StatusCode, b)
			}
			if got, want := do("PUT", big), fmt.Sprintf("200 streamed %d <nil> %s", big, tc.id); got != want {
				t.Errorf("PUT of %d bytes: %q, want %q", big, got, want)
			}
			if got, want := do("POST", big/4), fmt.Sprintf("200 whole %d %s", big/4, tc.id); got != want {
				t.Errorf("POST: %q, want %q", got, want)
			}
			if got, want := do("PUT", 2*big+1), "413 "; !strings.HasPrefix(got, want) {
				t.Errorf("PUT over MaxBodyBytes: %q, want %q...", got, want)
			}
			if asked.Load() != 2 {
				t.Errorf("StreamBody was called %d times for two requests whose bodies came in pieces, want 2", asked.Load())
			}
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// routeGone is a route's handler that empties its Mux when asked whether
// it streams: the route is matched once, by StreamBody, and ServeHTTP
// serves the request with that match.
type routeGone struct {
	mux   *web.Mux
	asked *atomic.Int32
}

func (g routeGone) StreamBody(*web.Request) bool {
	g.asked.Add(1)
	*g.mux = web.Mux{} // no route from now on
	return false
}

func (g routeGone) ServeHTTP(w *web.ResponseWriter, r *web.Request) {
	fmt.Fprintf(w, "%s %s %d", r.Pattern(), r.PathValue("k"), len(r.Body()))
}

func TestMuxMatchesOnceForABody(t *testing.T) {
	mux := web.NewMux()
	var asked atomic.Int32
	mux.Handle("POST /kv/{k}", routeGone{mux, &asked})
	addr, _ := serve(t, &web.Server{Handler: mux})
	const n = 256 << 10 // more than one receive: the server asks before the body is there
	resp, err := http.Post("http://"+addr+"/kv/a%20b", "text/plain", bytes.NewReader(make([]byte, n)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := fmt.Sprintf("%d %s", resp.StatusCode, b), fmt.Sprintf("200 POST /kv/{k} a b %d", n); got != want || asked.Load() != 1 {
		t.Errorf("got %q (StreamBody asked %d times), want %q (asked once, and the route not matched again)", got, asked.Load(), want)
	}
	http.DefaultClient.CloseIdleConnections()
}

// A streamed body read on the loop fails at once instead of waiting for
// the loop.
func TestBodyStreamOnLoop(t *testing.T) {
	var asked atomic.Int32
	h := web.HandlerFunc(func(w *web.ResponseWriter, r *web.Request) {
		body := r.BodyStream()
		if body == nil {
			t.Error("the body was not streamed")
			return
		}
		_, err := body.Read(make([]byte, 10))
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, err)
	})
	srv := &web.Server{Handler: streamAll{h, &asked}}
	addr, _ := serve(t, srv)
	c := dial(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly the start")
	_, b := readResponse(t, bufio.NewReader(c), "POST")
	if !strings.Contains(string(b), "read on the connection's loop") || asked.Load() != 1 {
		t.Errorf("read on the loop: %q (StreamBody asked %d times), want the error that says so (asked once)", b, asked.Load())
	}
	http.DefaultClient.CloseIdleConnections()
}

type streamAll struct {
	web.Handler
	asked *atomic.Int32
}

func (s streamAll) StreamBody(*web.Request) bool { s.asked.Add(1); return true }
