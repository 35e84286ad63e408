package netio_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/merge"
	"github.com/spindle-rt/spindle/netio"
)

// accept returns the next connection l accepts.
func accept(t testing.TB, l *netio.Listener) *netio.Conn {
	t.Helper()
	c, err := spindletest.Await(t, l.Accept())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recvAll receives from c until it ends and returns the bytes and the
// error it ended with.
func recvAll(t testing.TB, c *netio.Conn) ([]byte, error) {
	t.Helper()
	var got []byte
	for {
		b, err := spindletest.Await(t, c.Recv())
		if err != nil {
			return got, err
		}
		got = append(got, b...)
	}
}

func write(t testing.TB, c *netio.Conn, s string) {
	t.Helper()
	n, err := onLoop(t, c.Executor(), func() result { n, err := c.Write([]byte(s)); return result{n, err} }).get()
	if n != len(s) || err != nil {
		t.Fatalf("Write(%d bytes) = %d, %v", len(s), n, err)
	}
}

type result struct {
	n   int
	err error
}

func (r result) get() (int, error) { return r.n, r.err }

func TestPipelining(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	// A line server: for every line "x" it replies "+x\n".
	netio.Serve(l, func(c *netio.Conn) {
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			var line []byte
			for {
				b, err := future.Next[[]byte](ctx, c)
				if err != nil {
					c.Close()
					return struct{}{}, nil
				}
				for _, ch := range b {
					if ch != '\n' {
						line = append(line, ch)
						continue
					}
					c.Write([]byte("+"))
					c.Write(line)
					c.Write([]byte("\n"))
					line = line[:0]
				}
			}
		})
	})
	nc := dialNet(t, l)
	var req, want strings.Builder
	for i := range 1000 {
		req.WriteString("k" + strings.Repeat("v", i%50) + "\n")
		want.WriteString("+k" + strings.Repeat("v", i%50) + "\n")
	}
	go nc.Write([]byte(req.String()))
	if got := readN(t, nc, want.Len()); string(got) != want.String() {
		t.Fatal("pipelined replies differ")
	}
}

func TestAddresses(t *testing.T) {
	for _, tc := range []struct{ network, address string }{
		{"tcp", "127.0.0.1:0"},
		{"tcp", ":0"}, // unspecified: each connection asks for its local address
		{"tcp6", "[::1]:0"},
	} {
		t.Run(tc.network+" "+tc.address, func(t *testing.T) {
			ex := started(t)
			l := listenOrSkip(t, ex, tc.network, tc.address)
			host := "127.0.0.1"
			if tc.network == "tcp6" {
				host = "::1"
			}
			_, port, _ := net.SplitHostPort(l.Addr().String())
			nc, err := net.Dial(tc.network, net.JoinHostPort(host, port))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c := accept(t, l)
			defer c.Close()
			if got, want := c.RemoteAddr().String(), nc.LocalAddr().String(); got != want {
				t.Errorf("RemoteAddr %s, the peer is %s", got, want)
			}
			if got, want := c.LocalAddr().String(), nc.RemoteAddr().String(); got != want {
				t.Errorf("LocalAddr %s, the peer dialled %s", got, want)
			}
			if c.LocalAddr().Network() != "tcp" || !strings.HasPrefix(c.String(), "netio.Conn(tcp:") {
				t.Errorf("addresses of %v on %s", c, c.LocalAddr().Network())
			}
		})
	}
}

func TestEOFAndHalfClose(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	nc.Write([]byte("hello"))
	nc.(*net.TCPConn).CloseWrite()
	got, err := recvAll(t, c)
	if string(got) != "hello" || err != io.EOF {
		t.Fatalf("received %q, %v; want hello, io.EOF", got, err)
	}
	// After EOF the write side still works; CloseWrite sends it, then EOF.
	if err := onLoop(t, ex, func() error {
		c.Write([]byte("bye"))
		return c.CloseWrite()
	}); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if string(b) != "bye" || err != nil {
		t.Fatalf("peer read %q, %v; want bye then EOF", b, err)
	}
	if _, err := spindletest.Await(t, c.Recv()); err != io.EOF {
		t.Fatalf("Recv after EOF: %v, want io.EOF", err)
	}
	if err := onLoop(t, ex, func() error { _, err := c.Write([]byte("x")); return err }); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after CloseWrite: %v, want net.ErrClosed", err)
	}
	c.Close()
}

