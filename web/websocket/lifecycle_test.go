package websocket_test

// How a served Conn ends when its peer stops reading. These tests run on
// the backend the build and the environment choose: epoll, io_uring
// (SPINDLE_NETIO=uring) or the portable one (-tags purego).

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/websocket"
)

// wait bounds every wait of these tests: a Conn that never ends, or a
// loop that never goes idle, fails the test instead of hanging it.
const wait = 30 * time.Second

// TestNeverReaderCut: clients that upgrade, send a message and then never
// read, while the server writes to them, are cut by netio's output limit; each Conn's done
// runs with a *CloseError (1006) that wraps netio.ErrOutputLimit, the loop
// then runs nothing more of its own, and Close returns.
func TestNeverReaderCut(t *testing.T) {
	const clients = 3
	msg := make([]byte, 16<<10)
	cases := []struct {
		name  string
		limit int
		// write starts the server's writing to c, on the loop, when the
		// client's first message comes.
		write func(ex *executor.Executor, c *websocket.Conn)
	}{
		// One batch writes past 4 times the limit: cut at once.
		{"burst past the ceiling", 256 << 10, func(_ *executor.Executor, c *websocket.Conn) {
			for range 100 {
				if c.WriteMessage(websocket.BinaryMessage, msg) != nil {
					return
				}
			}
		}},
		// A timer writes 6.4 MB/s until the output is past the default
		// limit with the socket full and the peer has taken nothing for a
		// second: cut by the stall rule, below the ceiling.
		{"steady writer", netio.DefaultOutputLimit, func(ex *executor.Executor, c *websocket.Conn) {
			var tick func()
			tick = func() {
				for range 4 {
					if c.WriteMessage(websocket.BinaryMessage, msg) != nil {
						return // cut: no more ticks
					}
				}
				ex.AfterFunc(10*time.Millisecond, tick)
			}
			tick()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New(executor.WithName(t.Name()))
			ex.Start()
			closed := false
			t.Cleanup(func() {
				if !closed {
					closeWithin(t, ex)
				}
			})
			l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", netio.WithOutputLimit(tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, clients)
			mux := web.NewMux()
			mux.HandleFunc("GET /ws", func(w *web.ResponseWriter, r *web.Request) {
				c, err := websocket.Upgrade(w, r)
				if err != nil {
					return
				}
				started := false
				c.Serve(func(c *websocket.Conn, _ websocket.Message) {
					if !started { // the client has read the 101
						started = true
						tc.write(ex, c)
					}
				}, func(err error) { ended <- err })
			})
			srv := &web.Server{Handler: mux}
			if err := srv.Serve(l); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			addr := l.Addr().String()
			for range clients {
				nc, err := net.DialTimeout("tcp", addr, wait)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { nc.Close() })
				nc.(*net.TCPConn).SetReadBuffer(4 << 10) // the socket fills sooner
				nc.SetDeadline(time.Now().Add(wait))
				c, err := wsclient.Handshake(nc, addr, "/ws")
				if err != nil {
					t.Fatal(err)
				}
				// From here on the client reads nothing.
				if err := c.Text("go"); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.After(wait)
			for i := range clients {
				select {
				case err := <-ended:
					var ce *websocket.CloseError
					if !errors.As(err, &ce) || ce.Code != websocket.CloseAbnormal || !errors.Is(err, netio.ErrOutputLimit) {
						t.Errorf("done(%v), want a close 1006 that wraps netio.ErrOutputLimit", err)
					}
				case <-deadline:
					t.Fatalf("done ran for %d of %d clients in %v", i, clients, wait)
				}
			}
			assertIdle(t, ex)
			if n := netio.StatsOf(ex).OutputLimitDisconnects; n != clients {
				t.Errorf("OutputLimitDisconnects = %d, want %d", n, clients)
			}
			closeWithin(t, ex)
			closed = true
		})
	}
}

