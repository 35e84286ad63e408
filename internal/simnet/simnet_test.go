package simnet

import (
	"bytes"
	"errors"
	"math/rand"
	"syscall"
	"testing"
)

// counter is a handler that counts its events.
type counter struct{ n int }

func (c *counter) Event(Event) { c.n++ }

// run advances the network until it has no event left.
func run(n *Net) {
	for {
		t, ok := n.NextEvent()
		if !ok {
			return
		}
		n.Advance(t)
	}
}

// connect makes a connection from host a to a listener on host b.
func connect(t *testing.T, n *Net) (cli, srv *Sock, pa, pb *Poller, a, b *Host) {
	t.Helper()
	a, b = n.Host("a"), n.Host("b")
	pa, pb = a.Poller(), b.Poller()
	l, err := pb.Listen("tcp", ":80", false)
	if err != nil {
		t.Fatal(err)
	}
	cli, err = pa.Dial("tcp", b.IP.String()+":80")
	if err != nil {
		t.Fatal(err)
	}
	run(n)
	if srv, err = l.Accept(); srv == nil || err != nil || !cli.IsConnected() {
		t.Fatalf("not connected: accepted %v, client connected %v (%v)", srv, cli.IsConnected(), cli.Err())
	}
	return
}

// readAll reads what srv has.
func readAll(s *Sock) []byte {
	var out []byte
	buf := make([]byte, 7)
	for {
		k, err, ok := s.Read(buf)
		if !ok || err != nil || k == 0 {
			return out
		}
		out = append(out, buf[:k]...)
	}
}

func TestNet(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, n *Net)
	}{
		{"bytes arrive whole and in order, in pieces", func(t *testing.T, n *Net) {
			cli, srv, _, _, _, _ := connect(t, n)
			var want []byte
			for i := range 50 {
				p := bytes.Repeat([]byte{byte(i)}, 1+i*13)
				if k, err := cli.Write(p); k != len(p) || err != nil {
					t.Fatalf("write %d: %d, %v", i, k, err)
				}
				want = append(want, p...)
			}
			run(n)
			if got := readAll(srv); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (or they differ)", len(got), len(want))
			}
		}},
		{"a partition holds bytes until the heal, losing none", func(t *testing.T, n *Net) {
			cli, srv, _, _, a, b := connect(t, n)
			cli.Write([]byte("before "))
			n.Partition(a, b)
			cli.Write([]byte("during "))
			run(n)
			if got := string(readAll(srv)); got != "" && got != "before " {
				t.Fatalf("during the partition the server read %q", got)
			}
			n.Heal(a, b)
			cli.Write([]byte("after"))
			run(n)
			srvGot := string(readAll(srv))
			if !bytes.HasSuffix([]byte("before during after"), []byte(srvGot)) || !bytes.HasSuffix([]byte(srvGot), []byte("during after")) {
				t.Fatalf("after the heal the server read %q", srvGot)
			}
		}},
		{"the window holds a writer back until the peer reads", func(t *testing.T, n *Net) {
			n.Faults.Window = 100
			cli, srv, _, _, _, _ := connect(t, n)
			c := &counter{}
			cli.SetHandler(c)
			k, _ := cli.Write(make([]byte, 150))
			if k != 100 {
				t.Fatalf("write took %d, want the window's 100", k)
			}
			run(n)
			c.n = 0
			readAll(srv)
			run(n)
			cli.p.Dispatch()
			if c.n == 0 {
				t.Fatal("no Writable after the peer read")
			}
			if k, _ := cli.Write(make([]byte, 50)); k != 50 {
				t.Fatalf("second write took %d, want 50", k)
			}
		}},
		{"a connect with no listener is refused", func(t *testing.T, n *Net) {
			a := n.Host("a")
			s, err := a.Poller().Dial("tcp", "10.0.0.9:80")
			if err != nil {
				t.Fatal(err)
			}
			run(n)
			if !errors.Is(s.Err(), syscall.ECONNREFUSED) {
				t.Fatalf("err %v, want ECONNREFUSED", s.Err())
			}
		}},
		{"a reset fails both ends", func(t *testing.T, n *Net) {
			cli, srv, _, _, _, _ := connect(t, n)
			cli.Write([]byte("lost"))
			cli.Reset()
			run(n)
			for _, s := range []*Sock{cli, srv} {
				if _, err, _ := s.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("%v: read error %v, want ECONNRESET", s, err)
				}
			}
		}},
		{"close with input unread resets the peer", func(t *testing.T, n *Net) {
			cli, srv, _, _, _, _ := connect(t, n)
			cli.Write([]byte("unread"))
			run(n)
			srv.Close()
			run(n)
			if _, err, _ := cli.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("client read error %v, want ECONNRESET", err)
			}
		}},
		{"a close after the bytes reads as EOF", func(t *testing.T, n *Net) {
			cli, srv, _, _, _, _ := connect(t, n)
			cli.Write([]byte("bye"))
			cli.Close()
			run(n)
			if got := string(readAll(srv)); got != "bye" {
				t.Fatalf("read %q, want bye", got)
			}
			if k, err, ok := srv.Read(make([]byte, 8)); k != 0 || err != nil || !ok {
				t.Fatalf("after the bytes: %d, %v, %v; want EOF (0, nil, true)", k, err, ok)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, seed := range seeds(20) {
				n := New(rand.New(rand.NewSource(seed)))
				n.Faults.ShortWrite = 0
				tc.run(t, n)
			}
		})
	}
}

