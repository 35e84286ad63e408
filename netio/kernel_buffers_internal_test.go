//go:build linux && !purego

package netio

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// checkTCPOptions checks c's TCP options: as package net sets them
// (keep-alive finds half-open connections out).
func checkTCPOptions(t *testing.T, ctx context.Context, ex *executor.Executor, c *Conn) {
	t.Helper()
	opts, _ := future.Call(ex, func() ([3]int, error) {
		fd := int(c.sk.fd)
		a, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		b, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		d, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		return [3]int{a, b, d}, nil
	}).Await(ctx)
	if opts != [3]int{1, 1, keepAlive} {
		t.Fatalf("TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE = %v", opts)
	}
}

// An idle connection holds no buffer, and an output buffer that grew for a
// burst is not kept once the burst has drained.
func TestBuffersComeAndGo(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := l.Accept().Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkTCPOptions(t, ctx, ex, c)
	type state struct{ rbuf, out bool }
	held := func() state {
		v, _ := future.Call(ex, func() (state, error) { return state{c.rbuf != nil, c.out != nil}, nil }).Await(ctx)
		return v
	}

	// Bytes arrive: the receive returns them in a pooled buffer; the next
	// receive finds nothing and gives the buffer back while it waits.
	nc.Write([]byte("ping"))
	if b, err := c.Recv().Await(ctx); string(b) != "ping" || err != nil {
		t.Fatalf("Recv: %q, %v", b, err)
	}
	pending := c.Recv()
	if s := held(); s.rbuf || s.out {
		t.Fatalf("idle connection with a pending receive holds %+v", s)
	}

	// A 1 MB burst grows the output buffer past its class; once the peer
	// has read it all the buffer is gone, and the pool holds none that size.
	f, _ := future.Call(ex, func() (*future.Future[struct{}], error) {
		c.Write(make([]byte, 1<<20))
		return c.Flush(), nil
	}).Await(ctx)
	if _, err := io.ReadFull(nc, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if s := held(); s.out {
		t.Fatal("output buffer kept after the burst drained")
	}
	big, _ := future.Call(ex, func() (int, error) {
		n := 0
		for _, b := range c.r.wfree {
			if cap(b) != writeBufSize {
				n++
			}
		}
		return n, nil
	}).Await(ctx)
	if big != 0 {
		t.Fatalf("%d grown buffers pooled", big)
	}
	nc.Write([]byte("x"))
	if b, err := pending.Await(ctx); string(b) != "x" || err != nil {
		t.Fatalf("pending Recv: %q, %v", b, err)
	}
	c.Close()
}
