//go:build linux

package netio_test

// Faults a production server meets: accept failing for want of
// descriptors, a close with unread input, a shutdown under load, peers that
// leave while nobody receives, large writes and bursts under the output
// limit. Each test runs on both backends (go test, go test -tags purego).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// acceptErrors returns a channel closed once netio.StatsOf(ex) has counted
// n failed accepts: it looks after every callback on ex's loop (a hook),
// and a failed accept ends in one (Serve's).
func acceptErrors(ex *executor.Executor, n uint64) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	var remove func()
	var mu sync.Mutex
	look := func(hooks.ID) {
		if netio.StatsOf(ex).AcceptErrors >= n {
			once.Do(func() {
				close(ch)
				mu.Lock()
				defer mu.Unlock()
				remove()
			})
		}
	}
	mu.Lock()
	remove = ex.AddHooks(hooks.Hooks{After: look})
	mu.Unlock()
	return ch
}

// drainBegun returns a future that fails once ex's Shutdown has begun to
// drain the loop: a pending accept on l (a listener of ex), which the drain
// fails when it closes the loop's listeners (and l with them). On the loop
// or off it.
func drainBegun(t *testing.T, ex *executor.Executor, l *netio.Listener) *future.Future[*netio.Conn] {
	t.Helper()
	return onLoop(t, ex, func() *future.Future[*netio.Conn] { return l.Accept() })
}

// With no descriptor left, accepting fails with EMFILE: Serve backs off,
// reports it once, does not spin, and serves again once descriptors free
// up.
func TestServeSurvivesEMFILE(t *testing.T) {
	logs := captureLog(t)
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	w := dialNet(t, l) // the reactor and the acceptor are up
	w.Write([]byte("w"))
	readN(t, w, 1)

	failed := acceptErrors(ex, 2)
	const clients = 3
	// Sockets made before the limit is lowered: connecting needs no
	// descriptor, accepting them does.
	var socks [clients]int
	for i := range socks {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		socks[i] = fd
	}
	// Ballast: descriptors freed later, so the server can accept again.
	var ballast []*os.File
	for range clients + 2 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		ballast = append(ballast, f)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(openFDs(t) - 1) // no descriptor left (openFDs counts its own)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip("cannot lower RLIMIT_NOFILE:", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
		}
	}
	t.Cleanup(restore)
	for _, b := range ballast {
		defer b.Close()
	}

	addr := l.Addr().(*net.TCPAddr)
	sa := &syscall.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	for _, fd := range socks {
		// Interrupted, the connect goes on in the kernel; the write waits
		// for it.
		if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINTR {
			t.Fatal("connect:", err)
		}
		_, err := syscall.Write(fd, []byte("x"))
		for err == syscall.EINTR {
			_, err = syscall.Write(fd, []byte("x"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	// The accepts fail until descriptors free up: wait for a failure and
	// the retry's failure after it.
	select {
	case <-failed:
	case <-time.After(spindletest.Safety):
		t.Fatalf("no two failed accepts seen: %+v", netio.StatsOf(ex))
	}
	for _, b := range ballast {
		b.Close()
	}
	// Every client is served now: its byte comes back.
	for _, fd := range socks {
		tv := syscall.NsecToTimeval(int64(spindletest.Safety))
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
		var b [1]byte
		n, err := syscall.Read(fd, b[:])
		for err == syscall.EINTR { // a signal, or io_uring's task work, on this thread: a socket with a timeout is not restarted
			n, err = syscall.Read(fd, b[:])
		}
		if n != 1 || err != nil {
			t.Fatalf("client not served after descriptors freed up: %d, %v", n, err)
		}
		syscall.Close(fd)
	}
	spell := time.Since(start)
	restore()
	st := netio.StatsOf(ex)
	// Backing off from 5 ms, doubling to 1 s: a handful of tries, where a
	// retrying loop makes hundreds of thousands a second.
	if most := uint64(20 + 2*spell/time.Second); st.AcceptErrors > most {
		t.Errorf("%d failed accepts in %v: the accept loop spins", st.AcceptErrors, spell)
	}
	if n := logs.count("netio: accept"); n != 1 {
		t.Errorf("the failing accepts were logged %d times, want once", n)
	}
	// And a new connection is served too.
	nc := dialNet(t, l)
	nc.Write([]byte("again"))
	if got := readN(t, nc, 5); string(got) != "again" {
		t.Fatalf("echo after recovery: %q", got)
	}
}

// A handler that writes 8 MiB and closes while the client has sent bytes
// it never read: the client gets all 8 MiB, then EOF (not a reset).
func TestCloseWithUnreadInputSendsEverything(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(0))
	nc := dialNet(t, l)
	nc.(*net.TCPConn).SetReadBuffer(64 << 10) // the output cannot all sit in the kernel
	c := accept(t, l)
	if _, err := nc.Write([]byte("38 bytes the server never reads.......")); err != nil {
		t.Fatal(err)
	}
	// The bytes are in the server's socket before it closes.
	pending := onLoop(t, ex, func() *future.Future[[]byte] { return c.Recv() })
	b, err := spindletest.Await(t, pending)
	if err != nil || len(b) == 0 {
		t.Fatal(err)
	}
	nc.Write([]byte("more unread bytes"))
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10) // 8 MiB
	onLoop(t, ex, func() error {
		c.Write(big)
		return c.Close()
	})
	got, err := io.ReadAll(nc)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("client read %d of %d bytes, then %v; want all, then EOF", len(got), len(big), err)
	}
}

