package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// spread returns n keys (n >= 2) that fall on at least two shards of s.
func spread(t testing.TB, s *Server, prefix string, n int) []string {
	t.Helper()
	keys := make([]string, 0, n)
	for i := 0; len(keys) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if len(keys) == n-1 && s.owner([]byte(k)) == s.owner([]byte(keys[0])) {
			all := true
			for _, x := range keys {
				all = all && s.owner([]byte(x)) == s.owner([]byte(keys[0]))
			}
			if all {
				continue // the last key goes to another shard
			}
		}
		keys = append(keys, k)
	}
	return keys
}

// allEqual reports whether a reply to MGET is an array of n bulk strings
// that are all the same, or n nils.
func allEqual(reply string, n int) bool {
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	if len(lines) == 0 || lines[0] != "*"+strconv.Itoa(n) {
		return false
	}
	var vals []string
	nils := 0
	for i := 1; i < len(lines); i++ {
		if lines[i] == "$-1" {
			nils++
			continue
		}
		i++ // the value after its length
		if i >= len(lines) {
			return false
		}
		vals = append(vals, lines[i])
	}
	for _, v := range vals {
		if v != vals[0] {
			return false
		}
	}
	return (nils == n && len(vals) == 0) || (nils == 0 && len(vals) == n)
}

// Concurrent MSETs (and DELs) of the same keys, on several shards, to one
// value each, and concurrent MGETs (and EXISTS) of them over TCP: every
// MGET sees the keys of one MSET, never part of one and part of another,
// nor some deleted and others not.
func TestMSetAtomic(t *testing.T) {
	s := start(t, Config{Shards: 4})
	keys := spread(t, s, "atomic:", 6)
	const writers, readers, rounds = 3, 3, 300
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			for i := range rounds {
				if i%5 == 4 {
					// DEL counts every key, or none.
					r := c.do(append([]string{"DEL"}, keys...)...)
					if r != ":0\r\n" && r != ":"+strconv.Itoa(len(keys))+"\r\n" {
						errs <- fmt.Errorf("DEL of keys written together: %q", r)
						return
					}
					continue
				}
				args := []string{"MSET"}
				v := fmt.Sprintf("w%d-%d", w, i)
				for _, k := range keys {
					args = append(args, k, v)
				}
				if r := c.do(args...); r != "+OK\r\n" {
					errs <- fmt.Errorf("MSET: %q", r)
					return
				}
			}
		}()
	}
	var rwg sync.WaitGroup
	var mgets, partial int
	var mu sync.Mutex
	for range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			c := dial(t, s)
			n, bad := 0, 0
			var first string
			for {
				select {
				case <-stop:
					mu.Lock()
					mgets += n
					partial += bad
					mu.Unlock()
					if bad > 0 {
						errs <- fmt.Errorf("%d of %d MGETs saw part of an MSET, as %q", bad, n, first)
					}
					return
				default:
				}
				if n%4 == 3 {
					r := c.do(append([]string{"EXISTS"}, keys...)...)
					if r != ":0\r\n" && r != ":"+strconv.Itoa(len(keys))+"\r\n" {
						errs <- fmt.Errorf("EXISTS of keys written together: %q", r)
						return
					}
				}
				r := c.do(append([]string{"MGET"}, keys...)...)
				n++
				if !allEqual(r, len(keys)) {
					if bad == 0 {
						first = r
					}
					bad++
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
	t.Logf("%d MGETs, %d partial", mgets, partial)
	// They were transactions: INFO counts their claims.
	info := dial(t, s).do("INFO", "spindle")
	claims := 0
	for _, f := range strings.FieldsFunc(info, func(r rune) bool { return r == ',' || r == '\n' }) {
		if v, ok := strings.CutPrefix(f, "claims="); ok {
			n, _ := strconv.Atoi(v)
			claims += n
		}
	}
	if claims < writers*rounds*4/5 {
		t.Errorf("INFO spindle counts %d claims, want %d MSETs' at least:\n%s", claims, writers*rounds*4/5, info)
	}
}

// Commands over keys of several shards take effect in their place in a
// pipeline, on many keys, with repeats.
func TestMultiShardOrder(t *testing.T) {
	s := start(t, Config{Shards: 4})
	c := dial(t, s)
	keys := spread(t, s, "k", 40)
	mset := []string{"MSET"}
	msetnx := []string{"MSETNX"}
	mget := []string{"MGET"}
	want := "*" + strconv.Itoa(2*len(keys)) + "\r\n"
	for i, k := range keys {
		mset = append(mset, k, "old", k, "v"+strconv.Itoa(i)) // the last of a key's values wins
		msetnx = append(msetnx, k+"nx", "n"+strconv.Itoa(i))
		mget = append(mget, k, k)
		want += strings.Repeat("$"+strconv.Itoa(len("v"+strconv.Itoa(i)))+"\r\nv"+strconv.Itoa(i)+"\r\n", 2)
	}
	exists := append([]string{"EXISTS"}, mget[1:]...)
	del := append([]string{"DEL"}, mget[1:]...)
	n := strconv.Itoa(len(keys))
	for _, tc := range []struct {
		name  string
		reqs  [][]string
		reply string
	}{
		{"mset then mget", [][]string{{"SET", keys[0], "x"}, mset, {"GET", keys[0]}, mget}, "+OK\r\n+OK\r\n$2\r\nv0\r\n" + want},
		{"exists del exists", [][]string{exists, del, exists, {"GET", keys[1]}}, ":" + strconv.Itoa(2*len(keys)) + "\r\n:" + n + "\r\n:0\r\n$-1\r\n"},
		{"msetnx twice", [][]string{msetnx, {"SET", keys[2] + "nx", "y"}, msetnx, {"GET", keys[2] + "nx"}, {"MGET", keys[3] + "nx", keys[4] + "nx"}},
			":1\r\n+OK\r\n:0\r\n$1\r\ny\r\n*2\r\n$2\r\nn3\r\n$2\r\nn4\r\n"},
		{"msetnx after del", [][]string{{"DEL", keys[5] + "nx"}, msetnx, {"DEL", keys[6] + "nx"}, {"EXISTS", keys[6] + "nx", keys[7] + "nx"}},
			":1\r\n:0\r\n:1\r\n:1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req string
			for _, r := range tc.reqs {
				req += multibulk(r...)
			}
			c.send(req)
			var got string
			for range tc.reqs {
				r, err := c.read()
				if err != nil {
					t.Fatal(err)
				}
				got += r
			}
			if got != tc.reply {
				t.Fatalf("got %q\nwant %q", got, tc.reply)
			}
		})
	}
}

