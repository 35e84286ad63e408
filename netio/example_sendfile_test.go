package netio_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// A header written, then a file's bytes sent after it by SendFile (by
// sendfile(2) on the epoll backend), then a trailer once the send is
// done: the connection's bytes stay in that order.
func ExampleConn_SendFile() {
	dir, err := os.MkdirTemp("", "sendfile")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "f.txt")
	os.WriteFile(name, []byte("0123456789"), 0o644)
	f, err := os.Open(name)
	if err != nil {
		panic(err)
	}
	defer f.Close()

	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	netio.Serve(l, func(c *netio.Conn) {
		c.WriteString("bytes 2-7: ")
		c.SendFile(f, 2, 6).OnComplete(func(_ struct{}, err error) {
			if err != nil {
				c.Close()
				return
			}
			c.WriteString(" (end)")
			c.Close()
		})
	})

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	b, err := io.ReadAll(nc)
	fmt.Printf("%s %v\n", b, err)
	// Output: bytes 2-7: 234567 (end) <nil>
}
