package netio_test

import (
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// greeter is a protocol's server of the program's own: it greets each
// connection and closes it, and stops taking listeners once stopped.
type greeter struct {
	mu      sync.Mutex
	stopped bool
}

func (s *greeter) Serve(l *netio.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		l.Close()
		return netio.ErrServerClosed
	}
	netio.Serve(l, func(c *netio.Conn) {
		fmt.Fprintf(c, "hello from a shard: %v\n", c.Executor() == l.Executor())
		c.Close()
	})
	return nil
}

// Any server that serves a listener serves a shard group with
// ServeGroupOn: one listener per shard on one address.
func ExampleServeGroupOn() {
	g := shard.New(2)
	g.Start()
	defer g.Close()

	ls, err := netio.ServeGroupOn(&greeter{}, g, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(ls), "listeners on one address:", ls[0].Addr().String() == ls[1].Addr().String())
	nc, err := net.Dial("tcp", ls[0].Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, _ := io.ReadAll(nc)
	nc.Close()
	fmt.Print(string(reply))
	_, err = netio.ServeGroupOn(&greeter{stopped: true}, g, "tcp", "127.0.0.1:0")
	fmt.Println(err)
	// Output:
	// 2 listeners on one address: true
	// hello from a shard: true
	// netio: Server closed
}