func TestCloseSendsBufferedOutput(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	big := bytes.Repeat([]byte("0123456789"), 300_000) // 3 MB: more than the socket takes at once
	pending := onLoop(t, ex, func() *future.Future[[]byte] {
		r := c.Recv()
		c.Write(big)
		c.Close()
		return r
	})
	if _, err := spindletest.Await(t, pending); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("pending Recv after Close: %v, want net.ErrClosed", err)
	}
	got, err := io.ReadAll(nc)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("peer read %d bytes, %v; want all %d", len(got), err, len(big))
	}
	if _, err := spindletest.Await(t, c.Recv()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Recv after Close: %v, want net.ErrClosed", err)
	}
}

func TestCloseLingerBounded(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithLinger(50*time.Millisecond), netio.WithOutputLimit(0))
	nc := dialNet(t, l) // never reads
	c := accept(t, l)
	flushed := onLoop(t, ex, func() *future.Future[struct{}] {
		c.Write(bytes.Repeat([]byte("x"), 32<<20))
		f := c.Flush()
		c.Close()
		return f
	})
	if _, err := spindletest.Await(t, flushed); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Flush of output the peer never read: %v, want net.ErrClosed after the linger", err)
	}
	nc.Close()
}

func TestBackpressureToPeer(t *testing.T) {
	// An owner that does not receive leaves the bytes in the kernel: the
	// peer's writes stop being taken.
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	chunk := make([]byte, 64<<10)
	sent := 0
	nc.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		n, err := nc.Write(chunk)
		sent += n
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
		if sent > 256<<20 {
			t.Fatal("the peer wrote 256 MB to a connection nobody receives from")
		}
	}
	nc.SetWriteDeadline(time.Time{})
	// Now receive everything: it all arrives.
	done := make(chan int)
	go func() {
		n := 0
		for n < sent {
			b, err := spindletest.Await(t, c.Recv())
			if err != nil {
				break
			}
			n += len(b)
		}
		done <- n
	}()
	if n := spindletest.Recv(t, done); n != sent {
		t.Fatalf("received %d bytes, the peer sent %d", n, sent)
	}
}

func TestBackpressureFromPeer(t *testing.T) {
	// A peer that does not read: Buffered grows, Flush waits, and it
	// completes once the peer reads.
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(0))
	nc := dialNet(t, l)
	nc.(*net.TCPConn).SetReadBuffer(16 << 10) // no receive window autotuning
	c := accept(t, l)
	const total = 16 << 20
	f := onLoop(t, ex, func() *future.Future[struct{}] {
		c.Write(make([]byte, total))
		return c.Flush()
	})
	if f.Ready() {
		_, err := f.Await(context.Background())
		t.Fatal("Flush of 16 MB completed before the peer read anything", err)
	}
	readN(t, nc, total)
	if _, err := spindletest.Await(t, f); err != nil {
		t.Fatal(err)
	}
	if n := onLoop(t, ex, c.Buffered); n != 0 {
		t.Fatalf("Buffered after the flush = %d", n)
	}
}

func TestOutputLimit(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(1<<20))
	nc := dialNet(t, l) // never reads
	c := accept(t, l)
	pending := c.Recv()
	err := onLoop(t, ex, func() error {
		for range 1 << 12 {
			if _, err := c.Write(make([]byte, 64<<10)); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, netio.ErrOutputLimit) {
		t.Fatalf("writing 256 MB to a peer that never reads: %v, want ErrOutputLimit", err)
	}
	if _, err := spindletest.Await(t, pending); !errors.Is(err, netio.ErrOutputLimit) {
		t.Fatalf("pending Recv: %v, want ErrOutputLimit", err)
	}
	if n := netio.StatsOf(ex).OutputLimitDisconnects; n != 1 {
		t.Errorf("Stats.OutputLimitDisconnects = %d, want 1", n)
	}
	// The peer sees the connection end.
	nc.SetReadDeadline(time.Now().Add(spindletest.Safety))
	if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
}

func TestReset(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	nc.(*net.TCPConn).SetLinger(0)
	nc.Close() // RST
	_, err := recvAll(t, c)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Recv after a reset: %v, want ECONNRESET", err)
	}
	c.Close()
}

