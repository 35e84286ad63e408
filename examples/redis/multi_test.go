package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// multiCases are transactions sent on one connection, to both servers
// (differential_test.go adds them to its cases): redis-server 7's bytes,
// its errors at queueing and at EXEC included.
var multiCases = []struct {
	name   string
	chunks []string
}{
	{"multi exec", []string{"MULTI\r\nSET a 1\r\nGET a\r\nINCR a\r\nEXEC\r\nGET a\r\nMULTI\r\nEXEC\r\n"}},
	{"multi errors at queueing", []string{"MULTI\r\nSET a 1\r\nFOO bar\r\nGET\r\nEXEC\r\nGET a\r\nEXEC\r\n"}},
	{"multi errors when run", []string{"MULTI\r\nMSET a 1 b\r\nFLUSHALL x\r\nINCR a\r\nSET a x\r\nINCR a\r\nLPUSH a x\r\nSET a 1 EX 0\r\nGET a\r\nEXEC\r\n"}},
	{"multi without", []string{"EXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nEXEC\r\nMULTI\r\nSET a 1\r\nMULTI\r\nEXEC\r\n"}},
	{"discard", []string{"MULTI\r\nSET a 1\r\nDISCARD\r\nGET a\r\nDISCARD\r\n"}},
	{"arity of the transaction commands", []string{"MULTI\r\nEXEC x\r\nDISCARD x\r\nMULTI x\r\nEXEC\r\nUNWATCH x\r\nWATCH\r\nEXEC x\r\nPING\r\n"}},
	{"exec arity unwatches", []string{"WATCH k\r\nEXEC x\r\nSET k 1\r\nMULTI\r\nEXEC\r\n"}},
	{"subcommands at queueing", []string{
		"MULTI\r\nCLIENT FOO\r\nEXEC\r\nMULTI\r\nCLIENT SETNAME\r\nEXEC\r\nMULTI\r\nCONFIG GET\r\nEXEC\r\n" +
			"MULTI\r\nCOMMAND FOO\r\nEXEC\r\nMULTI\r\nCOMMAND COUNT x\r\nEXEC\r\nMULTI\r\nMEMORY PURGE x\r\nEXEC\r\n",
		"MULTI\r\nCLIENT SETNAME foo\r\nCLIENT GETNAME\r\nPING\r\nECHO x\r\nSELECT 0\r\nEXEC\r\nCLIENT GETNAME\r\n",
	}},
	{"arity at queueing, options when run", []string{"MULTI\r\nPING a b\r\nLPOP a 1 2\r\nHSET h a\r\nZADD z 1\r\nSPOP s 1 2\r\nZPOPMIN z 1 2\r\nEXEC\r\nMULTI\r\nPING a b\r\nLPOP a 1 2\r\nEXEC\r\n"}},
	{"multi over shards", []string{
		"MULTI\r\nMSET a 1 b 2 c 3 d 4\r\nMGET a b c d e\r\nMSETNX a 1 x 2\r\nMSETNX x 1 y 2 z 3\r\nMGET x y z\r\nDEL a b x q\r\nEXISTS a b c d x y z\r\nDBSIZE\r\nEXEC\r\n",
		"MULTI\r\nSET a 1\r\nSET b 2\r\nSET c 3\r\nDEL a c\r\nMGET a b c d\r\nFLUSHALL\r\nDBSIZE\r\nSET e 5\r\nEXEC\r\nDBSIZE\r\nGET e\r\n",
		"MULTI\r\nMSETNX a 1 b 2\r\nGET a\r\nGET b\r\nMSETNX b 3 c 4\r\nGET c\r\nEXEC\r\n",
	}},
	{"multi types", []string{"MULTI\r\nLPUSH l a b c\r\nLRANGE l 0 -1\r\nRPOP l 2\r\nSADD s x y\r\nSCARD s\r\nHSET h f v\r\nHGET h f\r\nZADD z 1 a 2 b\r\nZPOPMIN z\r\nTYPE l\r\nEXPIRE l 100\r\nTTL l\r\nPERSIST l\r\nTTL l\r\nEXEC\r\n"}},
	{"multi pipelined around", []string{"SET a 1\r\nMULTI\r\nGET a\r\nINCRBY a 5\r\nEXEC\r\nGET a\r\nMGET a b c d e\r\nMULTI\r\nMGET a b c d\r\nINCR a\r\nEXEC\r\nEXISTS a\r\n"}},
	{"multi multibulk", []string{multibulk("MULTI") + multibulk("SET", "k", "v") + multibulk("GET", "k") + multibulk("EXEC")}},
	{"multi then protocol error", []string{"MULTI\r\nSET a 1\r\n*2\r\n$4\r\nECHO\r\n$x\r\nEXEC\r\n"}},
	{"exec then protocol error", []string{"MULTI\r\nMSET a 1 b 2 c 3\r\nMGET a b c\r\nEXEC\r\n*2\r\n$4\r\nECHO\r\n$x\r\nPING\r\n"}},
	{"exec then quit", []string{"MSET a 1 b 2 c 3 d 4\r\nMULTI\r\nGET a\r\nDEL a b c d\r\nEXEC\r\nQUIT\r\nPING\r\n"}},
	{"multi then quit", []string{"MULTI\r\nSET a 1\r\nQUIT\r\nPING\r\n"}},
	{"watch inside multi", []string{"MULTI\r\nWATCH a\r\nSET a 2\r\nEXEC\r\n"}},
	{"watch written by the connection", []string{
		"WATCH a\r\nSET a 1\r\nMULTI\r\nGET a\r\nEXEC\r\nWATCH a\r\nMULTI\r\nGET a\r\nEXEC\r\n",
		"WATCH a\r\nDEL a\r\nMULTI\r\nPING\r\nEXEC\r\nWATCH a\r\nSET a 1\r\nMULTI\r\nEXEC\r\nWATCH a\r\nGET a\r\nEXPIRE a 100\r\nMULTI\r\nEXEC\r\n",
		"WATCH a\r\nMULTI\r\nEXEC\r\nWATCH a\r\nSET a 1\r\nMULTI\r\nEXEC\r\nWATCH a\r\nMULTI\r\nDISCARD\r\nSET a 1\r\nMULTI\r\nEXEC\r\n",
	}},
	{"watch and flushall", []string{"SET a 1\r\nWATCH a\r\nFLUSHALL\r\nMULTI\r\nPING\r\nEXEC\r\nWATCH a\r\nFLUSHALL\r\nMULTI\r\nPING\r\nEXEC\r\n"}},
	{"watch over shards", []string{"WATCH a b c d e f\r\nMSET f 1\r\nMULTI\r\nEXEC\r\nWATCH a b c d e f\r\nUNWATCH\r\nMSET a 1 b 2\r\nMULTI\r\nEXEC\r\nWATCH a b c d\r\nMULTI\r\nMGET a b c d\r\nEXEC\r\n"}},
	{"what writes a watched key", []string{
		"WATCH a\r\nLPUSH a x\r\nMULTI\r\nEXEC\r\nWATCH a\r\nLPOP a 0\r\nMULTI\r\nEXEC\r\nWATCH a\r\nRPOP a\r\nMULTI\r\nEXEC\r\n",
		"SADD s a\r\nWATCH s\r\nSADD s a\r\nMULTI\r\nEXEC\r\nWATCH s\r\nSADD s b\r\nMULTI\r\nEXEC\r\nZADD z 1 a\r\nWATCH z\r\nZADD z 1 a\r\nMULTI\r\nEXEC\r\n" +
			"WATCH z\r\nZADD z 2 a\r\nMULTI\r\nEXEC\r\nWATCH h\r\nHSET h f v\r\nMULTI\r\nEXEC\r\nWATCH h\r\nHSET h f v\r\nMULTI\r\nEXEC\r\n",
		"SET a 1\r\nWATCH a\r\nPERSIST a\r\nMULTI\r\nEXEC\r\nWATCH a\r\nSET a 2 NX\r\nMULTI\r\nEXEC\r\nWATCH a\r\nSET a 2 XX\r\nMULTI\r\nEXEC\r\n" +
			"WATCH a\r\nINCR a\r\nMULTI\r\nEXEC\r\nWATCH a\r\nEXPIRE a 100 NX\r\nMULTI\r\nEXEC\r\nWATCH a\r\nDEL nosuch\r\nMGET a\r\nMULTI\r\nEXEC\r\n",
	}},
}