// Shutdown under load: 200 peers keep sending; new connections are refused
// as soon as the drain begins, and the drain ends.
func TestShutdownRefusesAndDrainsUnderLoad(t *testing.T) {
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo(l)
	peers := spindletest.Scale(200)
	var wg sync.WaitGroup
	var stop atomic.Bool
	ncs := make([]net.Conn, peers)
	for i := range ncs {
		ncs[i] = dialNet(t, l)
	}
	for _, nc := range ncs {
		wg.Add(2)
		go func() { // keeps sending
			defer wg.Done()
			msg := make([]byte, 512)
			for !stop.Load() {
				if _, err := nc.Write(msg); err != nil {
					return
				}
			}
		}()
		go func() { // and reading
			defer wg.Done()
			io.Copy(io.Discard, nc)
		}()
	}
	defer func() {
		stop.Store(true)
		for _, nc := range ncs {
			nc.Close()
		}
		wg.Wait()
	}()
	// Some echo has come back: the server is busy with them.
	if _, err := ncs[0].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Work that keeps the drain going (each callback queues the next) until
	// the test has seen the listener refuse.
	var refused atomic.Bool
	var again func(struct{}, error)
	again = func(_ struct{}, err error) {
		if err == nil && !refused.Load() {
			future.Resolved(ex, struct{}{}).OnComplete(again)
		}
	}
	onLoop(t, ex, func() error { again(struct{}{}, nil); return nil })
	// A second listener of the loop, with an accept pending: the drain
	// closes it with l, and its accept failing says the drain has begun.
	l2, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	begun := drainBegun(t, ex, l2)
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- ex.Shutdown(ctx) }()
	if _, err := spindletest.Await(t, begun); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("pending accept during the drain: %v, want executor.ErrClosed", err)
	}
	if ex.Submit(func() {}) == nil {
		t.Fatal("Submit accepted while the executor drains")
	}
	// l was closed with l2: a dial is refused.
	if nc, err := net.DialTimeout("tcp", l.Addr().String(), spindletest.Safety); err == nil {
		nc.Close()
		t.Fatal("the listener still takes connections while the executor shuts down")
	}
	refused.Store(true)
	defer func(t0 time.Time) { t.Logf("drained in %v", time.Since(t0)) }(time.Now())
	if err := spindletest.Recv(t, shut); err != nil {
		t.Fatalf("Shutdown under load: %v, want it to drain", err)
	}
}

// Shutdown after Close of a connection with 8 MiB written lets the
// lingering output finish.
func TestShutdownLetsLingeringOutputFinish(t *testing.T) {
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", netio.WithOutputLimit(0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc := dialNet(t, l)
	nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	c := accept(t, l)
	big := bytes.Repeat([]byte("0123456789abcdef"), 512<<10) // 8 MiB
	onLoop(t, ex, func() error {
		c.Write(big)
		return c.Close()
	})
	begun := drainBegun(t, ex, l)
	shut := make(chan error, 1)
	go func() { shut <- ex.Shutdown(spindletest.Context(t)) }()
	if _, err := spindletest.Await(t, begun); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("pending accept during the drain: %v, want executor.ErrClosed", err)
	}
	got, err := io.ReadAll(nc)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("client read %d of %d bytes, then %v; want all, then EOF", len(got), len(big), err)
	}
	if err := spindletest.Recv(t, shut); err != nil {
		t.Fatal(err)
	}
}