func TestDial(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	c, err := spindletest.Await(t, netio.Dial(spindletest.Context(t), ex, "tcp", l.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteAddr().String() != l.Addr().String() || c.Executor() != ex {
		t.Fatalf("dialled %v on %v", c.RemoteAddr(), c.Executor())
	}
	write(t, c, "ping")
	b, err := spindletest.Await(t, c.Recv())
	if string(b) != "ping" || err != nil {
		t.Fatalf("echo: %q, %v", b, err)
	}
	c.Close()

	// A refused connect fails the future.
	free := freeAddr(t)
	if _, err := spindletest.Await(t, netio.Dial(spindletest.Context(t), ex, "tcp", free)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Dial to a closed port: %v, want ECONNREFUSED", err)
	}
	// A cancelled ctx fails it too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := spindletest.Await(t, netio.Dial(ctx, ex, "tcp", l.Addr().String())); !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial with a cancelled ctx: %v, want context.Canceled", err)
	}
}

// listenOrSkip opens a listener on network and address, closed when the
// test ends; it skips the test if the address is IPv6 and the system has
// no IPv6 loopback.
func listenOrSkip(t *testing.T, ex *executor.Executor, network, address string) *netio.Listener {
	t.Helper()
	l, err := netio.Listen(ex, network, address)
	if err != nil {
		if strings.Contains(address, "::1") {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

func TestBadArguments(t *testing.T) {
	ex := started(t)
	for _, tc := range []struct{ network, address, want string }{
		{"udp", "127.0.0.1:0", "unsupported network"},
		{"tcp", "no-port", "netio:"},
		{"tcp", "127.0.0.1:99999", "netio:"},
		{"unix", "", "empty address"},
	} {
		if _, err := netio.Listen(ex, tc.network, tc.address); err == nil || !strings.HasPrefix(err.Error(), "netio: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen(%q, %q) = %v, want an error starting netio: and saying %q", tc.network, tc.address, err, tc.want)
		}
		if tc.network == "tcp" {
			continue
		}
		if _, err := spindletest.Await(t, netio.Dial(context.Background(), ex, tc.network, tc.address)); err == nil || !strings.HasPrefix(err.Error(), "netio: ") {
			t.Errorf("Dial(%q, %q) = %v, want an error starting netio:", tc.network, tc.address, err)
		}
	}
	if _, err := netio.Listen(nil, "tcp", "127.0.0.1:0"); err == nil || !strings.HasPrefix(err.Error(), "netio: ") {
		t.Errorf("Listen(nil executor) = %v", err)
	}
	if _, err := netio.Listen(ex, "unix", filepath.Join(t.TempDir(), "s"), netio.WithReusePort()); err == nil {
		t.Error("Listen unix with WithReusePort succeeded")
	}
	spindletest.MustPanic(t, "netio: ", "nil executor", func() { netio.Dial(context.Background(), nil, "tcp", "127.0.0.1:1") })
	var c *netio.Conn
	var l *netio.Listener
	spindletest.MustPanic(t, "netio: ", "nil *Conn", func() { c.Recv() })
	spindletest.MustPanic(t, "netio: ", "nil *Conn", func() { c.Write(nil) })
	spindletest.MustPanic(t, "netio: ", "nil *Listener", func() { l.Accept() })
	spindletest.MustPanic(t, "netio: ", "nil handler", func() { netio.Serve(listen(t, ex), nil) })
	if _, err := netio.Listen(ex, "tcp", "127.0.0.1:0", nil); err == nil || !strings.HasPrefix(err.Error(), "netio: ") {
		t.Errorf("Listen with a nil option: %v", err)
	}
}

func TestMisuseOffLoop(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	dialNet(t, l)
	c := accept(t, l)
	for name, fn := range map[string]func(){
		"TryRecv":    func() { c.TryRecv() },
		"PollRecv":   func() { c.PollRecv(nopWaker{}) },
		"Write":      func() { c.Write([]byte("x")) },
		"Buffered":   func() { c.Buffered() },
		"Unacked":    func() { c.Unacked() },
		"Flush":      func() { c.Flush() },
		"CloseWrite": func() { c.CloseWrite() },
	} {
		t.Run(name, func(t *testing.T) { spindletest.MustPanic(t, "netio: Conn."+name, "use Submit", fn) })
	}
	c.Close()
}

type nopWaker struct{}

func (nopWaker) Wake() {}

func TestListenerClose(t *testing.T) {
	ex := started(t)
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pending := l.Accept()
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := spindletest.Await(t, pending); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("pending Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := spindletest.Await(t, l.Accept()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	// The address is free again at once.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address not free after Close: %v", err)
	}
	ln.Close()
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestExecutorClose(t *testing.T) {
	ex := executor.New()
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", netio.WithOutputLimit(0))
	if err != nil {
		t.Fatal(err)
	}
	nc := dialNet(t, l)
	c := accept(t, l)
	accepting := l.Accept()
	receiving := c.Recv()
	flushed := onLoop(t, ex, func() *future.Future[struct{}] {
		c.Write(make([]byte, 32<<20)) // the peer never reads
		return c.Flush()
	})
	ex.Close()
	if _, err := spindletest.Await(t, accepting); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("pending Accept: %v, want executor.ErrClosed", err)
	}
	if _, err := spindletest.Await(t, receiving); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("pending Recv: %v, want executor.ErrClosed", err)
	}
	if _, err := spindletest.Await(t, flushed); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("pending Flush: %v, want executor.ErrClosed", err)
	}
	if _, err := spindletest.Await(t, l.Accept()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Accept after close: %v, want executor.ErrClosed", err)
	}
	if _, err := spindletest.Await(t, c.Recv()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Recv after close: %v, want executor.ErrClosed", err)
	}
	// The peer sees the connection go.
	nc.SetReadDeadline(time.Now().Add(spindletest.Safety))
	if _, err := io.Copy(io.Discard, nc); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	if _, err := netio.Listen(ex, "tcp", "127.0.0.1:0"); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Listen on a closed executor: %v", err)
	}
	if _, err := spindletest.Await(t, netio.Dial(context.Background(), ex, "tcp", l.Addr().String())); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Dial on a closed executor: %v", err)
	}
}

