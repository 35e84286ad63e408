package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves a Server on 127.0.0.1, its connections' output limit limit
// (0: netio's default), and shuts it down when the test ends.
func start(t *testing.T, limit int) (*Server, string) {
	t.Helper()
	ex := executor.New()
	ex.Start()
	srv := New(ex)
	var opts []netio.ListenOption
	if limit > 0 {
		opts = append(opts, netio.WithOutputLimit(limit))
	}
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", opts...)
	if err != nil {
		ex.Close()
		t.Fatal(err)
	}
	srv.Serve(l)
	t.Cleanup(func() {
		l.Close()
		if err := srv.Shutdown(spindletest.Context(t)); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return srv, l.Addr().String()
}

// client is one connection to the server, every read and write bounded by
// the safety net.
type client struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	return dialWith(t, &net.Dialer{}, addr)
}

func dialWith(t testing.TB, d *net.Dialer, addr string) *client {
	t.Helper()
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(spindletest.Safety))
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// send writes each line and "\n".
func (c *client) send(lines ...string) {
	c.t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if _, err := io.WriteString(c.c, b.String()); err != nil {
		c.t.Fatal(err)
	}
}

// line reads the next line, without its "\n".
func (c *client) line() string {
	c.t.Helper()
	s, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a line: %q, %v", s, err)
	}
	return strings.TrimSuffix(s, "\n")
}

// expect reads the next lines and fails unless they are want.
func (c *client) expect(want ...string) {
	c.t.Helper()
	for _, w := range want {
		if got := c.line(); got != w {
			c.t.Fatalf("got %q, want %q", got, w)
		}
	}
}

// ended fails unless the server has closed the connection: the next read
// finds EOF (or a reset), not a line and not the safety deadline.
func (c *client) ended() {
	c.t.Helper()
	_, err := io.Copy(io.Discard, c.r)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("want EOF, got %v", err)
	}
}