// Shutdown with transactions in flight: every client, once served,
// receives whole and in order the replies to the requests the server
// read, then the end of the stream.
func TestShutdownTransactions(t *testing.T) {
	s := NewServer(Config{Shards: 4})
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	const clients, rounds = 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	first := make(chan struct{}, clients)
	for id := range clients {
		keys := spread(t, s, "sd:"+strconv.Itoa(id)+":", 5)
		conn, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(spindletest.Safety))
			var req strings.Builder
			var want []string
			for i := range rounds {
				v := "v" + strconv.Itoa(i)
				mset := []string{"MSET"}
				for _, k := range keys {
					mset = append(mset, k, v)
				}
				req.WriteString(multibulk(mset...))
				req.WriteString(multibulk(append([]string{"MGET"}, keys...)...))
				req.WriteString(multibulk(append([]string{"DEL"}, keys[:3]...)...))
				want = append(want, "+OK\r\n", "*5\r\n"+strings.Repeat("$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", 5), ":3\r\n")
			}
			go func() { _, _ = io.WriteString(conn, req.String()) }() // the server may stop reading
			c := &respClient{t: t, conn: conn, r: bufio.NewReader(conn)}
			for i := 0; ; i++ {
				r, err := c.read()
				if err == io.EOF && r == "" {
					return // the end of the stream, after whole replies
				}
				if err != nil {
					errs <- fmt.Errorf("reply %d: %q %v", i, r, err)
					return
				}
				if i == 0 {
					first <- struct{}{}
				}
				if i >= len(want) || r != want[i] {
					errs <- fmt.Errorf("reply %d: %q, want %q", i, r, want[min(i, len(want)-1)])
					return
				}
			}
		}()
	}
	for range clients { // every connection served: a connection the listener never accepted is reset by the kernel
		<-first
	}
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
