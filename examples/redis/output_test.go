package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// connStat is what the server holds for one connection.
type connStat struct {
	id       uint64
	state    connState
	buffered int // reply bytes written, not yet taken by the kernel
	held     int // bytes of the pipeline's reply buffers
	waiting  int // batches in flight
}

// conns returns the state of every connection of s, read on each shard's
// loop.
func conns(t testing.TB, s *Server) []connStat {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	var all []connStat
	for i := range s.g.Len() {
		got, err := shard.Call(s.g, i, func() ([]connStat, error) {
			var out []connStat
			for c := s.shards.Local().clients; c != nil; c = c.next {
				st := connStat{id: c.id, state: c.state}
				if c.state != stClosed {
					st.buffered = c.conn.Buffered()
				}
				if c.pl != nil {
					st.waiting = c.pl.waiting
					st.held = cap(c.pl.out) + cap(c.pl.pend)
					for _, b := range c.pl.batches {
						if st.waiting == 0 { // else they are the shards'
							st.held += cap(b.out)
						}
					}
				}
				out = append(out, st)
			}
			return out, nil
		}).Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	return all
}

// neverReader connects, shrinks its receive buffer, sends req in one
// write and never reads.
func neverReader(t testing.TB, s *Server, req string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	_ = conn.SetWriteDeadline(time.Now().Add(spindletest.Safety))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// Clients that send 500 GETs of a large value in one write and never read
// cost the server about the high-water mark each, not their 500 replies:
// their requests wait while their output does not drain, and another
// client is answered meanwhile.
func TestBackpressureBoundsOutput(t *testing.T) {
	const highWater, value = 256 << 10, 100 << 10
	s := start(t, Config{OutputHighWater: highWater})
	c := dial(t, s)
	var keys []string
	for i := range 8 {
		k := "big" + strconv.Itoa(i)
		keys = append(keys, k)
		if r := c.do("SET", k, strings.Repeat(strconv.Itoa(i), value)); r != "+OK\r\n" {
			t.Fatalf("SET: %q", r)
		}
	}
	var req strings.Builder
	for i := range 500 {
		req.WriteString(multibulk("GET", keys[i%len(keys)]))
	}
	const clients = 3
	for range clients {
		neverReader(t, s, req.String())
	}
	// Wait until every never-reading client is held back by its output.
	// What one connection may hold: the high-water mark and one round
	// written (each shard's budget and one reply), and the round's buffers,
	// their capacity up to twice what they hold. 500 replies are 50 MB.
	round := s.g.Len()*(highWater+value) + value
	bound := highWater + round + 2*2*round
	deadline := time.Now().Add(spindletest.Safety)
	for {
		held := 0
		for _, st := range conns(t, s) {
			if st.state == stBusy && st.waiting == 0 { // waiting for its output to drain
				held++
				if st.buffered+st.held > bound {
					t.Fatalf("connection %d holds %d bytes of replies (buffered %d), more than %d", st.id, st.buffered+st.held, st.buffered, bound)
				}
			}
		}
		if held == clients {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d never-reading clients held back: %+v", held, clients, conns(t, s))
		}
	}
	// They stay held: nothing more is run for them, and another client is
	// answered.
	before := conns(t, s)
	for range 20 {
		if r := c.do("PING"); r != "+PONG\r\n" {
			t.Fatalf("PING: %q", r)
		}
	}
	for _, st := range conns(t, s) {
		for _, b := range before {
			if b.id == st.id && st.buffered+st.held > bound {
				t.Fatalf("connection %d grew to %d bytes", st.id, st.buffered+st.held)
			}
		}
	}
}

// A client that sends many large replies' worth of requests, on keys of
// every shard and with multi-key commands among them, then reads, gets
// every reply whole and in order, however many rounds and continuations
// the backpressure cuts them into.
func TestBackpressureKeepsOrder(t *testing.T) {
	const highWater = 64 << 10
	s := start(t, Config{OutputHighWater: highWater})
	c := dial(t, s)
	vals := map[string]string{}
	var keys []string
	for i := range 16 {
		k := "v" + strconv.Itoa(i)
		v := strings.Repeat(string(rune('a'+i)), 10<<10+i*1000)
		keys, vals[k] = append(keys, k), v
		c.do("SET", k, v)
	}
	bulk := func(v string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v) }
	var req, want strings.Builder
	for i := range 400 {
		k := keys[i%len(keys)]
		switch i % 5 {
		case 0, 1:
			req.WriteString(multibulk("GET", k))
			want.WriteString(bulk(vals[k]))
		case 2:
			m := []string{keys[(i+3)%16], keys[(i+7)%16], "nokey", keys[(i+11)%16]}
			req.WriteString(multibulk(append([]string{"MGET"}, m...)...))
			want.WriteString("*4\r\n" + bulk(vals[m[0]]) + bulk(vals[m[1]]) + "$-1\r\n" + bulk(vals[m[3]]))
		case 3:
			req.WriteString("PING\r\n")
			want.WriteString("+PONG\r\n")
		case 4:
			req.WriteString(multibulk("INCR", "n"))
			fmt.Fprintf(&want, ":%d\r\n", i/5+1)
		}
	}
	go func() { _, _ = io.WriteString(c.conn, req.String()) }()
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c.r, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		i := 0
		for i < len(got) && got[i] == want.String()[i] {
			i++
		}
		t.Fatalf("replies differ at byte %d of %d: got %q, want %q", i, want.Len(), got[i:min(len(got), i+60)], want.String()[i:min(want.Len(), i+60)])
	}
}

