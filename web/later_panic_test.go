package web_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// TestLaterPanic: a panic in a callback, timer or task that was to finish
// a response later is reported as any panic on the loop, and ends the
// response: a 500 if nothing of it was written, then the connection
// closes (the request pipelined behind it is not answered); with part of
// it written, the connection closes with nothing sent. The server goes on
// serving.
func TestLaterPanic(t *testing.T) {
	// later schedules fn the way a case says.
	type later func(w *web.ResponseWriter, r *web.Request, fn func())
	afterFunc := func(w *web.ResponseWriter, r *web.Request, fn func()) {
		r.Executor().AfterFunc(time.Millisecond, fn)
	}
	cases := []struct {
		name     string
		schedule later
		write    bool // the callback writes part of the body before it panics
		handler  bool // the panic reaches the executor's panic handler (else the future it fails)
	}{
		{"afterfunc", afterFunc, false, true},
		{"afterfunc_written", afterFunc, true, true},
		{"then", func(w *web.ResponseWriter, r *web.Request, fn func()) {
			f := future.Then(future.Sleep(r.Executor(), time.Millisecond), func(struct{}) (struct{}, error) {
				fn()
				return struct{}{}, nil
			})
			f.OnComplete(func(_ struct{}, err error) {
				var pe *future.PanicError
				if !errors.As(err, &pe) {
					panic(fmt.Sprintf("Then's future: %v, want a *future.PanicError", err))
				}
				panic(pe.Value) // to the panic handler, where the test sees it
			})
		}, false, true},
		{"task", func(w *web.ResponseWriter, r *web.Request, fn func()) {
			future.Spawn(r.Executor(), func(ctx context.Context) (struct{}, error) {
				if _, err := future.Sleep(r.Executor(), time.Millisecond).Await(ctx); err != nil {
					return struct{}{}, err
				}
				fn()
				return struct{}{}, nil
			})
		}, false, true},
		{"post_nested", func(w *web.ResponseWriter, r *web.Request, fn func()) {
			r.Executor().AfterFunc(time.Millisecond, func() { r.Executor().Post(fn) })
		}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			panics := make(chan any, 4)
			ex := executor.New(executor.WithName(t.Name()), executor.WithPanicHandler(func(v any) { panics <- v }))
			ex.Start()
			defer ex.Close()
			l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			mux := web.NewMux()
			mux.HandleFunc("GET /boom", func(w *web.ResponseWriter, r *web.Request) {
				w.Header().Set("X-Set-Before", "1")
				w.Later()
				tc.schedule(w, r, func() {
					if tc.write {
						w.WriteString("partial")
					}
					panic("boom")
				})
			})
			mux.HandleFunc("GET /ok", func(w *web.ResponseWriter, r *web.Request) { w.WriteString("ok") })
			srv := &web.Server{Handler: mux}
			srv.Serve(l)
			defer srv.Close()

			c := dial(t, l.Addr().String())
			io.WriteString(c, "GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
			br := bufio.NewReader(c)
			if !tc.write {
				resp, b := readResponse(t, br, "GET")
				if resp.StatusCode != 500 || string(b) != "500 Internal Server Error\n" || !resp.Close || resp.Header.Get("X-Set-Before") != "" {
					t.Errorf("response %d %q close=%v header %v, want a 500 that closes, without the handler's header", resp.StatusCode, b, resp.Close, resp.Header)
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the panic: %q %v, want EOF", rest, err)
			}
			if tc.handler {
				if v := <-panics; fmt.Sprint(v) != "boom" {
					t.Errorf("panic handler got %v", v)
				}
			}
			c = dial(t, l.Addr().String())
			io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
			if _, b := readResponse(t, bufio.NewReader(c), "GET"); string(b) != "ok" {
				t.Errorf("after: %q", b)
			}
		})
	}
}