// The trace of one seed is the same on every run, and differs between
// seeds.
func TestTraceReplays(t *testing.T) {
	trace := func(seed int64) uint64 {
		n := New(rand.New(rand.NewSource(seed)))
		cli, srv, _, _, _, _ := connect(t, n)
		for i := range 20 {
			cli.Write(bytes.Repeat([]byte{byte(i)}, 100))
			run(n)
			readAll(srv)
		}
		return n.Trace()
	}
	if a, b := trace(1), trace(1); a != b {
		t.Fatalf("seed 1: traces %x and %x", a, b)
	}
	if a, b := trace(1), trace(2); a == b {
		t.Fatalf("seeds 1 and 2 have the same trace %x", a)
	}
}

// TestCrashHost: a crashed host's peers see a reset or silence, never an
// end; silence turns into a reset once the host is up again and bytes
// reach it; its listeners vanish; its sockets and pollers do nothing.
func TestCrashHost(t *testing.T) {
	resets, silent := 0, 0
	ss := seeds(40)
	for _, seed := range ss {
		n := New(rand.New(rand.NewSource(seed)))
		n.Faults.ShortWrite = 0
		cli, srv, pa, pb, a, b := connect(t, n)
		srv.Write([]byte("on the way")) // sent before the crash: arrives
		n.CrashHost(b)
		if !b.Down() || a.Down() {
			t.Fatalf("seed %d: down: a %v, b %v", seed, a.Down(), b.Down())
		}
		// The dead end does nothing: no FIN, no reset, no byte.
		srv.Close()
		srv.Reset()
		srv.ShutWrite()
		if _, err := srv.Write([]byte("x")); !errors.Is(err, ErrDown) {
			t.Fatalf("seed %d: write on a crashed socket: %v", seed, err)
		}
		if _, err, _ := srv.Read(make([]byte, 4)); !errors.Is(err, ErrDown) {
			t.Fatalf("seed %d: read on a crashed socket: %v", seed, err)
		}
		if _, err := pb.Dial("tcp", a.IP.String()+":80"); !errors.Is(err, ErrDown) {
			t.Fatalf("seed %d: dial from a dead poller: %v", seed, err)
		}
		if _, err := pb.Listen("tcp", ":81", false); !errors.Is(err, ErrDown) {
			t.Fatalf("seed %d: listen on a dead poller: %v", seed, err)
		}
		run(n)
		got := string(readAll(cli))
		err := cli.End()
		switch {
		case errors.Is(err, syscall.ECONNRESET):
			resets++
		case err == nil:
			silent++
			if got != "on the way" {
				t.Fatalf("seed %d: silent peer read %q, want what was on the way", seed, got)
			}
			// Its bytes vanish until the host is up: then they reset it.
			if k, err := cli.Write([]byte("anyone?")); k != 7 || err != nil {
				t.Fatalf("seed %d: write to a silent peer: %d, %v", seed, k, err)
			}
			run(n)
			if err := cli.End(); err != nil {
				t.Fatalf("seed %d: while the host is down: %v, want silence", seed, err)
			}
			n.RestartHost(b)
			run(n)
			if err := cli.End(); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("seed %d: after the restart: %v, want ECONNRESET", seed, err)
			}
		default:
			t.Fatalf("seed %d: the peer of a crashed end: %v, want a reset or nothing", seed, err)
		}
		if !b.Down() {
			continue
		}
		// A connect to the down host is refused or unanswered (retried
		// until it times out); once up, a connect with no listener is
		// refused.
		d, err := pa.Dial("tcp", b.IP.String()+":80")
		if err != nil {
			t.Fatal(err)
		}
		run(n)
		if err := d.Err(); !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ETIMEDOUT) {
			t.Fatalf("seed %d: connect to a down host: %v", seed, err)
		}
		n.RestartHost(b)
		d, _ = pa.Dial("tcp", b.IP.String()+":80")
		run(n)
		if err := d.Err(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("seed %d: connect to a restarted host with no listener: %v", seed, err)
		}
	}
	if len(ss) >= 40 && (resets == 0 || silent == 0) {
		t.Fatalf("%d crashes: %d resets, %d silent peers; want both", len(ss), resets, silent)
	}
}