func stats(t *testing.T, srv *Server) Stats {
	t.Helper()
	st, err := srv.Stats(spindletest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestProtocol(t *testing.T) {
	srv, addr := start(t, 0)
	a, b := dial(t, addr), dial(t, addr)

	a.send("SUB news")
	a.expect("OK")
	b.send("PUB news hello  world ")
	b.expect("OK 1")
	a.expect("MSG news hello  world ") // the message is the rest of the line, spaces kept

	b.send("PUB sports x")
	b.expect("OK 0")

	// Commands in any case; topics as given.
	a.send("sub Sports", "SUB news")
	a.expect("OK", "OK")
	b.send("PUB Sports go", "PUB news again")
	b.expect("OK 1", "OK 1") // subscribing twice delivers once
	a.expect("MSG Sports go", "MSG news again")

	// After UNSUB nothing more arrives: PONG is a's next line.
	a.send("UNSUB news", "UNSUB never-subscribed")
	a.expect("OK", "OK")
	b.send("PUB news gone")
	b.expect("OK 0")
	a.send("PING\r") // "\r\n" ends a line too
	a.expect("PONG")

	// A publisher that subscribes gets its own message, before its reply.
	b.send("SUB self", "PUB self me")
	b.expect("OK", "MSG self me", "OK 1")

	// A command split across writes.
	io.WriteString(b.c, "PU")
	io.WriteString(b.c, "B Sports split\n")
	b.expect("OK 1")
	a.expect("MSG Sports split")

	st := stats(t, srv)
	want := Stats{Conns: 2, Topics: 2, Subscribers: 2, Published: 7, Delivered: 5}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}

	// QUIT closes the connection and its subscriptions go with it.
	a.send("QUIT")
	a.expect("BYE")
	a.ended()
	b.send("PUB Sports late")
	b.expect("OK 0")
	if st := stats(t, srv); st.Conns != 1 || st.Topics != 1 || st.Subscribers != 1 {
		t.Errorf("after QUIT: %+v, want 1 connection, 1 topic, 1 subscriber", st)
	}
}

// Malformed commands answer ERR and the connection goes on.
func TestBadInput(t *testing.T) {
	srv, addr := start(t, 0)
	c := dial(t, addr)
	for _, tc := range []struct{ line, want string }{
		{"", "ERR unknown command"},
		{"FOO bar", "ERR unknown command"},
		{"\x00\xff\x7f", "ERR unknown command"},
		{"SUB", "ERR usage: SUB topic"},
		{"SUB ", "ERR usage: SUB topic"},
		{"SUB two words", "ERR usage: SUB topic"},
		{"UNSUB", "ERR usage: UNSUB topic"},
		{"PUB", "ERR usage: PUB topic message"},
		{"PUB topic", "ERR usage: PUB topic message"},
		{"PUB topic ", "ERR usage: PUB topic message"},
		{"PUB  message", "ERR usage: PUB topic message"},
		{"PING now", "ERR PING takes no argument"},
	} {
		c.send(tc.line)
		if got := c.line(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
	c.send("PING")
	c.expect("PONG")
	if st := stats(t, srv); st.BadCommands != 12 {
		t.Errorf("BadCommands = %d, want 12", st.BadCommands)
	}
}

// A line longer than MaxLine answers ERR and closes the connection, with or
// without its "\n"; other connections go on.
func TestLineTooLong(t *testing.T) {
	_, addr := start(t, 0)
	for _, tail := range []string{"", "\n"} {
		c := dial(t, addr)
		go io.WriteString(c.c, "PUB t "+strings.Repeat("x", MaxLine)+tail) // the server may close before reading all
		c.expect("ERR line too long")
		c.ended()
	}
	c := dial(t, addr)
	c.send("PING")
	c.expect("PONG")
}

// A subscriber that never reads is disconnected once its output passes the
// limit, and counted; the publisher and a subscriber that reads lose
// nothing. The slow subscriber's output first fills the kernel's socket
// buffers (a few MB on loopback, the server's send buffer grows by
// itself), then the limit.
func TestSlowSubscriber(t *testing.T) {
	const limit = 1 << 20 // the reading subscriber never lags this far behind
	srv, addr := start(t, limit)
	// A small receive buffer keeps the slow subscriber's share of the
	// kernel's buffers small.
	small := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	slow := dialWith(t, small, addr)
	fast, pub := dial(t, addr), dial(t, addr)
	slow.send("SUB t")
	slow.expect("OK")
	fast.send("SUB t")
	fast.expect("OK")

	got := make(chan int, 1)
	go func() { // fast reads everything, up to the last message
		n := 0
		for {
			s, err := fast.r.ReadString('\n')
			if err != nil {
				t.Errorf("the reading subscriber, after %d messages: %v", n, err)
				got <- -1
				return
			}
			n++
			if s == "MSG t end\n" {
				got <- n
				return
			}
		}
	}()

	msg := "PUB t " + strings.Repeat("m", 4000)
	const batch, maxPubs = 16, 8_000 // maxPubs bounds the test: 32 MB
	pubs, dropped := 0, false
	for pubs < maxPubs && !dropped {
		lines := make([]string, batch)
		for i := range lines {
			lines[i] = msg
		}
		pub.send(lines...)
		for range batch {
			switch r := pub.line(); r {
			case "OK 2":
			case "OK 1":
				dropped = true
			default:
				t.Fatalf("PUB answered %q", r)
			}
		}
		pubs += batch
	}
	if !dropped {
		t.Fatalf("the slow subscriber was not dropped after %d messages", pubs)
	}
	t.Logf("the slow subscriber was dropped after %d messages of 4 KB", pubs)
	pub.send("PUB t end")
	pub.expect("OK 1")
	if n := spindletest.Recv(t, got); n != pubs+1 {
		t.Errorf("the reading subscriber got %d messages, want %d", n, pubs+1)
	}
	slow.ended() // what it had not read was dropped: EOF or a reset, soon
	st := stats(t, srv)
	if st.Dropped != 1 || st.Conns != 2 || st.Subscribers != 1 || st.Published != uint64(pubs+1) {
		t.Errorf("stats %+v, want 1 dropped, 2 connections, 1 subscriber, %d published", st, pubs+1)
	}
}

// 200 clients at once: each subscribes to one of 10 topics and publishes
// 10 messages to the next topic. Every subscriber gets every message of its
// topic, each publisher's in order, and the counts add up.
func TestLoad(t *testing.T) {
	const clients, topics, perClient = 200, 10, 10
	const subsPerTopic = clients / topics
	srv, addr := start(t, 0)
	cs := make([]*client, clients)
	spindletest.Parallel(clients, func(i int) {
		cs[i] = dial(t, addr)
		cs[i].send(fmt.Sprintf("SUB t%d", i%topics))
		cs[i].expect("OK")
	})
	spindletest.Parallel(clients, func(i int) {
		c := cs[i]
		lines := make([]string, perClient)
		for k := range lines {
			lines[k] = fmt.Sprintf("PUB t%d c%d %d", (i+1)%topics, i, k)
		}
		c.send(lines...)
		next := map[string]int{} // publisher -> next sequence number expected
		oks, msgs := 0, 0
		for oks < perClient || msgs < subsPerTopic*perClient {
			s, err := c.r.ReadString('\n')
			if err != nil {
				t.Errorf("client %d: %v after %d replies and %d messages", i, err, oks, msgs)
				return
			}
			var topic, from string
			var seq int
			switch {
			case s == fmt.Sprintf("OK %d\n", subsPerTopic):
				oks++
			case strings.HasPrefix(s, "MSG "):
				if _, err := fmt.Sscanf(s, "MSG %s %s %d\n", &topic, &from, &seq); err != nil || topic != fmt.Sprintf("t%d", i%topics) || seq != next[from] {
					t.Errorf("client %d: %q out of place (want seq %d)", i, s, next[from])
					return
				}
				next[from]++
				msgs++
			default:
				t.Errorf("client %d: unexpected %q", i, s)
				return
			}
		}
	})
	st := stats(t, srv)
	want := Stats{Conns: clients, Topics: topics, Subscribers: clients, Published: clients * perClient, Delivered: clients * perClient * subsPerTopic}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// Shutdown sends what was written, closes the connections and the loop.
func TestShutdown(t *testing.T) {
	ex := executor.New()
	ex.Start()
	srv := New(ex)
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(l)
	sub, pub := dial(t, l.Addr().String()), dial(t, l.Addr().String())
	sub.send("SUB t")
	sub.expect("OK")
	pub.send("PUB t bye")
	pub.expect("OK 1")
	l.Close()
	if err := srv.Shutdown(spindletest.Context(t)); err != nil {
		t.Fatal(err)
	}
	sub.expect("MSG t bye")
	sub.ended()
	pub.ended()
	if _, err := srv.Stats(context.Background()); !errors.Is(err, executor.ErrClosed) {
		t.Errorf("Stats after Shutdown: %v, want executor.ErrClosed", err)
	}
}

func TestNewNil(t *testing.T) {
	spindletest.MustPanic(t, "pubsub:", "nil executor", func() { New(nil) })
}
