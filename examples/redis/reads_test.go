package main

import (
	"strings"
	"testing"
)

// The reads redis-server 7.0.15 made of these inputs, each sent at once on
// a new connection (as strace showed them: the first asks for 16,384
// bytes, the next for the room its buffer has), and whether it refused
// the line over 64 KB at their end: qbuf replays the same reads, and the
// parser refuses the same lines, whatever pieces the input arrives in.
func TestRedisReads(t *testing.T) {
	line := func(n int) string { return "ECHO " + strings.Repeat("x", n-5) + "\r\nPING\r\n" }
	for _, tc := range []struct {
		name    string
		input   string
		ends    []int // where the reads end, in bytes from the start
		refused protoError
	}{
		{"inline of 90 KB first", line(90000), []int{16384, 81910}, "too big inline request"},
		{"inline of 70 KB first", line(70000), []int{16384, 81910}, ""},
		{"20 requests, then 90 KB", strings.Repeat("PING\r\n", 20) + line(90000), []int{16384, 65650, 163950}, ""},
		{"1000 requests, then 150 KB", strings.Repeat("PING\r\n", 1000) + line(150000), []int{16384, 63338, 169830}, ""},
		{"bulk count line of 90 KB", "*1\r\n$" + strings.Repeat("0", 90000) + "4\r\nPING\r\n", []int{16384, 65534, 163834}, "invalid bulk length"},
		{"count line of 200 KB", "*" + strings.Repeat("0", 200000) + "1\r\n", []int{16384, 81910}, "too big mbulk count string"},
		{"bulk count line of 200 KB", "*1\r\n$" + strings.Repeat("0", 200000) + "4\r\n", []int{16384, 65534, 163834}, "too big bulk count string"},
		// A large argument is read to its end exactly, and its buffer
		// becomes the argument: a new one of its size (229,366 bytes of
		// room for 200 KB) takes the next line whole.
		{"200 KB argument, then 150 KB", multibulk("SET", "k", strings.Repeat("v", 200000)) + line(150000), []int{16384, 200031, 429397}, ""},
		{"40 KB argument, then 90 KB", multibulk("SET", "k", strings.Repeat("v", 40000)) + line(90000), []int{16384, 40030, 80984, 154708}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whole: the buffer's offsets are the input's.
			var ends []int
			p := newParser(DefaultMaxBulk, DefaultMaxMultibulk)
			p.q.ends = &ends
			perr := parseRest(&p, []byte(tc.input))
			if perr != tc.refused {
				t.Errorf("error %q, want %q", perr, tc.refused)
			}
			if len(ends) < len(tc.ends) || !equalInts(ends[:len(tc.ends)], tc.ends) {
				t.Errorf("reads end at %v, want %v first", ends, tc.ends)
			}
			// In pieces, the server's way: the same outcome.
			for _, piece := range []int{16 << 10, 1000, 7} {
				p := newParser(DefaultMaxBulk, DefaultMaxMultibulk)
				var pend []byte
				perr := protoError("")
				for i := 0; i < len(tc.input) && perr == ""; i += piece {
					buf := append(pend, tc.input[i:min(len(tc.input), i+piece)]...)
					perr = parseRest(&p, buf)
					pend = buf[p.tail():]
					p.rebase()
				}
				if perr != tc.refused {
					t.Errorf("in pieces of %d bytes: error %q, want %q", piece, perr, tc.refused)
				}
			}
		})
	}
}

// parseRest parses the requests of buf until one is incomplete or
// malformed, and returns its error.
func parseRest(p *parser, buf []byte) protoError {
	for {
		_, ok, perr := p.next(buf, nil)
		if !ok || perr != "" {
			return perr
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// jemalloc's size classes and the room of sds strings, as redis-server's
// reads showed them.
func TestSdsRoom(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 8}, {9, 16}, {17, 32}, {129, 160}, {16390, 20480}, {65534, 65536}, {65546, 81920}, {163838, 163840}, {200012, 229376},
	} {
		if got := jemallocSize(tc.n); got != tc.want {
			t.Errorf("jemallocSize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n, add, alloc int
		greedy        bool
		want          int
	}{
		{0, 16384, 0, false, 20474},        // the first read's buffer
		{16384, 16384, 20474, true, 81910}, // doubled to 64 KB: an sdshdr32, rounded up to 80 KB
		{16380, 16384, 20474, true, 65530}, // doubled to 65,528 bytes: an sdshdr16 fits 64 KB
		{65530, 16384, 65530, true, 163830},
		{100, 16384, 81910, true, 81910}, // room enough: unchanged
	} {
		if got := sdsRoom(tc.n, tc.add, tc.alloc, tc.greedy); got != tc.want {
			t.Errorf("sdsRoom(%d, %d, %d, %v) = %d, want %d", tc.n, tc.add, tc.alloc, tc.greedy, got, tc.want)
		}
	}
}
