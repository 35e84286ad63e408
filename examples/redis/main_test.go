package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(runMainEnv); ok {
		// The test binary run as the server itself (TestSIGTERM).
		os.Args = append(os.Args[:1], strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(afterRun{m, removeLincheck})
}

// afterRun runs after once the tests have run (before the leak check).
type afterRun struct {
	m     *testing.M
	after func()
}

func (a afterRun) Run() int {
	defer a.after()
	return a.m.Run()
}

// runMainEnv, set to main's arguments, makes the test binary run main.
const runMainEnv = "SPINDLE_REDIS_RUN_MAIN"

// step is one request and the bytes the server answers it with.
type step struct {
	req, reply string
	closed     bool
}

// start runs a server on a free loopback port until the test ends.
func start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Shards == 0 {
		cfg.Shards = 4 // most keys are on another shard than their connection
	}
	s := NewServer(cfg)
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// respClient is a small RESP client for the tests: it sends raw requests
// and reads raw replies.
type respClient struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

func dial(t testing.TB, s *Server) *respClient {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(spindletest.Safety))
	return &respClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// multibulk encodes a request.
func multibulk(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// send writes a request. The safety bound holds for each request and each
// reply (send, read), not for the connection's whole life: a test that runs
// long on a loaded machine keeps its first connections usable.
func (c *respClient) send(raw string) {
	c.t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(spindletest.Safety))
	if _, err := io.WriteString(c.conn, raw); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one whole reply and returns its bytes.
func (c *respClient) read() (string, error) {
	_ = c.conn.SetDeadline(time.Now().Add(spindletest.Safety))
	var b bytes.Buffer
	err := c.readInto(&b)
	return b.String(), err
}

func (c *respClient) readInto(b *bytes.Buffer) error {
	line, err := c.r.ReadString('\n')
	b.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("short reply line %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '$':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*':
		for range max(n, 0) {
			if err := c.readInto(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// do sends a request and returns its reply.
func (c *respClient) do(args ...string) string {
	c.t.Helper()
	c.send(multibulk(args...))
	r, err := c.read()
	if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	return r
}

// expectClosed checks that the server closes the connection with nothing
// more to say.
func (c *respClient) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(spindletest.Safety))
	rest, err := io.ReadAll(c.r)
	if len(rest) > 0 {
		c.t.Fatalf("after the last reply: %q", rest)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		c.t.Fatalf("waiting for the close: %v", err)
	}
}

// Every command against the bytes redis-server 7 answered (replies_test.go).
func TestReplies(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	s := start(t, Config{Clock: now.Load})
	for _, tc := range replyCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			c.send("FLUSHALL\r\n")
			if r, err := c.read(); err != nil || r != "+OK\r\n" {
				t.Fatalf("FLUSHALL: %q %v", r, err)
			}
			for i, st := range tc.steps {
				c.send(st.req)
				if st.reply == "<count>" {
					st.reply = fmt.Sprintf(":%d\r\n", len(commandList))
				}
				got := make([]byte, len(st.reply))
				if _, err := io.ReadFull(c.r, got); err != nil {
					t.Fatalf("step %d %q: %v (read %q)", i, st.req, err, got)
				}
				if string(got) != st.reply {
					t.Fatalf("step %d %q:\n got %q\nwant %q", i, st.req, got, st.reply)
				}
				if st.closed {
					c.expectClosed()
					return
				}
			}
			// Nothing more comes: half-close, and the server closes too.
			_ = c.conn.(*net.TCPConn).CloseWrite()
			c.expectClosed()
		})
	}
}

// A pipeline of requests on keys of every shard, with PINGs and
// multi-shard commands between them, gets its replies in request order,
// all in one piece.
func TestPipelineOrder(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	var req, want strings.Builder
	const n = 500
	for i := range n {
		k := "key:" + strconv.Itoa(i)
		req.WriteString(multibulk("SET", k, strconv.Itoa(i)))
		want.WriteString("+OK\r\n")
		req.WriteString(multibulk("GET", k))
		fmt.Fprintf(&want, "$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
		req.WriteString("PING\r\n")
		want.WriteString("+PONG\r\n")
		if i > 0 {
			prev := "key:" + strconv.Itoa(i-1)
			req.WriteString(multibulk("MGET", prev, "nokey", k))
			// key:i-1 was set to i-1, then incremented.
			fmt.Fprintf(&want, "*3\r\n$%d\r\n%d\r\n$-1\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i, len(strconv.Itoa(i)), i)
			req.WriteString(multibulk("EXISTS", prev, k, "nokey", k))
			want.WriteString(":3\r\n")
		}
		req.WriteString(multibulk("INCR", k))
		fmt.Fprintf(&want, ":%d\r\n", i+1)
	}
	req.WriteString(multibulk("DBSIZE"))
	fmt.Fprintf(&want, ":%d\r\n", n)
	req.WriteString(multibulk("DEL", "key:0", "key:1", "key:2", "nokey"))
	want.WriteString(":3\r\n")
	req.WriteString(multibulk("DBSIZE"))
	fmt.Fprintf(&want, ":%d\r\n", n-3)
	c.send(req.String())
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c.r, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		i := 0
		for i < len(got) && got[i] == want.String()[i] {
			i++
		}
		t.Fatalf("replies differ at byte %d: got %q, want %q", i, got[i:min(len(got), i+80)], want.String()[i:min(want.Len(), i+80)])
	}
	// The remote keys did go to other shards: every shard has some.
	info := c.do("INFO", "spindle")
	for i := range s.g.Len() {
		if !strings.Contains(info, fmt.Sprintf("shard%d:", i)) || strings.Contains(info, fmt.Sprintf("shard%d:utilization", i)) && strings.Contains(info, fmt.Sprintf("shard%d:keys=0,", i)) {
			t.Fatalf("INFO spindle: %q", info)
		}
	}
}

// A request that arrives a byte at a time is answered as one.
func TestRequestByteByByte(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	req := multibulk("SET", "slow", "value") + multibulk("GET", "slow") + "PING hi\r\n"
	for i := range len(req) {
		c.send(req[i : i+1])
	}
	for _, want := range []string{"+OK\r\n", "$5\r\nvalue\r\n", "$2\r\nhi\r\n"} {
		if r, err := c.read(); err != nil || r != want {
			t.Fatalf("got %q %v, want %q", r, err, want)
		}
	}
}

// Limits are checked before anything of their size is allocated, and a
// client past one costs only its own connection.
func TestLimits(t *testing.T) {
	s := start(t, Config{MaxBulk: 1 << 20, MaxMultibulk: 1000, QueryBufferLimit: 256 << 10, OutputLimit: 256 << 10})
	other := dial(t, s)
	other.do("SET", "big", strings.Repeat("x", 100000))

	// refused sends req on a new connection: Redis's reply, then the close.
	refused := func(t *testing.T, req, reply string) {
		c := dial(t, s)
		c.send(req)
		if r, _ := c.read(); r != reply {
			t.Fatalf("got %q, want %q", r, reply)
		}
		c.expectClosed()
	}
	t.Run("bulk", func(t *testing.T) {
		refused(t, "*2\r\n$3\r\nGET\r\n$1048577\r\n", "-ERR Protocol error: invalid bulk length\r\n")
	})
	t.Run("multibulk", func(t *testing.T) {
		refused(t, "*1001\r\n", "-ERR Protocol error: invalid multibulk length\r\n")
		c := dial(t, s)
		if r := c.do("MGET", "a", "b", "c", "d", "e", "f", "g"); r != "*7\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n" {
			t.Fatalf("MGET of 7 keys: %q", r)
		}
	})
	t.Run("query buffer", func(t *testing.T) {
		// 300 bulks of 1,000 bytes: each under the bulk limit, the request
		// past the query buffer limit.
		c := dial(t, s)
		c.send("*300\r\n")
		for range 300 {
			if _, err := io.WriteString(c.conn, "$1000\r\n"+strings.Repeat("y", 1000)+"\r\n"); err != nil {
				break // closed by the server
			}
		}
		c.expectClosed()
	})
	t.Run("output", func(t *testing.T) {
		// A client that sends GETs of a 100 KB value and never reads is
		// disconnected once its unread replies pass the output limit.
		conn, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		req := []byte(strings.Repeat(multibulk("GET", "big"), 100))
		_ = conn.SetWriteDeadline(time.Now().Add(spindletest.Safety))
		for {
			if _, err := conn.Write(req); err != nil {
				break // the server closed it
			}
		}
	})
	// The other client never noticed.
	if r := other.do("GET", "big"); r != "$100000\r\n"+strings.Repeat("x", 100000)+"\r\n" {
		t.Fatalf("other client: %q", r)
	}
}

// 200 clients INCR 10 shared keys at once; the counts come out exact.
func TestConcurrentIncr(t *testing.T) {
	s := start(t, Config{})
	const clients, each, keys = 200, 50, 10
	cs := make([]*respClient, clients)
	for i := range cs {
		cs[i] = dial(t, s)
	}
	spindletest.Parallel(clients, func(i int) {
		c := cs[i]
		var req strings.Builder
		for j := range each {
			req.WriteString(multibulk("INCR", "counter:"+strconv.Itoa((i+j)%keys)))
		}
		c.send(req.String())
		for range each {
			if r, err := c.read(); err != nil || r[0] != ':' {
				t.Errorf("INCR: %q %v", r, err)
				return
			}
		}
	})
	c := dial(t, s)
	total := 0
	for k := range keys {
		r := c.do("GET", "counter:"+strconv.Itoa(k))
		lines := strings.Split(r, "\r\n")
		n, err := strconv.Atoi(lines[1])
		if err != nil {
			t.Fatalf("GET: %q", r)
		}
		if n != clients*each/keys {
			t.Errorf("counter:%d = %d, want %d", k, n, clients*each/keys)
		}
		total += n
	}
	if total != clients*each {
		t.Fatalf("total %d, want %d", total, clients*each)
	}
}

// 10,000 keys with a time to live go away by active expiry, without
// anyone reading them, and an expired key is gone for a reader even
// before the expiry timer comes by.
func TestExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	s := start(t, Config{Clock: now.Load, ExpireInterval: time.Millisecond})
	c := dial(t, s)
	const n = 10000
	var req strings.Builder
	for i := range n {
		req.WriteString(multibulk("SET", "exp:"+strconv.Itoa(i), "v", "PX", "1000"))
	}
	req.WriteString(multibulk("SET", "forever", "v"))
	c.send(req.String())
	for range n + 1 {
		if r, _ := c.read(); r != "+OK\r\n" {
			t.Fatalf("SET: %q", r)
		}
	}
	if r := c.do("DBSIZE"); r != fmt.Sprintf(":%d\r\n", n+1) {
		t.Fatalf("DBSIZE before: %q", r)
	}
	if r := c.do("PTTL", "exp:1"); r != ":1000\r\n" {
		t.Fatalf("PTTL: %q", r)
	}
	now.Add(1001)
	// Lazy: the key is gone for a reader at once.
	if r := c.do("GET", "exp:7"); r != "$-1\r\n" {
		t.Fatalf("GET of an expired key: %q", r)
	}
	// Active: the timers delete the rest. Each DBSIZE is a round trip to
	// every shard, which lets their timers run in between.
	deadline := time.Now().Add(spindletest.Safety)
	for c.do("DBSIZE") != ":1\r\n" {
		if time.Now().After(deadline) {
			t.Fatalf("keys left: %s", c.do("DBSIZE"))
		}
	}
	info := c.do("INFO", "stats")
	if !strings.Contains(info, fmt.Sprintf("expired_keys:%d\r\n", n)) {
		t.Fatalf("INFO stats: %q", info)
	}
}

// Shutdown lets a request in flight answer, then closes the connections.
func TestShutdown(t *testing.T) {
	s := NewServer(Config{Shards: 2})
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	idle := dial(t, s)
	busy := dial(t, s)
	busy.do("SET", "k", "v")
	busy.send(multibulk("GET", "k"))
	r, err := busy.read()
	if err != nil || r != "$1\r\nv\r\n" {
		t.Fatalf("GET: %q %v", r, err)
	}
	// The clients read until the end of the stream, then close, as a
	// client does: Shutdown returns once they have, not after the linger.
	rests := make(chan string, 2)
	for _, c := range []*respClient{idle, busy} {
		_ = c.conn.SetDeadline(time.Now().Add(spindletest.Safety))
		go func() {
			rest, err := io.ReadAll(c.r)
			c.conn.Close()
			if err != nil && !strings.Contains(err.Error(), "reset") {
				rest = append(rest, err.Error()...)
			}
			rests <- string(rest)
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if rest := <-rests; rest != "" {
			t.Fatalf("after the last reply: %q", rest)
		}
	}
	if _, err := net.Dial("tcp", s.Addr().String()); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
}

// The replies to one pipeline, whatever shards answer it, leave in one
// write: the client's first read returns all of them.
func TestOneWritePerBatch(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	var req, want strings.Builder
	for i := range 40 {
		k := "one:" + strconv.Itoa(i)
		req.WriteString(multibulk("SET", k, "v"))
		req.WriteString(multibulk("GET", k))
		req.WriteString("PING\r\n")
		want.WriteString("+OK\r\n$1\r\nv\r\n+PONG\r\n")
	}
	c.send(req.String())
	buf := make([]byte, 2*want.Len())
	n, err := c.conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != want.String() {
		t.Fatalf("first read: %d bytes %q, want all %d bytes", n, buf[:min(n, 80)], want.Len())
	}
}

// Close closes everything at once: idle connections, one with half a
// request, the shards; nothing is left running (goleak in TestMain).
func TestClose(t *testing.T) {
	s := NewServer(Config{Shards: 2})
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	idle, partial := dial(t, s), dial(t, s)
	if r := idle.do("PING"); r != "+PONG\r\n" {
		t.Fatalf("PING: %q", r)
	}
	partial.do("SET", "k", "v")
	partial.send("*2\r\n$3\r\nGET\r\n$1\r\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idle.expectClosed()
	partial.expectClosed()
}