func TestMergeAndNext(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	const n = 3
	ncs := make([]net.Conn, n)
	cs := make([]*netio.Conn, n)
	for i := range n {
		ncs[i] = dialNet(t, l)
		cs[i] = accept(t, l)
	}
	got := future.Spawn(ex, func(ctx context.Context) (string, error) {
		streams := make([]merge.Stream[[]byte], n)
		for i, c := range cs {
			streams[i] = c
		}
		m := merge.Merge(ex, streams...)
		var all []byte
		eofs := 0
		for {
			b, err := future.Next[[]byte](ctx, m)
			switch {
			case errors.Is(err, io.EOF):
				// A connection's EOF reaches the merge once; the others go on.
				if eofs++; eofs == n {
					return string(all), nil
				}
			case err != nil:
				return string(all), err
			default:
				all = append(all, b...)
			}
		}
	})
	for i, nc := range ncs {
		nc.Write([]byte{'a' + byte(i)})
		nc.Close()
	}
	s, err := spindletest.Await(t, got)
	if len(s) != n || err != nil {
		t.Fatalf("merged %q, %v", s, err)
	}
	for i := range n {
		if !strings.ContainsRune(s, rune('a'+i)) {
			t.Fatalf("merged %q lacks %c", s, 'a'+i)
		}
	}
	for _, c := range cs {
		c.Close()
	}
}

func TestUnixSocket(t *testing.T) {
	ex := started(t)
	path := filepath.Join(t.TempDir(), "echo.sock")
	l, err := netio.Listen(ex, "unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	echo(l)
	c, err := spindletest.Await(t, netio.Dial(spindletest.Context(t), ex, "unix", path))
	if err != nil {
		t.Fatal(err)
	}
	write(t, c, "over unix")
	if b, err := spindletest.Await(t, c.Recv()); string(b) != "over unix" || err != nil {
		t.Fatalf("echo over unix: %q, %v", b, err)
	}
	c.Close()
	l.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file after Close: %v", err)
	}
}

func TestTCP4AndTCP6(t *testing.T) {
	for _, tc := range []struct{ network, address string }{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"tcp", "[::1]:0"},
	} {
		t.Run(tc.network+" "+tc.address, func(t *testing.T) {
			ex := started(t)
			l := listenOrSkip(t, ex, tc.network, tc.address)
			echo(l)
			c, err := spindletest.Await(t, netio.Dial(spindletest.Context(t), ex, tc.network, l.Addr().String()))
			if err != nil {
				t.Fatal(err)
			}
			write(t, c, tc.network)
			if b, err := spindletest.Await(t, c.Recv()); string(b) != tc.network || err != nil {
				t.Fatalf("echo: %q, %v", b, err)
			}
			c.Close()
		})
	}
}

func TestCancelledRecvLosesNothing(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	// Receives given up leave nothing behind and take no bytes.
	for range 1000 {
		if !c.Recv().Cancel() {
			t.Fatal("Cancel of a pending Recv failed")
		}
	}
	nc.Write([]byte("kept"))
	b, err := spindletest.Await(t, c.Recv())
	if string(b) != "kept" || err != nil {
		t.Fatalf("received %q, %v after 1,000 cancelled receives", b, err)
	}
	c.Close()
}
