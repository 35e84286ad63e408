package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// spread returns n keys that fall on at least two shards of s.
func spread(t testing.TB, s *Server, prefix string, n int) []string {
	t.Helper()
	keys := make([]string, n)
	on := map[int]bool{}
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
		on[s.owner([]byte(keys[i]))] = true
	}
	if len(on) < 2 {
		t.Fatalf("keys %v all on one shard", keys)
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

// Concurrent MSETs of the same keys, on several shards, to one value
// each, and concurrent MGETs of them over TCP: every MGET sees the keys
// of one MSET, never part of one and part of another.
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
}