// A silent peer that keeps writing to a crashed host is held back by its
// window: its bytes are not taken without end.
func TestCrashHostWindow(t *testing.T) {
	for _, seed := range seeds(20) {
		n := New(rand.New(rand.NewSource(seed)))
		n.Faults.ShortWrite = 0
		n.Faults.Window = 1000
		cli, _, _, _, _, b := connect(t, n)
		n.CrashHost(b)
		run(n)
		if cli.End() != nil {
			continue // reset
		}
		total := 0
		for i := 0; i < 10; i++ {
			k, err := cli.Write(make([]byte, 300))
			if err != nil {
				t.Fatal(err)
			}
			total += k
			run(n)
		}
		if total != 1000 {
			t.Fatalf("seed %d: a silent peer wrote %d bytes, want the window's 1000", seed, total)
		}
	}
}

// Faults.CrashSilent and Faults.DownUnanswered weigh what a crash does to
// the peers and to connects.
func TestCrashFaults(t *testing.T) {
	cases := []struct {
		silent, unanswered float64
		peer, connect      error // nil peer: silence
	}{
		{0, 0, syscall.ECONNRESET, syscall.ECONNREFUSED},
		{1, 1, nil, syscall.ETIMEDOUT},
		{1, 0, nil, syscall.ECONNREFUSED},
		{0, 1, syscall.ECONNRESET, syscall.ETIMEDOUT},
	}
	for _, c := range cases {
		for _, seed := range seeds(10) {
			n := New(rand.New(rand.NewSource(seed)))
			n.Faults.CrashSilent, n.Faults.DownUnanswered = c.silent, c.unanswered
			cli, _, pa, _, _, b := connect(t, n)
			n.CrashHost(b)
			d, err := pa.Dial("tcp", b.IP.String()+":80")
			if err != nil {
				t.Fatal(err)
			}
			run(n)
			if err := cli.End(); !errors.Is(err, c.peer) { // errors.Is(nil, nil): silence
				t.Fatalf("%+v seed %d: the peer ended with %v", c, seed, err)
			}
			if err := d.Err(); !errors.Is(err, c.connect) {
				t.Fatalf("%+v seed %d: the connect failed with %v", c, seed, err)
			}
		}
	}
}

