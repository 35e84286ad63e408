package websocket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/websocket"
)

// serveExample serves mux on a loopback port of a new executor; stop
// closes both.
func serveExample(mux *web.Mux) (addr string, stop func()) {
	ex := executor.New()
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &web.Server{Handler: mux}
	srv.Serve(l)
	return l.Addr().String(), func() { srv.Close(); ex.Close() }
}

// An echo server: each message comes back as it came.
func Example() {
	mux := web.NewMux()
	mux.HandleFunc("GET /ws/echo", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r)
		if err != nil {
			return // answered already
		}
		c.Serve(func(c *websocket.Conn, m websocket.Message) {
			c.WriteMessage(m.Type, m.Data) // m.Data is valid only during the call
		}, nil)
	})
	addr, stop := serveExample(mux)
	defer stop()

	cl, err := wsclient.Dial(addr, "/ws/echo")
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	cl.Text("hello")
	op, p, _ := cl.ReadMessage()
	fmt.Println(op == wsclient.OpText, string(p))
	// Output: true hello
}

// A spawned task receives with future.Next, written as straight-line code:
// it suspends while nothing has arrived, and allocates nothing.
func ExampleConn_PollRecv() {
	mux := web.NewMux()
	mux.HandleFunc("GET /ws/count", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r)
		if err != nil {
			return
		}
		future.Spawn(w.Executor(), func(ctx context.Context) (struct{}, error) {
			for n := 1; ; n++ {
				m, err := future.Next[websocket.Message](ctx, c)
				if err != nil {
					return struct{}{}, nil // a *websocket.CloseError: the peer closed
				}
				c.WriteText(fmt.Sprintf("message %d: %d bytes", n, len(m.Data)))
			}
		})
	})
	addr, stop := serveExample(mux)
	defer stop()

	cl, err := wsclient.Dial(addr, "/ws/count")
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	for _, s := range []string{"a", "bcd"} {
		cl.Text(s)
		_, p, _ := cl.ReadMessage()
		fmt.Println(string(p))
	}
	// Output:
	// message 1: 1 bytes
	// message 2: 3 bytes
}

// A server that shuts down says so with CloseGoingAway; the connection
// closes once the client answers.
func ExampleConn_Close() {
	ended := make(chan error, 1)
	mux := web.NewMux()
	mux.HandleFunc("GET /ws", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r)
		if err != nil {
			return
		}
		c.Serve(func(*websocket.Conn, websocket.Message) {}, func(err error) { ended <- err })
		c.Close(websocket.CloseGoingAway, "shutting down")
	})
	addr, stop := serveExample(mux)
	defer stop()

	cl, err := wsclient.Dial(addr, "/ws")
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	f, _ := cl.Read()
	fmt.Println("client got close", wsclient.CloseCode(f.Payload))
	cl.Send(wsclient.Frame{Fin: true, Op: wsclient.OpClose, Payload: f.Payload})
	fmt.Println("server:", <-ended)
	// Output:
	// client got close 1001
	// server: websocket: close 1001 (shutting down)
}

// The web server's Shutdown closes every WebSocket that Upgrade made with
// CloseGoingAway, with no bookkeeping in the program, and returns once
// each has ended.
func ExampleUpgrade_shutdown() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	mux := web.NewMux()
	mux.HandleFunc("GET /ws", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r)
		if err != nil {
			return
		}
		c.Serve(func(*websocket.Conn, websocket.Message) {}, nil)
	})
	srv := &web.Server{Handler: mux}
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv.Serve(l)

	cl, err := wsclient.Dial(l.Addr().String(), "/ws")
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	f, _ := cl.Read()
	fmt.Println("client got close", wsclient.CloseCode(f.Payload), string(f.Payload[2:]))
	cl.Send(wsclient.Frame{Fin: true, Op: wsclient.OpClose, Payload: f.Payload})
	fmt.Println("Shutdown:", <-shut)
	// Output:
	// client got close 1001 server shutting down
	// Shutdown: <nil>
}

func ExampleAcceptKey() {
	fmt.Println(websocket.AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="))
	// Output: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=
}