// script runs steps, each a request on one of two connections, and
// returns the replies, in order.
func script(t *testing.T, dial func() (net.Conn, error), steps [][2]string) string {
	t.Helper()
	var conns [2]*respClient
	for i := range conns {
		conn, err := dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[i] = &respClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	}
	var out strings.Builder
	for _, st := range steps {
		c := conns[st[0][0]-'A']
		c.send(st[1])
		r, err := c.read()
		if err != nil {
			t.Fatalf("%s %q: %v", st[0], st[1], err)
		}
		fmt.Fprintf(&out, "%s %s", st[0], r)
	}
	return out.String()
}

// WATCH against another client's writes, on both servers: EXEC runs
// nothing and answers nil once another client wrote or deleted a key the
// connection watches, on any shard, and runs when the other client only
// read, deleted nothing, or wrote another key.
func TestDifferentialWatch(t *testing.T) {
	ref := startRedis(t)
	s := start(t, Config{})
	ours := func() (net.Conn, error) { return net.Dial("tcp", s.Addr().String()) }
	exec := [][2]string{{"A", "MULTI\r\n"}, {"A", "GET k\r\n"}, {"A", "EXEC\r\n"}}
	for _, tc := range []struct {
		name  string
		steps [][2]string
	}{
		{"set by another", [][2]string{{"A", "WATCH k\r\n"}, {"B", "SET k 1\r\n"}}},
		{"read by another", [][2]string{{"B", "SET k 1\r\n"}, {"A", "WATCH k\r\n"}, {"B", "GET k\r\n"}, {"B", "EXISTS k\r\n"}}},
		{"deleted by another", [][2]string{{"B", "SET k 1\r\n"}, {"A", "WATCH k\r\n"}, {"B", "DEL k\r\n"}}},
		{"absent, deleted by another", [][2]string{{"A", "WATCH k\r\n"}, {"B", "DEL k\r\n"}}},
		{"another key", [][2]string{{"A", "WATCH k\r\n"}, {"B", "SET j 1\r\n"}}},
		{"written in another's transaction", [][2]string{{"A", "WATCH k\r\n"}, {"B", "MULTI\r\n"}, {"B", "SET k 2\r\n"}, {"B", "EXEC\r\n"}}},
		{"queued by another, discarded", [][2]string{{"A", "WATCH k\r\n"}, {"B", "MULTI\r\n"}, {"B", "SET k 2\r\n"}, {"B", "DISCARD\r\n"}}},
		{"one of many, over shards", [][2]string{{"A", "WATCH a b c d e f g h\r\n"}, {"B", "MSET h 1 x 2\r\n"}}},
		{"flushed by another", [][2]string{{"B", "SET k 1\r\n"}, {"A", "WATCH k\r\n"}, {"B", "FLUSHALL\r\n"}}},
		{"unwatched, then set", [][2]string{{"A", "WATCH k\r\n"}, {"A", "UNWATCH\r\n"}, {"B", "SET k 1\r\n"}}},
		{"set, then watched", [][2]string{{"B", "SET k 1\r\n"}, {"A", "WATCH k\r\n"}}},
		{"set by another after MULTI", [][2]string{{"A", "WATCH k\r\n"}, {"A", "MULTI\r\n"}, {"A", "INCR k\r\n"}, {"B", "SET k 5\r\n"}, {"A", "EXEC\r\n"}, {"B", "GET k\r\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := append(append([][2]string{{"A", "FLUSHALL\r\n"}}, tc.steps...), exec...)
			want := script(t, ref.dial, steps)
			got := script(t, ours, steps)
			if got != want {
				t.Fatalf("replies differ:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// pairs returns n pairs of keys, each pair's keys on two shards of s.
func pairs(t *testing.T, s *Server, n int) [][2]string {
	var out [][2]string
	for i := 0; len(out) < n; i++ {
		k := spread(t, s, fmt.Sprintf("pair%d:", i), 2)
		out = append(out, [2]string{k[0], k[1]})
	}
	return out
}

// Writers set two keys on two shards to one value each in MULTI/EXEC
// (with other commands between), readers read them with MGET and in
// MULTI/EXEC: no reader ever sees one key written and the other not, or
// two values.
func TestMultiAtomic(t *testing.T) {
	s := start(t, Config{Shards: 4})
	ps := pairs(t, s, 3)
	const writers, readers, rounds = 3, 3, 150
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			for i := range rounds {
				p := ps[i%len(ps)]
				v := fmt.Sprintf("w%d-%d", w, i)
				c.send(multibulk("MULTI") + multibulk("SET", p[0], v) + multibulk("INCR", "n") + multibulk("SET", p[1], v) + multibulk("EXEC"))
				var got string
				for range 5 {
					r, err := c.read()
					if err != nil {
						errs <- err
						return
					}
					got += r
				}
				if !strings.HasPrefix(got, "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n:") || !strings.HasSuffix(got, "\r\n+OK\r\n") {
					errs <- fmt.Errorf("MULTI/EXEC: %q", got)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			c := dial(t, s)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := ps[i%len(ps)]
				var reply string
				if (r+i)%2 == 0 {
					reply = c.do("MGET", p[0], p[1])
				} else {
					c.send(multibulk("MULTI") + multibulk("GET", p[0]) + multibulk("GET", p[1]) + multibulk("EXEC"))
					for range 3 {
						if _, err := c.read(); err != nil {
							errs <- err
							return
						}
					}
					var err error
					if reply, err = c.read(); err != nil {
						errs <- err
						return
					}
				}
				if !allEqual(reply, 2) {
					errs <- fmt.Errorf("keys written in one transaction read apart: %q", reply)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r := dial(t, s).do("GET", "n"); r != "$3\r\n"+strconv.Itoa(writers*rounds)+"\r\n" {
		t.Errorf("INCR n in every transaction: %q, want %d", r, writers*rounds)
	}
}

// Clients add to one counter on two shards by WATCH, reads, then MULTI
// and EXEC, retrying when EXEC answers nil: the count is exact, so no EXEC
// ran over a change it did not see.
func TestWatchCounter(t *testing.T) {
	s := start(t, Config{Shards: 4})
	keys := spread(t, s, "cas:", 2)
	const clients, adds = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	var mu sync.Mutex
	retries := 0
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			for done := 0; done < adds; {
				if r := c.do("WATCH", keys[0], keys[1]); r != "+OK\r\n" {
					errs <- fmt.Errorf("WATCH: %q", r)
					return
				}
				a, b := bulkInt(c.do("GET", keys[0])), bulkInt(c.do("GET", keys[1]))
				c.send(multibulk("MULTI") + multibulk("SET", keys[0], strconv.Itoa(a+1)) + multibulk("SET", keys[1], strconv.Itoa(b+1)) + multibulk("EXEC"))
				var got string
				for range 4 {
					r, err := c.read()
					if err != nil {
						errs <- err
						return
					}
					got += r
				}
				switch got {
				case "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n":
					done++
				case "+OK\r\n+QUEUED\r\n+QUEUED\r\n*-1\r\n":
					mu.Lock()
					retries++
					mu.Unlock()
				default:
					errs <- fmt.Errorf("MULTI/EXEC: %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := dial(t, s)
	want := "*2\r\n" + strings.Repeat("$3\r\n"+strconv.Itoa(clients*adds)+"\r\n", 2)
	if r := c.do("MGET", keys[0], keys[1]); r != want {
		t.Fatalf("MGET: %q, want %q (%d retries)", r, want, retries)
	}
	t.Logf("%d EXECs answered nil and retried", retries)
	// The watches are gone once EXEC has run: no shard keeps any.
	waitWatchesGone(t, s)
}

// bulkInt reads a bulk string reply as an integer; nil is 0.
func bulkInt(reply string) int {
	if reply == "$-1\r\n" {
		return 0
	}
	lines := strings.Split(reply, "\r\n")
	n, _ := strconv.Atoi(lines[1])
	return n
}

// watched counts the keys watched on every shard.
func watched(t testing.TB, s *Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	n := 0
	for i := range s.g.Len() {
		k, err := shard.Call(s.g, i, func() (int, error) { return len(s.shards.Local().db.watched), nil }).Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// waitWatchesGone waits until no shard keeps a watch: the messages that
// drop them are on their way when a reply arrives.
func waitWatchesGone(t testing.TB, s *Server) {
	t.Helper()
	deadline := time.Now().Add(spindletest.Safety)
	for watched(t, s) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys still watched", watched(t, s))
		}
	}
}

// The watches of a connection go when it closes, or UNWATCHes, or
// DISCARDs, and a transaction queued past the query buffer limit closes
// its connection.
func TestMultiEnds(t *testing.T) {
	s := start(t, Config{Shards: 4, QueryBufferLimit: 64 << 10})
	keys := spread(t, s, "w:", 8)
	for _, end := range []string{"UNWATCH", "DISCARD", "EXEC", "close"} {
		t.Run(end, func(t *testing.T) {
			c := dial(t, s)
			if r := c.do(append([]string{"WATCH"}, keys...)...); r != "+OK\r\n" {
				t.Fatalf("WATCH: %q", r)
			}
			if watched(t, s) != len(keys) {
				t.Fatalf("%d keys watched, want %d", watched(t, s), len(keys))
			}
			switch end {
			case "close":
				c.conn.Close()
			case "UNWATCH":
				c.do("UNWATCH")
			default:
				c.do("MULTI")
				c.do(end)
			}
			waitWatchesGone(t, s)
		})
	}
	t.Run("queue limit", func(t *testing.T) {
		c := dial(t, s)
		c.do("MULTI")
		v := strings.Repeat("x", 1000)
		for i := range 100 { // 100 KB queued: past the limit
			if _, err := c.conn.Write([]byte(multibulk("SET", "k"+strconv.Itoa(i), v))); err != nil {
				break // closed by the server
			}
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(spindletest.Safety))
		n := 0
		for {
			r, err := c.read()
			if err != nil {
				break
			}
			if r != "+QUEUED\r\n" {
				t.Fatalf("reply %d: %q", n, r)
			}
			n++
		}
		if n >= 100 {
			t.Fatalf("all %d SETs queued past the limit", n)
		}
		if r := dial(t, s).do("DBSIZE"); r != ":0\r\n" {
			t.Fatalf("DBSIZE: %q: the transaction ran", r)
		}
	})
}

// Watched keys and their time to live, on a clock the test moves (and no
// active expiry): the bytes redis-server 7.0.15 answered the same steps,
// with its active expiry off (DEBUG SET-ACTIVE-EXPIRE 0).
func TestWatchExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	s := start(t, Config{Clock: now.Load, ExpireInterval: time.Hour})
	for _, tc := range []struct {
		name  string
		steps []string // "+200" moves the clock 200 ms
		want  string
	}{
		{"expires after WATCH", []string{"SET k v PX 100", "WATCH k", "+200", "MULTI", "EXEC"}, "+OK\r\n+OK\r\n+OK\r\n*-1\r\n"},
		{"expired before WATCH", []string{"SET k v PX 100", "+200", "WATCH k", "MULTI", "EXEC"}, "+OK\r\n+OK\r\n+OK\r\n*0\r\n"},
		{"expired, then deleted by a read", []string{"SET k v PX 100", "+200", "WATCH k", "GET k", "MULTI", "EXEC"}, "+OK\r\n+OK\r\n$-1\r\n+OK\r\n*0\r\n"},
		{"expired, then written", []string{"SET k v PX 100", "+200", "WATCH k", "SET k w", "MULTI", "EXEC"}, "+OK\r\n+OK\r\n+OK\r\n+OK\r\n*-1\r\n"},
		{"expired, deleted, written", []string{"SET k v PX 100", "+200", "WATCH k", "DEL k", "SET k w", "MULTI", "EXEC"}, "+OK\r\n+OK\r\n:0\r\n+OK\r\n+OK\r\n*-1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			c.do("FLUSHALL")
			var got string
			for _, st := range tc.steps {
				if ms, ok := strings.CutPrefix(st, "+"); ok {
					n, _ := strconv.Atoi(ms)
					now.Add(int64(n))
					continue
				}
				got += c.do(strings.Fields(st)...)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
