package netio_test

// Tests whose one body runs on every backend, each by name: the host's
// (epoll and io_uring, or the portable one with -tags purego) and the
// simulated network of package sim.
// The body spawns tasks on the env's executors and waits on their futures;
// the env runs them (a started executor on the host, a seeded sim.World on
// the simulation, whose clock is fake).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// simRuns is how many seeds each shared test runs with on the simulation
// by default (sim.Seeds: -sim.seed and -sim.runs choose others).
const simRuns = 4

// env gives a shared test its executors, addresses and waits.
type env struct {
	t        *testing.T
	srv, cli *executor.Executor
	w        *sim.World // nil on the host
	srvHost  *sim.Host
	host     netio.Backend // on the host: the backend chosen for srv and cli
}

// onAll runs body on each of the host's backends, chosen by name
// (netio.Use; one the kernel refuses is skipped, saying why), one subtest
// each. onSim runs it on the simulation.
func onAll(t *testing.T, body func(t *testing.T, e *env)) {
	for _, b := range onHost {
		t.Run(string(b), func(t *testing.T) {
			if err := refusal(b); err != nil {
				t.Skipf("the kernel refuses %s here: %v", b, err)
			}
			e := &env{t: t, srv: startedOn(t, b), cli: startedOn(t, b), host: b}
			body(t, e)
		})
	}
}

// onSim runs body on the simulation, one subtest per seed of
// sim.Seeds(simRuns), each printing its seed line (sim.Check); then the
// first seed again, which must give the same trace. The tests that call it
// are named TestSim...: go test -run Sim runs the simulation alone.
func onSim(t *testing.T, body func(t *testing.T, e *env)) {
	checkReplayed(t, simRuns, func(t *testing.T, w *sim.World) {
		sh, sx, cx := simPair(w)
		body(t, &env{t: t, w: w, srvHost: sh, srv: sx, cli: cx})
	})
}

// checkReplayed runs body for each seed of sim.Seeds(runs) (sim.Check),
// then the first seed again, which must give the same trace.
func checkReplayed(t *testing.T, runs int, body func(t *testing.T, w *sim.World)) {
	traces := map[int64]string{}
	sim.Check(t, runs, func(t *testing.T, w *sim.World) {
		body(t, w)
		traces[w.Seed()] = w.TraceHex()
	})
	if t.Failed() {
		return
	}
	seed := sim.Seeds(runs)[0]
	t.Run(fmt.Sprintf("replay/seed=%d", seed), func(t *testing.T) {
		w := sim.New(seed)
		defer w.Close()
		body(t, w)
		if w.TraceHex() != traces[seed] {
			t.Errorf("seed %d replayed with trace %s, first %s", seed, w.TraceHex(), traces[seed])
		}
	})
}

// simPair adds a server host and a client host to w, with an executor
// on each ("server", "client").
func simPair(w *sim.World) (sh *sim.Host, sx, cx *executor.Executor) {
	sh, ch := w.Host("server"), w.Host("client")
	return sh, sh.Executor(executor.WithName("server")), ch.Executor(executor.WithName("client"))
}

// backend is the name Stats.Backend gives the env's server once it has
// served a socket: "sim" on the simulation, the one chosen on the host.
func (e *env) backend() string {
	if e.w != nil {
		return "sim"
	}
	if b := netio.StatsOf(e.srv).Backend; b != string(e.host) {
		e.t.Errorf("Stats.Backend = %q, want %q (chosen by netio.Use)", b, e.host)
	}
	return string(e.host)
}

// startedOn returns a started executor whose sockets b serves.
func startedOn(t *testing.T, b netio.Backend) *executor.Executor {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	if err := netio.Use(ex, b); err != nil {
		t.Fatal(err)
	}
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	return ex
}

// listen opens a listener on the server executor.
func (e *env) listen(opts ...netio.ListenOption) *netio.Listener {
	e.t.Helper()
	addr := "127.0.0.1:0"
	if e.w != nil {
		addr = ":7000"
	}
	l, err := netio.Listen(e.srv, "tcp", addr, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { l.Close() })
	return l
}

// addr is the address a client dials to reach l.
func (e *env) addr(l *netio.Listener) string {
	if e.w != nil {
		return e.srvHost.Addr(7000)
	}
	return l.Addr().String()
}

