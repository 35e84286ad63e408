package netio_test

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// An echo server: each connection is a spawned task that receives with
// future.Next and writes the bytes back. The replies leave at the end of
// the loop's batch; a task whose output piles up (its peer reads slower
// than it sends) awaits Flush before it receives more, so the peer is held
// back by TCP instead of failing with ErrOutputLimit. The client here is
// package net.
func Example() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	netio.Serve(l, func(c *netio.Conn) {
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			defer c.Close()
			for {
				b, err := future.Next[[]byte](ctx, c)
				if err != nil {
					return struct{}{}, nil // io.EOF: the client is done
				}
				c.Write(b)
				if c.Buffered() > 64<<10 { // backpressure
					if _, err := c.Flush().Await(ctx); err != nil {
						return struct{}{}, nil
					}
				}
			}
		})
	})

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	nc.Write([]byte("hello, loop"))
	nc.(*net.TCPConn).CloseWrite()
	reply, err := io.ReadAll(nc)
	fmt.Printf("%s %v\n", reply, err)
	nc.Close()
	// Output: hello, loop <nil>
}

// A sharded server: one listener per shard on one address (SO_REUSEPORT);
// each connection is served by the shard whose listener accepted it.
func ExampleServeGroup() {
	g := shard.New(2)
	g.Start()
	defer g.Close()

	ls, err := netio.ServeGroup(g, "tcp", "127.0.0.1:0", func(c *netio.Conn) {
		c.Recv().OnComplete(func(b []byte, err error) {
			if err == nil {
				fmt.Fprintf(c, "%s to you too\n", b)
			}
			c.Close() // sends the reply first
		})
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	nc, err := net.Dial("tcp", ls[0].Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	nc.Write([]byte("hello"))
	reply, _ := io.ReadAll(nc)
	fmt.Print(string(reply))
	nc.Close()
	// Output: hello to you too
}

// Use chooses the backend that serves an executor's sockets, before its
// first socket; a backend the build lacks is refused.
func ExampleUse() {
	ex := executor.New()
	defer ex.Close()
	fmt.Println(netio.Use(ex, "carrier-pigeon"))
	// Output: netio: Use("carrier-pigeon"): not a backend of this build
}