// A peer that leaves while nobody receives from its connection frees the
// socket at once: 200 clients connect and leave, the descriptors come back.
func TestPeerLeavingFreesSocket(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	n := spindletest.Scale(200)
	dones := make(chan *future.Future[error], n)
	conns := make(chan *netio.Conn, n)
	netio.Serve(l, func(c *netio.Conn) { // keeps c, never receives
		conns <- c
		dones <- c.Done()
	})
	w := dialNet(t, l)
	<-conns
	wd := <-dones
	w.Close()
	if err, _ := spindletest.Await(t, wd); err != io.EOF {
		t.Fatalf("Done of a connection whose peer left: %v, want io.EOF", err)
	}
	base := openFDs(t)
	for range n {
		nc := dialNet(t, l)
		nc.Close()
	}
	for range n {
		c := <-conns
		err, _ := spindletest.Await(t, <-dones)
		if err != io.EOF {
			t.Fatalf("Done: %v, want io.EOF", err)
		}
		if _, err := spindletest.Await(t, c.Recv()); err != io.EOF {
			t.Fatalf("Recv after the peer left: %v, want io.EOF", err)
		}
	}
	if got := openFDs(t); got > base {
		t.Fatalf("%d clients connected and left: descriptors went from %d to %d", n, base, got)
	}
}

// The output limit cuts a peer that does not read, never a large write or
// a burst to one that does.
func TestOutputLimitSparesReaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		writes int
		size   int
	}{
		{"one 5 MiB write, 4 MiB limit", netio.DefaultOutputLimit, 1, 5 << 20},
		{"2048 writes of 1 KiB in one batch, 1 MiB limit", 1 << 20, 2048, 1 << 10},
		{"64 writes of 256 KiB in one batch, 4 MiB limit", netio.DefaultOutputLimit, 64, 256 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := started(t)
			l := listen(t, ex, netio.WithOutputLimit(tc.limit))
			nc := dialNet(t, l)
			c := accept(t, l)
			total := tc.writes * tc.size
			read := make(chan error, 1)
			go func() { // reads at full speed
				_, err := io.ReadFull(nc, make([]byte, total))
				read <- err
			}()
			f := onLoop(t, ex, func() *future.Future[struct{}] {
				chunk := make([]byte, tc.size)
				for range tc.writes {
					if _, err := c.Write(chunk); err != nil {
						return future.Failed[struct{}](ex, err)
					}
				}
				return c.Flush()
			})
			if _, err := spindletest.Await(t, f); err != nil {
				t.Fatal(err)
			}
			if err := spindletest.Recv(t, read); err != nil {
				t.Fatal(err)
			}
			c.Close()
		})
	}
}

// A model of a pub/sub server: 100 subscribers reading continuously, 100
// publishers, every message written to every subscriber in the batch that
// received it. No subscriber is cut.
func TestOutputLimitFanOut(t *testing.T) {
	ex := started(t)
	const limit = 1 << 20 // examples/pubsub's default
	l := listen(t, ex, netio.WithOutputLimit(limit))
	// Each subscriber gets pubsN*40 KiB, more than the limit: one that
	// did not read would be cut.
	subsN, pubsN := 100, 100
	if spindletest.RaceEnabled {
		subsN, pubsN = 20, 50 // 40 MiB through the race detector, not 200
	}
	// The whole fan-out goes through the loop before the first subscriber
	// has read everything: on a busy machine under the race detector that
	// takes longer than one Safety.
	const bound = 4 * spindletest.Safety
	const perPub, msgSize = 80, 512 // 40 KiB per publisher, in one write
	var subs []*netio.Conn
	var cut atomic.Int32
	var all sync.WaitGroup
	all.Add(subsN)
	ready := make(chan struct{})
	netio.Serve(l, func(c *netio.Conn) {
		if len(subs) < subsN {
			subs = append(subs, c)
			if len(subs) == subsN {
				close(ready)
			}
			return
		}
		onRecv(c, func(b []byte) error {
			for _, s := range subs {
				if _, err := s.Write(b); errors.Is(err, netio.ErrOutputLimit) {
					cut.Add(1)
				}
			}
			return nil
		})
	})
	want := pubsN * perPub * msgSize
	errs := make(chan error, subsN)
	for range subsN {
		nc := dialNet(t, l)
		nc.SetDeadline(time.Now().Add(bound))
		go func() {
			_, err := io.ReadFull(nc, make([]byte, want))
			errs <- err
		}()
	}
	spindletest.Recv(t, ready)
	msg := bytes.Repeat([]byte("m"), perPub*msgSize)
	for range pubsN {
		nc := dialNet(t, l)
		go nc.Write(msg) // one burst each
	}
	timeout := time.After(bound)
	for range subsN {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("subscriber: %v (%d writes cut by the output limit)", err, cut.Load())
			}
		case <-timeout:
			t.Fatalf("subscribers not done after %v", bound)
		}
	}
	if n := cut.Load(); n != 0 {
		t.Fatalf("%d writes to continuously reading subscribers cut by the output limit", n)
	}
}