// size scales a test's bulk of n bytes: all of it on the host, an eighth
// on the simulation, whose peers' windows (64 KiB) it still far exceeds,
// so that 200 seeds take seconds.
func (e *env) size(n int) int {
	if e.w != nil {
		return n / 8
	}
	return n
}

// refused is an address nobody listens on.
func (e *env) refused() string {
	if e.w != nil {
		return e.srvHost.Addr(7001)
	}
	return freeAddr(e.t)
}

// wait runs the env until f completes and returns its result.
func wait[T any](e *env, f *future.Future[T]) (T, error) {
	e.t.Helper()
	if e.w == nil {
		return spindletest.Await(e.t, f)
	}
	if !e.w.RunUntil(f.Ready, time.Hour) {
		e.t.Fatalf("sim seed=%d: the future did not complete (world quiet or an hour passed at %v)", e.w.Seed(), e.w.Now())
	}
	r, _ := f.Peek()
	return r.Value, r.Err
}

// task spawns fn on ex and waits for it; fn fails the test with its error.
func (e *env) task(ex *executor.Executor, fn func(ctx context.Context) error) *future.Future[struct{}] {
	return future.Spawn(ex, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
}

// must waits for f and fails the test with its error.
func must[T any](e *env, f *future.Future[T]) T {
	e.t.Helper()
	v, err := wait(e, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// readAll receives on c until it fails; it returns the bytes and the error
// (io.EOF at a clean end).
func readAll(ctx context.Context, c *netio.Conn) ([]byte, error) {
	var got []byte
	for {
		b, err := c.Recv().Await(ctx)
		if err != nil {
			return got, err
		}
		got = append(got, b...)
	}
}

// sharedCases are the tests run on every backend, the simulation's too.
var sharedCases = []struct {
	name string
	body func(t *testing.T, e *env)
}{
	{"Echo", sharedEcho},
	{"EOFAfterClose", sharedEOFAfterClose},
	{"CloseWrite", sharedCloseWrite},
	{"FlushBuffered", sharedFlushBuffered},
	{"Unacked", sharedUnacked},
	{"CloseWithoutLinger", sharedCloseWithoutLinger},
	{"CloseSendsPendingOutput", sharedCloseSendsPending},
	{"TryRecvPollRecv", sharedTryRecv},
	{"DoneOnHangUp", sharedDoneOnHangUp},
	{"DialRefused", sharedDialRefused},
	{"ListenerClose", sharedListenerClose},
	{"ExecutorClose", sharedExecutorClose},
	{"OutputLimit", sharedOutputLimit},
	{"IdleTimeout", sharedIdleTimeout},
	{"Reader", sharedReader},
	{"Reset", sharedReset},
	{"ServerCloseUnsent", sharedServerCloseUnsent},
	{"ExecutorShutdownDelivers", sharedShutdownDelivers("Executor.Shutdown")},
	{"ServerShutdownDelivers", sharedShutdownDelivers("Server.Shutdown")},
}

func TestShared(t *testing.T) {
	for _, tc := range sharedCases {
		t.Run(tc.name, func(t *testing.T) { onAll(t, tc.body) })
	}
}

func TestSimShared(t *testing.T) {
	for _, tc := range sharedCases {
		t.Run(tc.name, func(t *testing.T) { onSim(t, tc.body) })
	}
}

func sharedEcho(t *testing.T, e *env) {
	l := e.listen()
	echo(l)
	must(e, e.task(e.cli, func(ctx context.Context) error {
		c, err := netio.Dial(ctx, e.cli, "tcp", e.addr(l)).Await(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		for _, size := range []int{1, 64, 100 << 10} {
			msg := make([]byte, size)
			for i := range msg {
				msg[i] = byte(i * 7)
			}
			c.Write(msg)
			var got []byte
			for len(got) < size {
				b, err := c.Recv().Await(ctx)
				if err != nil {
					return fmt.Errorf("echo of %d bytes: after %d: %w", size, len(got), err)
				}
				got = append(got, b...)
			}
			if !bytes.Equal(got, msg) {
				return fmt.Errorf("echo of %d bytes differs", size)
			}
		}
		return nil
	}))
}

// serveOne accepts one connection on l and runs fn with it on the server.
func (e *env) serveOne(l *netio.Listener, fn func(ctx context.Context, c *netio.Conn) error) *future.Future[struct{}] {
	return e.task(e.srv, func(ctx context.Context) error {
		c, err := l.Accept().Await(ctx)
		if err != nil {
			return err
		}
		return fn(ctx, c)
	})
}

// dial connects the client to l and runs fn with the connection.
func (e *env) dial(l *netio.Listener, fn func(ctx context.Context, c *netio.Conn) error) *future.Future[struct{}] {
	return e.task(e.cli, func(ctx context.Context) error {
		c, err := netio.Dial(ctx, e.cli, "tcp", e.addr(l)).Await(ctx)
		if err != nil {
			return err
		}
		return fn(ctx, c)
	})
}

func sharedEOFAfterClose(t *testing.T, e *env) {
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		c.Write([]byte("bye"))
		return c.Close()
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		got, err := readAll(ctx, c)
		if err != io.EOF || string(got) != "bye" {
			return fmt.Errorf("got %q, %v; want \"bye\", EOF", got, err)
		}
		if _, err := c.Recv().Await(ctx); err != io.EOF {
			return fmt.Errorf("Recv after EOF: %v, want EOF again", err)
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

func sharedCloseWrite(t *testing.T, e *env) {
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		got, err := readAll(ctx, c)
		if err != io.EOF {
			return fmt.Errorf("server: %v, want EOF", err)
		}
		_, err = c.WriteString(fmt.Sprintf("%d:%s", len(got), got))
		return err
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		c.WriteString("ping")
		if err := c.CloseWrite(); err != nil {
			return err
		}
		if _, err := c.Write([]byte("x")); err == nil {
			return errors.New("Write after CloseWrite succeeded")
		}
		got, err := readAll(ctx, c)
		if err != io.EOF || string(got) != "4:ping" {
			return fmt.Errorf("got %q, %v; want \"4:ping\", EOF", got, err)
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

func sharedFlushBuffered(t *testing.T, e *env) {
	l := e.listen()
	n := e.size(1 << 20)
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		c.Write(make([]byte, n))
		if c.Buffered() == 0 {
			return fmt.Errorf("Buffered is 0 right after a write of %d bytes on the loop", n)
		}
		if _, err := c.Flush().Await(ctx); err != nil {
			return fmt.Errorf("Flush: %v", err)
		}
		if b := c.Buffered(); b != 0 {
			return fmt.Errorf("Buffered after Flush: %d", b)
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		got, err := readAll(ctx, c)
		if err != io.EOF || len(got) != n {
			return fmt.Errorf("got %d bytes, %v; want %d, EOF", len(got), err, n)
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

// connPair connects the client to l and returns the connection's ends,
// the server's and the client's.
func (e *env) connPair(l *netio.Listener) (conn, peer *netio.Conn) {
	accepted := e.task(e.srv, func(ctx context.Context) error {
		c, err := l.Accept().Await(ctx)
		conn = c
		return err
	})
	must(e, e.task(e.cli, func(ctx context.Context) error {
		c, err := netio.Dial(ctx, e.cli, "tcp", e.addr(l)).Await(ctx)
		peer = c
		return err
	}))
	must(e, accepted)
	return conn, peer
}

// Unacked counts the output the kernel took that the peer has not
// acknowledged: with Buffered, what has not reached the peer. While the
// peer reads nothing of 256 KiB (more than its receive buffer holds), the
// two never add up to 0, even once the kernel has taken everything
// (Buffered 0); once the peer has read everything and said so, both are 0.
// Outside Linux the system does not tell (Unacked is always 0 there): only
// the second half holds there.
func sharedUnacked(t *testing.T, e *env) {
	l := e.listen()
	const n = 256 << 10
	conn, peer := e.connPair(l)
	must(e, e.task(e.srv, func(ctx context.Context) error {
		tells := e.w != nil || runtime.GOOS == "linux"
		conn.Write(make([]byte, n))
		for i := range 20 { // the kernel takes what it may meanwhile
			if _, err := future.Sleep(e.srv, time.Millisecond).Await(ctx); err != nil {
				return err
			}
			if b, u := conn.Buffered(), conn.Unacked(); tells && b+u == 0 {
				return fmt.Errorf("after %d ms, Buffered %d and Unacked %d with the peer reading nothing", i+1, b, u)
			}
		}
		return nil
	}))
	must(e, e.task(e.cli, func(ctx context.Context) error {
		got := 0
		for got < n {
			b, err := peer.Recv().Await(ctx)
			if err != nil {
				return fmt.Errorf("after %d bytes: %w", got, err)
			}
			got += len(b)
		}
		_, err := peer.WriteString("read")
		return err
	}))
	must(e, e.task(e.srv, func(ctx context.Context) error {
		defer conn.Close()
		if _, err := conn.Recv().Await(ctx); err != nil {
			return err
		}
		if b, u := conn.Buffered(), conn.Unacked(); b != 0 || u != 0 {
			return fmt.Errorf("the peer read everything: Buffered %d, Unacked %d", b, u)
		}
		return nil
	}))
	must(e, e.task(e.cli, func(context.Context) error { return peer.Close() }))
}

// Close after SetLinger(0) resets the connection: the output not yet
// delivered is dropped, the kernel's too, and the peer, which has read
// nothing so far, reads less than was written, then a reset.
func sharedCloseWithoutLinger(t *testing.T, e *env) {
	l := e.listen()
	n := e.size(4 << 20)
	conn, peer := e.connPair(l)
	must(e, e.task(e.srv, func(ctx context.Context) error {
		conn.Write(make([]byte, n))
		if _, err := future.Sleep(e.srv, 5*time.Millisecond).Await(ctx); err != nil {
			return err // the kernel takes what it may meanwhile
		}
		conn.SetLinger(0)
		return conn.Close()
	}))
	must(e, e.task(e.cli, func(ctx context.Context) error {
		defer peer.Close()
		got, err := readAll(ctx, peer)
		if !errors.Is(err, syscall.ECONNRESET) || len(got) >= n {
			return fmt.Errorf("read %d of %d bytes, then %v; want fewer, then a reset", len(got), n, err)
		}
		return nil
	}))
}

func sharedCloseSendsPending(t *testing.T, e *env) {
	l := e.listen()
	n := e.size(4 << 20)
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(i)
		}
		c.Write(msg)
		return c.Close() // with most of it still pending
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		got, err := readAll(ctx, c)
		if err != io.EOF || len(got) != n {
			return fmt.Errorf("got %d bytes, %v; want %d, EOF", len(got), err, n)
		}
		for i := range got {
			if got[i] != byte(i) {
				return fmt.Errorf("byte %d differs", i)
			}
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

func sharedTryRecv(t *testing.T, e *env) {
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		// The first bytes with TryRecv or else Recv, then more with TryRecv,
		// then the rest with Next (PollRecv) until EOF.
		b, ok := c.TryRecv()
		if !ok {
			var err error
			if b, err = c.Recv().Await(ctx); err != nil {
				return err
			}
		}
		got := append([]byte(nil), b...)
		if b, ok := c.TryRecv(); ok {
			got = append(got, b...)
		}
		for {
			b, err := future.Next[[]byte](ctx, c)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			got = append(got, b...)
		}
		if string(got) != "hello, world" {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		c.WriteString("hello, ")
		if _, err := c.Flush().Await(ctx); err != nil {
			return err
		}
		c.WriteString("world")
		return c.Close()
	})
	must(e, cli)
	must(e, srv)
}

func sharedDoneOnHangUp(t *testing.T, e *env) {
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		// No receive is pending: Done still learns that the peer left.
		err, _ := c.Done().Await(ctx)
		if err == nil {
			return errors.New("Done completed with nil before Close")
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error { return c.Close() })
	must(e, cli)
	must(e, srv)
}

func sharedDialRefused(t *testing.T, e *env) {
	addr := e.refused()
	_, err := wait(e, netio.Dial(context.Background(), e.cli, "tcp", addr))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Dial of %s: %v, want ECONNREFUSED", addr, err)
	}
}

func sharedListenerClose(t *testing.T, e *env) {
	l := e.listen()
	a := e.task(e.srv, func(ctx context.Context) error {
		_, err := l.Accept().Await(ctx)
		if !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("Accept on a closed listener: %v, want net.ErrClosed", err)
		}
		return nil
	})
	must(e, e.task(e.srv, func(context.Context) error { return l.Close() }))
	must(e, a)
	if _, err := wait(e, netio.Dial(context.Background(), e.cli, "tcp", e.addr(l))); err == nil {
		t.Fatal("Dial succeeded after the listener closed")
	}
}

func sharedExecutorClose(t *testing.T, e *env) {
	l := e.listen()
	const conns = 3
	accepted := 0 // on the server's loop (the test's goroutine steps it on the simulation)
	netio.Serve(l, func(c *netio.Conn) { accepted++ })
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		all := []*netio.Conn{c}
		for len(all) < conns {
			c, err := netio.Dial(ctx, e.cli, "tcp", e.addr(l)).Await(ctx)
			if err != nil {
				return err
			}
			all = append(all, c)
		}
		for i, c := range all {
			err, _ := c.Done().Await(ctx)
			if err == nil {
				return fmt.Errorf("conn %d: Done completed with nil after the server's executor closed", i)
			}
		}
		return nil
	})
	if e.w != nil {
		if !e.w.RunUntil(func() bool { return accepted == conns }, time.Minute) {
			t.Fatalf("accepted %d of %d", accepted, conns)
		}
	} else {
		must(e, e.task(e.srv, func(ctx context.Context) error {
			for accepted < conns {
				if _, err := future.Sleep(e.srv, time.Millisecond).Await(ctx); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	e.srv.Close()
	must(e, cli)
	// The counts stay readable once the executor has closed: its final
	// figures.
	want := netio.Stats{Accepted: conns, Closed: conns, Backend: e.backend()}
	if got := netio.StatsOf(e.srv); got != want {
		t.Errorf("StatsOf after Close = %+v, want %+v", got, want)
	}
}

func sharedOutputLimit(t *testing.T, e *env) {
	l := e.listen(netio.WithOutputLimit(256 << 10))
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		chunk := make([]byte, 64<<10)
		for range 1 << 10 { // far more than the peer's window and the limit
			if _, err := c.Write(chunk); err != nil {
				if !errors.Is(err, netio.ErrOutputLimit) {
					return fmt.Errorf("Write: %v, want ErrOutputLimit", err)
				}
				return nil
			}
			if _, err := future.Sleep(e.srv, time.Millisecond).Await(ctx); err != nil {
				return err
			}
		}
		return errors.New("a peer that never reads was not cut")
	})
	var peer *netio.Conn
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		peer = c // never reads
		return nil
	})
	must(e, cli)
	must(e, srv)
	must(e, e.task(e.cli, func(context.Context) error { return peer.Close() }))
}

func sharedIdleTimeout(t *testing.T, e *env) {
	l := e.listen(netio.WithIdleTimeout(50 * time.Millisecond))
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		var got []byte // a stream: "hi" may come in pieces
		for len(got) < 2 {
			b, err := c.Recv().Await(ctx)
			if err != nil {
				return fmt.Errorf("Recv after %q: %v", got, err)
			}
			got = append(got, b...)
		}
		if string(got) != "hi" {
			return fmt.Errorf("received %q, want \"hi\"", got)
		}
		_, err := c.Recv().Await(ctx)
		if !errors.Is(err, netio.ErrIdleTimeout) {
			return fmt.Errorf("Recv on an idle connection: %v, want ErrIdleTimeout", err)
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		c.WriteString("hi")
		_, err := readAll(ctx, c)
		if err != io.EOF {
			return fmt.Errorf("client: %v, want EOF once the server timed out", err)
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

func sharedReader(t *testing.T, e *env) {
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		r := netio.NewReader(c, 1<<10)
		n := 0
		for {
			line, err := r.NextLine(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("line %d", n); string(line) != want {
				return fmt.Errorf("line %d: %q", n, line)
			}
			n++
		}
		if n != 100 {
			return fmt.Errorf("%d lines, want 100", n)
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		for i := range 100 {
			c.WriteString(fmt.Sprintf("line %d\n", i))
		}
		return c.Close()
	})
	must(e, cli)
	must(e, srv)
}

func sharedReset(t *testing.T, e *env) {
	if e.w == nil {
		t.Skip("on the host TestReset resets from a net.Conn (SO_LINGER 0)")
	}
	l := e.listen()
	ready := false
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		ready = true
		_, err := readAll(ctx, c)
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("server: Recv after a reset: %v, want ECONNRESET", err)
		}
		return nil
	})
	cli := e.task(e.cli, func(ctx context.Context) error {
		// The reset may reach the client before its connect ends: the
		// dial fails with it then.
		c, err := netio.Dial(ctx, e.cli, "tcp", e.addr(l)).Await(ctx)
		if err == nil {
			defer c.Close()
			_, err = readAll(ctx, c)
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("client: Recv after a reset: %v, want ECONNRESET", err)
		}
		return nil
	})
	if !e.w.RunUntil(func() bool { return ready }, time.Minute) {
		t.Fatal("no connection accepted")
	}
	e.w.Reset(e.srvHost)
	must(e, srv)
	must(e, cli)
}
