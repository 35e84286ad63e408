package netio_test

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

func TestReusePortTwoExecutors(t *testing.T) {
	a, b := executor.New(executor.WithName("a")), executor.New(executor.WithName("b"))
	a.Start()
	b.Start()
	defer a.Close()
	defer b.Close()
	la := listen(t, a, netio.WithReusePort())
	lb, err := netio.Listen(b, "tcp", la.Addr().String(), netio.WithReusePort())
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if _, err := netio.Listen(b, "tcp", la.Addr().String()); err == nil {
		t.Fatal("a listener without WithReusePort shares the address")
	}
	// Each executor answers with its own name; the kernel spreads the
	// connections, so with enough of them both answer.
	for _, l := range []*netio.Listener{la, lb} {
		ex := l.Executor()
		netio.Serve(l, func(c *netio.Conn) {
			c.Write([]byte(ex.Name() + "\n"))
			c.Close()
		})
	}
	seen := map[string]int{}
	for i := 0; i < 200 && len(seen) < 2; i++ {
		nc := dialNet(t, la)
		var name string
		fmt.Fscanln(nc, &name)
		nc.Close()
		seen[name]++
	}
	if len(seen) != 2 {
		t.Fatalf("200 connections all went to %v", seen)
	}
}

func TestServeGroup(t *testing.T) {
	g := shard.New(2)
	g.Start()
	defer g.Close()
	ls, err := netio.ServeGroup(g, "tcp", "127.0.0.1:0", echoConn)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Addr().String() != ls[1].Addr().String() {
		t.Fatalf("listeners %v", ls)
	}
	for i := range 20 {
		nc := dialNet(t, ls[0])
		msg := fmt.Sprint("req", i)
		nc.Write([]byte(msg))
		if got := readN(t, nc, len(msg)); string(got) != msg {
			t.Fatalf("got %q", got)
		}
		nc.Close()
	}
	if _, err := netio.ListenGroup(g, "unix", "/nonexistent/x"); err == nil {
		t.Fatal("ListenGroup on unix succeeded")
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func TestNoFDOutlivesExecutorClose(t *testing.T) {
	before := openFDs(t)
	ex := executor.New()
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo(l)
	var ncs []net.Conn
	for range 20 {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write([]byte("x"))
		readN(t, nc, 1)
		ncs = append(ncs, nc)
	}
	c, err := spindletest.Await(t, netio.Dial(spindletest.Context(t), ex, "tcp", l.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	_ = c
	ex.Close()
	for _, nc := range ncs {
		nc.Close()
	}
	if after := openFDs(t); after > before {
		t.Fatalf("%d file descriptors open before, %d after Executor.Close", before, after)
	}
}

func TestBadPeerAmongGood(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(256<<10))
	// The server sends 64 KiB for every byte it receives.
	reply := make([]byte, 64<<10)
	netio.Serve(l, func(c *netio.Conn) {
		onRecv(c, func(b []byte) error {
			for range b {
				if _, err := c.Write(reply); err != nil {
					return err // past the limit: the connection is gone
				}
			}
			return nil
		})
	})
	// The bad peers: one asks for 64 MB and never reads, one resets.
	hog := dialNet(t, l)
	hog.(*net.TCPConn).SetReadBuffer(16 << 10)
	hog.Write(make([]byte, 1024))
	rst := dialNet(t, l)
	rst.Write([]byte("x"))
	rst.(*net.TCPConn).SetLinger(0)
	rst.Close()
	// The good peers are served throughout.
	spindletest.Parallel(8, func(int) {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		for range 10 {
			nc.Write([]byte("y"))
			if _, err := readFull(nc, len(reply)); err != nil {
				t.Error(err)
				return
			}
		}
	})
}

func readFull(nc net.Conn, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := ioReadFull(nc, b)
	return b, err
}

func TestManyConnectionsOpenedAndDropped(t *testing.T) {
	n := 10_000
	if testing.Short() || raceEnabled {
		n = 2_000
	}
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	spindletest.Parallel(4, func(int) {
		for range n / 4 {
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			nc.Close()
		}
	})
	// The loop still serves.
	nc := dialNet(t, l)
	nc.Write([]byte("still here"))
	if got := readN(t, nc, 10); string(got) != "still here" {
		t.Fatalf("got %q", got)
	}
}

// A burst of connections that all close at once: the loop's socket table
// grows for them and is given back once they have all gone; the loop goes
// on serving.
func TestBurstClosedAtOnce(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	const n = 1500
	ncs := make([]net.Conn, 0, n)
	for range n {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		ncs = append(ncs, nc)
	}
	for _, nc := range ncs {
		nc.Write([]byte("x"))
	}
	for _, nc := range ncs {
		readN(t, nc, 1)
	}
	for _, nc := range ncs {
		nc.Close()
	}
	nc := dialNet(t, l)
	nc.Write([]byte("after"))
	if got := readN(t, nc, 5); string(got) != "after" {
		t.Fatalf("got %q", got)
	}
}