// A client that reads none of its replies is closed once the output
// timeout passes, wherever its replies wait: in the server, past the
// high-water mark (the connection held back) or under it, or all in the
// kernel's send buffer, which holds them unacknowledged by the client
// (Conn.Unacked). Another client is served meanwhile and after.
func TestOutputTimeout(t *testing.T) {
	for _, tc := range []struct {
		name            string
		highWater       int
		value, requests int
	}{
		{"held back", 64 << 10, 100 << 10, 200},                // 20 MB of replies
		{"under the high-water mark", 16 << 20, 100 << 10, 60}, // 6 MB, not held
		{"all in the kernel", 0, 1 << 10, 100},                 // 100 KB: the kernel takes them
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.highWater == 0 && runtime.GOOS != "linux" {
				t.Skip("outside Linux, netio cannot tell what the kernel holds unacknowledged (Conn.Unacked)")
			}
			s := start(t, Config{OutputHighWater: tc.highWater, OutputTimeout: 200 * time.Millisecond})
			c := dial(t, s)
			c.do("SET", "k", strings.Repeat("x", tc.value))
			conn := neverReader(t, s, strings.Repeat(multibulk("GET", "k"), tc.requests))
			deadline := time.Now().Add(spindletest.Safety)
			for len(conns(t, s)) != 1 {
				if time.Now().After(deadline) {
					t.Fatalf("the never-reading client is still open: %+v", conns(t, s))
				}
			}
			// The client finds its connection cut: what it reads ends
			// with a reset (the replies unsent were dropped), or the end.
			_ = conn.SetReadDeadline(time.Now().Add(spindletest.Safety))
			_, err := io.Copy(io.Discard, conn)
			if err != nil && !isReset(err) {
				t.Fatalf("reading after the cut: %v, want a reset or the end", err)
			}
			if r := c.do("PING"); r != "+PONG\r\n" {
				t.Fatalf("PING: %q", r)
			}
		})
	}
}

// A client that reads its replies slowly, a little at a time, is not
// closed by the output timeout, however long it takes to read them all:
// every check finds more of its output taken.
func TestOutputTimeoutSpares(t *testing.T) {
	const value, gets = 64 << 10, 40 // 2.5 MB, read 16 KB at a time
	s := start(t, Config{OutputHighWater: 256 << 10, OutputTimeout: 3 * time.Second})
	c := dial(t, s)
	v := strings.Repeat("y", value)
	c.do("SET", "k", v)
	_ = c.conn.(*net.TCPConn).SetReadBuffer(16 << 10)
	c.send(strings.Repeat(multibulk("GET", "k"), gets))
	want := strings.Repeat("$"+strconv.Itoa(value)+"\r\n"+v+"\r\n", gets)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 16<<10)
	for len(got) < len(want) {
		_ = c.conn.SetReadDeadline(time.Now().Add(spindletest.Safety))
		n, err := c.r.Read(buf)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
		}
		got = append(got, buf[:n]...)
		time.Sleep(2 * time.Millisecond) // a slow reader, not a synchronisation
	}
	if string(got) != want {
		t.Fatal("the replies differ")
	}
}

// isReset reports whether err is a connection reset.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "reset")
}

// A reply larger than any limit but the one on requests is sent whole:
// Redis's normal clients have no output limit by default. The value is
// past four times netio's default output limit (the most netio lets wait
// whatever the peer does, had the server not lifted it) and the
// high-water mark (a shard's budget for one round). The request and the
// reply are written and read a piece at a time, each with its deadline,
// so that a loaded machine makes the test slower, never failed, while
// bytes move.
func TestLargeReply(t *testing.T) {
	const pattern = "0123456789"
	size := 4*netio.DefaultOutputLimit + DefaultOutputHighWater + 7
	s := start(t, Config{Shards: 2})
	c := dial(t, s)
	const piece = 1 << 20
	v := bytes.Repeat([]byte(pattern), size/len(pattern)+1)
	v = v[:size]
	put := func(b []byte) {
		for len(b) > 0 {
			n := min(len(b), piece)
			_ = c.conn.SetWriteDeadline(time.Now().Add(spindletest.Safety))
			if _, err := c.conn.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
	}
	put([]byte("*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$" + strconv.Itoa(size) + "\r\n"))
	put(v)
	put([]byte("\r\n"))
	if r, err := c.read(); err != nil || r != "+OK\r\n" {
		t.Fatalf("SET of %d bytes: %q %v", size, r, err)
	}
	c.send(multibulk("GET", "huge"))
	want := append(append([]byte("$"+strconv.Itoa(size)+"\r\n"), v...), "\r\n"...)
	buf := make([]byte, piece)
	for got := 0; got < len(want); {
		_ = c.conn.SetReadDeadline(time.Now().Add(spindletest.Safety))
		n, err := c.r.Read(buf[:min(len(buf), len(want)-got)])
		if !bytes.Equal(buf[:n], want[got:got+n]) {
			t.Fatalf("GET of %d bytes: bytes %d to %d differ", size, got, got+n)
		}
		got += n
		if err != nil {
			t.Fatalf("GET of %d bytes: after %d bytes: %v", size, got, err)
		}
	}
}
