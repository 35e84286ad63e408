package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
)

// parseAll runs the parser over input delivered in pieces cut at cuts, as
// the server does (the unparsed tail kept and rebased between receives),
// and returns every request it read, one line each, then the protocol
// error if any.
func parseAll(input []byte, cuts []int, maxBulk int64) []string {
	p := newParser(maxBulk, DefaultMaxMultibulk)
	var out []string
	var pend []byte
	from := 0
	feed := func(data []byte) bool {
		buf := append(pend, data...)
		for {
			argv, ok, perr := p.next(buf, nil)
			if perr != "" {
				out = append(out, "error: "+string(perr))
				return false
			}
			if !ok {
				break
			}
			if len(argv) > 0 {
				out = append(out, fmt.Sprintf("%q", argv))
			}
		}
		t := p.tail()
		pend = buf[t:] // kept in place, as the server keeps a request arriving: no copy per piece
		p.rebase()
		return true
	}
	for _, c := range cuts {
		if c < from || c > len(input) {
			continue
		}
		if !feed(input[from:c]) {
			return out
		}
		from = c
	}
	feed(input[from:])
	return out
}

// The parser reads the same requests and errors whatever the pieces the
// input arrives in; its arguments are within the limits; and, where
// redis-server is installed, the server answers the input as Redis does.
func FuzzParse(f *testing.F) {
	for _, tc := range diffCases {
		f.Add([]byte(strings.Join(tc.chunks, "")), uint16(3), uint16(17))
	}
	for _, tc := range replyCases {
		var b strings.Builder
		for _, st := range tc.steps {
			b.WriteString(st.req)
		}
		if b.Len() < 4096 {
			f.Add([]byte(b.String()), uint16(1), uint16(9))
		}
	}
	f.Fuzz(func(t *testing.T, input []byte, a, b uint16) {
		const maxBulk = 1 << 16
		whole := parseAll(input, nil, maxBulk)
		cuts := []int{int(a) % (len(input) + 1), int(b) % (len(input) + 1)}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		pieces := parseAll(input, cuts, maxBulk)
		if strings.Join(whole, "\n") != strings.Join(pieces, "\n") {
			t.Fatalf("input %q\nwhole:  %q\npieces %v: %q", input, whole, cuts, pieces)
		}
		bytewise := make([]int, len(input))
		for i := range bytewise {
			bytewise[i] = i
		}
		if one := parseAll(input, bytewise, maxBulk); strings.Join(whole, "\n") != strings.Join(one, "\n") {
			t.Fatalf("input %q\nwhole:     %q\nbytewise:  %q", input, whole, one)
		}
	})
}

// FuzzDifferential sends the input to this server and to redis-server and
// compares the bytes they answer. It skips without redis-server. Commands
// whose replies are not the same on purpose (INFO, COMMAND, CLIENT ID,
// SPOP, CONFIG, MEMORY, DEBUG, and any Redis has that this server does not
// know) are left out of the inputs.
func FuzzDifferential(f *testing.F) {
	for _, tc := range diffCases {
		f.Add(strings.Join(tc.chunks, ""))
	}
	ref := startRedis(f)
	s := start(f, Config{Shards: 2})
	ours := func() (net.Conn, error) { return net.Dial("tcp", s.Addr().String()) }
	f.Fuzz(func(t *testing.T, input string) {
		low := strings.ToLower(input)
		for _, skip := range []string{"info", "command", "client", "spop", "config", "memory", "debug", "quit", "select", "hello", "shutdown", "monitor", "subscribe", "sync", "save", "exec", "multi", "eval", "script", "acl", "auth", "wait", "block", "keys", "object", "reset"} {
			if strings.Contains(low, skip) {
				t.Skip("a command whose reply differs on purpose, or that Redis has and this server does not")
			}
		}
		for _, dial := range []func() (net.Conn, error){ref.dial, ours} {
			if r, err := exchange(dial, "FLUSHALL\r\n"); err != nil || string(r) != "+OK\r\n" {
				t.Fatalf("FLUSHALL: %q %v", r, err)
			}
		}
		want, err := exchange(ref.dial, input)
		if err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		got, err := exchange(ours, input)
		if err != nil {
			t.Fatalf("examples/redis: %v", err)
		}
		if bytes.Contains(got, []byte("unknown command")) && !bytes.Contains(want, []byte("unknown command")) {
			t.Skip("a command Redis has and this server does not")
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("input %q:\n got %q\nwant %q", input, got, want)
		}
	})
}
