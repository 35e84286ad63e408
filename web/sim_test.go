package web_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
	"github.com/spindle-rt/spindle/web"
)

// simTimeoutRun serves srv on a simulated host and has a client on another
// send raw and then go quiet. It returns the client's bytes and the times,
// on the world's clock, when the client last sent or received a byte and
// when the server closed the connection (EOF); closed is false if it did
// not within limit.
func simTimeoutRun(t *testing.T, w *sim.World, srv *web.Server, raw string, limit time.Duration) (got []byte, last, at time.Duration, closed bool) {
	t.Helper()
	sh, ch := w.Host("server"), w.Host("client")
	sx := sh.Executor(executor.WithName("server"))
	cx := ch.Executor(executor.WithName("client"))
	l, err := netio.Listen(sx, "tcp", ":80")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	future.Spawn(cx, func(ctx context.Context) (struct{}, error) {
		c, err := netio.Dial(ctx, cx, "tcp", sh.Addr(80)).Await(ctx)
		if err != nil {
			t.Errorf("dial: %v", err)
			return struct{}{}, nil
		}
		defer c.Close()
		if _, err := c.Write([]byte(raw)); err != nil {
			t.Errorf("write: %v", err)
			return struct{}{}, nil
		}
		if _, err := c.Flush().Await(ctx); err != nil {
			t.Errorf("flush: %v", err)
			return struct{}{}, nil
		}
		last = w.Now()
		for {
			b, err := c.Recv().Await(ctx)
			if err != nil {
				if errors.Is(err, executor.ErrClosed) {
					return struct{}{}, nil // the world closed: the test has failed already
				}
				if !errors.Is(err, io.EOF) {
					t.Errorf("receive: %v, want io.EOF", err)
				}
				at, closed = w.Now(), true
				w.Record('C', uint64(at), uint64(last), nil)
				return struct{}{}, nil
			}
			got, last = append(got, b...), w.Now()
		}
	})
	w.RunUntil(func() bool { return closed }, limit)
	return got, last, at, closed
}

// The server's timeouts run on the loop's clock: under the simulation they
// fire on its fake time, a few seconds of which pass in no time at all,
// and the Date of a response is the simulated clock's (it starts on 1
// January 2000).
func TestSimTimeoutsOnFakeTime(t *testing.T) {
	const (
		idle = 20 * time.Second
		head = 8 * time.Second
		body = 12 * time.Second
		tick = head / 4 // the server's sweep: the precision of its timeouts
	)
	cases := []struct {
		name    string
		raw     string
		timeout time.Duration
		reply   bool
	}{
		{"idle after a request", "GET /kv/a HTTP/1.1\r\nHost: x\r\n\r\n", idle, true},
		{"head never ends", "GET /kv/a HTTP/1.1\r\nHost: x\r\n", head, false},
		{"body never ends", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", body, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim.Check(t, 3, func(t *testing.T, w *sim.World) {
				srv := &web.Server{Handler: webRoutes(), IdleTimeout: idle, ReadHeaderTimeout: head, BodyReadTimeout: body}
				started := time.Now()
				got, last, at, closed := simTimeoutRun(t, w, srv, tc.raw, 10*time.Minute)
				if !closed {
					t.Fatalf("the connection was still open after %v of simulated time (%v of wall time): the timeout of %v did not fire on the simulated clock", w.Now(), time.Since(started), tc.timeout)
				}
				// The deadline is set on the sweep's coarse clock, at most a
				// tick old, and checked every tick.
				if d := at - last; d < tc.timeout-tick || d > tc.timeout+tick+time.Millisecond {
					t.Errorf("closed %v after the last byte, want %v (within the sweep's %v)", d, tc.timeout, tick)
				}
				if !tc.reply {
					if len(got) != 0 {
						t.Errorf("got %q, want nothing", got)
					}
					return
				}
				resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
				if err != nil {
					t.Fatalf("response %q: %v", got, err)
				}
				resp.Body.Close()
				date, err := http.ParseTime(resp.Header.Get("Date"))
				if err != nil {
					t.Fatalf("Date %q: %v", resp.Header.Get("Date"), err)
				}
				if epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC); date.Before(epoch) || date.After(epoch.Add(time.Minute)) {
					t.Errorf("Date: %v, want the simulated clock's (%v and a few seconds)", date, epoch)
				}
			})
		})
	}
}

// Under the simulation, with a response ended on the simulated clock: a
// request whose method is not safe, pipelined in one write with a GET
// whose handler answers a second later, starts after that response, and
// one pipelined behind it waits for it, however the network cuts the
// write (whether GETs run in parallel depends on that: the server parses
// what one receive brought).
func TestSimPipelinedUnsafeWaits(t *testing.T) {
	const host = "Host: x\r\n"
	cases := []struct {
		name   string
		raw    string
		bodies []string // of the responses, in order
		log    []string
	}{
		{
			"GET held, then PUT",
			"GET /later HTTP/1.1\r\n" + host + "\r\nPUT /b HTTP/1.1\r\n" + host + "Content-Length: 2\r\nConnection: close\r\n\r\nhi",
			[]string{"GET /later", "PUT /b"},
			[]string{"GET /later", "end GET /later", "PUT /b"},
		},
		{
			"PUT held, then GET",
			"PUT /later HTTP/1.1\r\n" + host + "Content-Length: 2\r\n\r\nhiGET /b HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
			[]string{"PUT /later", "GET /b"},
			[]string{"PUT /later", "end PUT /later", "GET /b"},
		},
		{
			"GET held, GET, then DELETE",
			"GET /later HTTP/1.1\r\n" + host + "\r\nGET /b HTTP/1.1\r\n" + host + "\r\nDELETE /c HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n",
			nil, // the GETs run in parallel only if they arrive together
			[]string{"end GET /later", "DELETE /c"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim.Check(t, 3, func(t *testing.T, w *sim.World) {
				var log []string // the server's loop's
				h := web.HandlerFunc(func(rw *web.ResponseWriter, r *web.Request) {
					name := r.Method() + " " + r.Path()
					log = append(log, name)
					if r.Path() != "/later" {
						rw.WriteString(name)
						return
					}
					rw.Later()
					r.Executor().AfterFunc(time.Second, func() {
						rw.WriteString(strings.Join(log, ","))
						log = append(log, "end "+name)
						rw.End()
					})
				})
				got, _, _, closed := simTimeoutRun(t, w, &web.Server{Handler: h}, tc.raw, time.Minute)
				if !closed {
					t.Fatalf("the connection was still open after %v of simulated time; got %q", w.Now(), got)
				}
				br := bufio.NewReader(bytes.NewReader(got))
				for i, want := range tc.bodies {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("response %d in %q: %v", i, got, err)
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(b) != want {
						t.Errorf("response %d: %q, %v; want %q", i, b, err, want)
					}
				}
				if tc.bodies == nil {
					// Only the order of what the rule orders.
					log = slices.DeleteFunc(log, func(e string) bool { return strings.HasPrefix(e, "GET") })
				}
				if !slices.Equal(log, tc.log) {
					t.Errorf("log %q, want %q", log, tc.log)
				}
			})
		})
	}
}
