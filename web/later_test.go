package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/web"
)

// TestLaterFromTaskAndShard: responses finished from a spawned task (after
// an Await) and from a shard.Call's continuation, pipelined behind and
// before synchronous ones, leave in request order.
func TestLaterFromTaskAndShard(t *testing.T) {
	g := shard.New(2)
	g.Start()
	defer g.Close()
	counts := shard.NewSharded(g, func(int) *int { return new(int) })
	mux := web.NewMux()
	mux.HandleFunc("GET /task", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		future.Spawn(r.Executor(), func(ctx context.Context) (struct{}, error) {
			if _, err := future.Sleep(r.Executor(), 5*time.Millisecond).Await(ctx); err != nil {
				return struct{}{}, err
			}
			w.WriteString("task")
			w.End()
			return struct{}{}, nil
		})
	})
	mux.HandleFunc("GET /shard", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		// The count lives on shard 1, whatever shard serves the request.
		shard.Invoke(counts, 1, func(n *int) (int, error) { *n++; return *n, nil }).OnComplete(func(n int, err error) {
			fmt.Fprintf(w, "shard %d", n)
			w.End()
		})
	})
	mux.HandleFunc("GET /sync", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("sync") })
	srv := &web.Server{Handler: mux}
	ls, err := srv.ServeGroup(g, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := dial(t, ls[0].Addr().String())
	io.WriteString(c, "GET /task HTTP/1.1\r\nHost: x\r\n\r\nGET /sync HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /shard HTTP/1.1\r\nHost: x\r\n\r\nGET /shard HTTP/1.1\r\nHost: x\r\n\r\nGET /sync HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for _, want := range []string{"task", "sync", "shard 1", "shard 2", "sync"} {
		if _, b := readResponse(t, br, "GET"); string(b) != want {
			t.Fatalf("got %q, want %q", b, want)
		}
	}
}

// TestResponseWriterOffLoopPanics: a ResponseWriter used from a goroutine
// that does not hold the loop panics, naming Submit, instead of racing
// with the server; the response is then finished from the loop.
func TestResponseWriterOffLoopPanics(t *testing.T) {
	mux := web.NewMux()
	got := make(chan any, 1)
	mux.HandleFunc("GET /off", func(w *web.ResponseWriter, r *web.Request) {
		w.Later()
		go func() {
			defer func() {
				got <- recover()
				w.Executor().Submit(func() { w.WriteString("from the loop"); w.End() })
			}()
			w.WriteString("from a goroutine")
		}()
	})
	srv := &web.Server{Handler: mux}
	addr, _ := serve(t, srv)
	c := dial(t, addr)
	io.WriteString(c, "GET /off HTTP/1.1\r\nHost: x\r\n\r\n")
	_, b := readResponse(t, bufio.NewReader(c), "GET")
	if string(b) != "from the loop" {
		t.Errorf("body %q", b)
	}
	if v, _ := (<-got).(string); !strings.Contains(v, "ResponseWriter.Write") || !strings.Contains(v, "Submit") {
		t.Errorf("panic %q: want one naming ResponseWriter.Write and Submit", v)
	}
}