// assertIdle checks that ex's loop runs nothing of its own: over a
// hundred round trips of a task submitted from here, the loop runs those
// tasks and at most a few others (a last timer), where a loop that
// reschedules work without end runs at least one more each time.
func assertIdle(t *testing.T, ex *executor.Executor) {
	t.Helper()
	const trips = 100
	ran := func() uint64 {
		got := make(chan uint64, 1)
		if err := ex.Submit(func() { got <- ex.Stats().TasksRun }); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			return n
		case <-time.After(wait):
			t.Fatalf("a submitted task did not run in %v", wait)
			return 0
		}
	}
	before := ran()
	for range trips {
		ran()
	}
	if n := ran() - before; n > trips+1+5 {
		t.Errorf("the loop ran %d tasks over %d round trips: it is not idle", n, trips+1)
	}
}

// closeWithin closes ex and fails the test if Close does not return in
// time.
func closeWithin(t *testing.T, ex *executor.Executor) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		ex.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("Executor.Close did not return in %v", wait)
	}
}

// TestShutdownGoingAway: the server's Shutdown sends every WebSocket that
// Upgrade made a close frame with 1001, however the Conn is received from
// (Serve, or a task with future.Next), and returns once each has ended:
// on the client's answer, or after the close timeout for a client that
// does not answer.
func TestShutdownGoingAway(t *testing.T) {
	const perRoute = 2
	cases := []struct {
		name   string
		answer bool // the clients answer the close frame
		opts   []websocket.Option
	}{
		// The close timeout is longer than any test: Shutdown returns on
		// the answers.
		{"clients answer", true, []websocket.Option{websocket.WithCloseTimeout(wait)}},
		{"clients silent", false, []websocket.Option{websocket.WithCloseTimeout(50 * time.Millisecond)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New(executor.WithName(t.Name()))
			ex.Start()
			t.Cleanup(func() { closeWithin(t, ex) })
			l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 2*perRoute)
			mux := web.NewMux()
			mux.HandleFunc("GET /serve", func(w *web.ResponseWriter, r *web.Request) {
				c, err := websocket.Upgrade(w, r, tc.opts...)
				if err != nil {
					return
				}
				c.Serve(func(c *websocket.Conn, m websocket.Message) { c.WriteMessage(m.Type, m.Data) },
					func(err error) { ended <- err })
			})
			mux.HandleFunc("GET /task", func(w *web.ResponseWriter, r *web.Request) {
				c, err := websocket.Upgrade(w, r, tc.opts...)
				if err != nil {
					return
				}
				future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
					for {
						m, err := future.Next[websocket.Message](ctx, c)
						if err != nil {
							ended <- err
							return struct{}{}, nil
						}
						c.WriteMessage(m.Type, m.Data)
					}
				})
			})
			srv := &web.Server{Handler: mux}
			if err := srv.Serve(l); err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			var cls []*wsclient.Client
			for _, path := range []string{"/serve", "/task"} {
				for range perRoute {
					c, err := wsclient.Dial(addr, path)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { c.Close() })
					c.C.SetDeadline(time.Now().Add(wait))
					// An echo: the Conn is being received from.
					if err := c.Text("hi"); err != nil {
						t.Fatal(err)
					}
					if op, p, err := c.ReadMessage(); err != nil || op != wsclient.OpText || string(p) != "hi" {
						t.Fatalf("%s: echo %d %q %v", path, op, p, err)
					}
					cls = append(cls, c)
				}
			}
			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				shut <- srv.Shutdown(ctx)
			}()
			for i, c := range cls {
				f, err := c.Read()
				if err != nil || f.Op != wsclient.OpClose || wsclient.CloseCode(f.Payload) != websocket.CloseGoingAway {
					t.Fatalf("client %d read %+v, %v; want a close frame with 1001", i, f, err)
				}
			}
			if tc.answer {
				select {
				case err := <-shut:
					t.Fatalf("Shutdown returned (%v) before the clients answered", err)
				default:
				}
				for _, c := range cls {
					c.Send(wsclient.Frame{Fin: true, Op: wsclient.OpClose, Payload: wsclient.ClosePayload(websocket.CloseGoingAway, "")})
				}
			}
			for i, c := range cls {
				if n, err := io.Copy(io.Discard, c.R); err != nil || n != 0 {
					t.Errorf("client %d: %d bytes, %v after the close frame; want EOF", i, n, err)
				}
			}
			if err := <-shut; err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			for range cls {
				err := <-ended
				var ce *websocket.CloseError
				if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway || ce.Remote {
					t.Errorf("ended with %v, want this side's close 1001", err)
				}
			}
		})
	}
}
