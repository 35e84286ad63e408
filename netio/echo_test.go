package netio_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

func TestEcho(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	for _, size := range []int{1, 64, 100 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			nc := dialNet(t, l)
			msg := bytes.Repeat([]byte("x"), size)
			for i := range msg {
				msg[i] = byte(i)
			}
			go nc.Write(msg)
			if got := readN(t, nc, size); !bytes.Equal(got, msg) {
				t.Fatalf("echoed %d bytes differ", size)
			}
		})
	}
}

// The package's echo server (Example) with clients whose readers pause:
// awaiting Flush past a threshold holds them back through TCP, so none is
// cut by the output limit.
func TestEchoBackpressureSparesSlowReaders(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(96<<10))
	cut := make(chan error, 1)
	netio.Serve(l, func(c *netio.Conn) {
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) { // as in Example
			defer c.Close()
			for {
				b, err := future.Next[[]byte](ctx, c)
				if err != nil {
					return struct{}{}, nil
				}
				if _, err := c.Write(b); err != nil {
					cut <- err
					return struct{}{}, nil
				}
				if c.Buffered() > 64<<10 {
					if _, err := c.Flush().Await(ctx); err != nil {
						return struct{}{}, nil
					}
				}
			}
		})
	})
	const clients, total = 4, 8 << 20
	errs := make(chan error, clients)
	for range clients {
		nc := dialNet(t, l)
		nc.(*net.TCPConn).SetReadBuffer(64 << 10)
		go func() {
			_, err := nc.Write(make([]byte, total))
			nc.(*net.TCPConn).CloseWrite()
			if err != nil {
				errs <- err
			}
		}()
		go func() {
			b := make([]byte, 32<<10)
			n := 0
			for {
				k, err := nc.Read(b)
				n += k
				if err != nil {
					if err == io.EOF && n == total {
						err = nil
					}
					errs <- err
					return
				}
				time.Sleep(200 * time.Microsecond) // a reader slower than the writer (pacing, not ordering)
			}
		}()
	}
	for range clients {
		select {
		case err := <-cut:
			t.Fatalf("echo cut a slow reader: %v", err)
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(spindletest.Safety):
			t.Fatal("safety timeout")
		}
	}
}