// Faults.AcceptFail and Faults.AcceptAbort fail an accept that finds a
// connection, as the kernel's does: EMFILE or ENFILE leaves the
// connection queued for the next accept; ECONNABORTED drops it and
// resets its client, on its connect when that has not ended yet.
func TestAcceptFaults(t *testing.T) {
	// pending dials a connection to a new listener on b and runs the
	// network until it is queued; with connected, until the client's
	// connect has ended too.
	pending := func(t *testing.T, n *Net, connected bool) (*Listener, *Sock) {
		t.Helper()
		a, b := n.Host("a"), n.Host("b")
		l, err := b.Poller().Listen("tcp", ":80", false)
		if err != nil {
			t.Fatal(err)
		}
		cli, err := a.Poller().Dial("tcp", b.IP.String()+":80")
		if err != nil {
			t.Fatal(err)
		}
		if connected {
			run(n)
		} else {
			at, _ := n.NextEvent() // the connect's arrival; its answer comes later
			n.Advance(at)
		}
		if len(l.backlog) != 1 || cli.IsConnected() != connected {
			t.Fatalf("queued %d, client connected %v; want 1, %v", len(l.backlog), cli.IsConnected(), connected)
		}
		return l, cli
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, n *Net) Hits
	}{
		{"nothing is drawn while nothing waits", func(t *testing.T, n *Net) Hits {
			n.Faults.AcceptFail, n.Faults.AcceptAbort = 1, 1
			l, err := n.Host("b").Poller().Listen("tcp", ":80", false)
			if err != nil {
				t.Fatal(err)
			}
			if s, err := l.Accept(); s != nil || err != nil {
				t.Fatalf("accept with nothing queued: %v, %v; want nil, nil", s, err)
			}
			return Hits{}
		}},
		{"EMFILE or ENFILE: the connection stays queued", func(t *testing.T, n *Net) Hits {
			l, cli := pending(t, n, true)
			n.Faults.AcceptFail = 1
			for range 3 {
				if s, err := l.Accept(); s != nil || !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
					t.Fatalf("accept: %v, %v; want nil, EMFILE or ENFILE", s, err)
				}
			}
			n.Faults.AcceptFail = 0
			s, err := l.Accept()
			if s == nil || err != nil || s.peer != cli {
				t.Fatalf("accept after the fault: %v, %v; want the client's connection", s, err)
			}
			cli.Write([]byte("hi"))
			run(n)
			if got := readAll(s); string(got) != "hi" || cli.End() != nil {
				t.Fatalf("read %q, client %v; want \"hi\", a live client", got, cli.End())
			}
			return Hits{AcceptFailed: 3}
		}},
		{"ECONNABORTED: the connection is dropped, its client reset", func(t *testing.T, n *Net) Hits {
			l, cli := pending(t, n, true)
			n.Faults.AcceptAbort = 1
			if s, err := l.Accept(); s != nil || !errors.Is(err, syscall.ECONNABORTED) {
				t.Fatalf("accept: %v, %v; want nil, ECONNABORTED", s, err)
			}
			if s, err := l.Accept(); s != nil || err != nil {
				t.Fatalf("accept after the abort: %v, %v; want nil, nil (nothing queued)", s, err)
			}
			run(n)
			if err := cli.End(); !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("client of an aborted connection: %v, want ECONNRESET", err)
			}
			return Hits{AcceptAborted: 1}
		}},
		{"ECONNABORTED before the connect ended: the connect fails", func(t *testing.T, n *Net) Hits {
			l, cli := pending(t, n, false)
			n.Faults.AcceptAbort = 1
			if s, err := l.Accept(); s != nil || !errors.Is(err, syscall.ECONNABORTED) {
				t.Fatalf("accept: %v, %v; want nil, ECONNABORTED", s, err)
			}
			run(n)
			if err := cli.Err(); cli.IsConnected() || !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("connect of an aborted connection: connected %v, %v; want ECONNRESET", cli.IsConnected(), err)
			}
			return Hits{AcceptAborted: 1}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := New(rand.New(rand.NewSource(1)))
			if want := tc.run(t, n); n.Hits() != want {
				t.Fatalf("hits %+v, want %+v", n.Hits(), want)
			}
		})
	}
	// Over seeds, every error comes, and accepts that succeed; the trace
	// of a seed is the same on every run.
	seen := map[error]bool{}
	trace := func(seed int64) uint64 {
		n := New(rand.New(rand.NewSource(seed)))
		n.Faults.AcceptFail, n.Faults.AcceptAbort = 0.5, 0.3
		l, _ := pending(t, n, true)
		for {
			s, err := l.Accept()
			seen[err] = true
			if errors.Is(err, ErrAborted) {
				break
			}
			if err != nil {
				continue
			}
			if s == nil {
				t.Fatalf("seed %d: the connection is gone without an abort", seed)
			}
			break
		}
		run(n)
		return n.Trace()
	}
	ss := seeds(20)
	for _, seed := range ss {
		if a, b := trace(seed), trace(seed); a != b {
			t.Fatalf("seed %d: traces %x and %x", seed, a, b)
		}
	}
	if len(ss) >= 20 && (!seen[syscall.EMFILE] || !seen[syscall.ENFILE] || !seen[syscall.ECONNABORTED] || !seen[nil]) {
		t.Fatalf("%d seeds drew %v; want EMFILE, ENFILE, ECONNABORTED and a connection", len(ss), seen)
	}
}
