package websocket

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// events runs a reader over in, given in pieces cut at the offsets in
// cuts, and returns what it found, one line per event, up to the first
// error or the end of the input.
func events(in []byte, cuts []int, maxSize int) string {
	in = bytes.Clone(in) // unmasked in place
	r := reader{maxSize: maxSize}
	var sb strings.Builder
	prev := 0
	feeds := append(append([]int(nil), cuts...), len(in))
	for _, cut := range feeds {
		if cut < prev || cut > len(in) {
			continue
		}
		r.feed(in[prev:cut])
		prev = cut
		for {
			ev, op, p, err := r.next()
			switch ev {
			case evMore:
			case evError:
				fmt.Fprintf(&sb, "error %d\n", err.Code)
				r.release()
				return sb.String()
			default:
				fmt.Fprintf(&sb, "%d %d %d %08x %x\n", ev, op, len(p), crc32.ChecksumIEEE(p), p[:min(len(p), 16)])
				continue
			}
			break
		}
	}
	r.release()
	return sb.String()
}

func maskedFrame(fin bool, op byte, p []byte) []byte {
	b := appendHeader(nil, fin, op, len(p))
	b[1] |= maskBit
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	b = append(b, key[:]...)
	start := len(b)
	b = append(b, p...)
	unmask(b[start:], key, 0)
	return b
}

func TestReaderCuts(t *testing.T) {
	in := bytes.Join([][]byte{
		maskedFrame(false, opText, []byte("κό")),
		maskedFrame(true, opPing, []byte("ping")),
		maskedFrame(true, opContinuation, []byte("σμε")),
		maskedFrame(true, opBinary, bytes.Repeat([]byte{1, 2, 3}, 100)),
		maskedFrame(true, opBinary, bytes.Repeat([]byte{9}, 70000)),
		maskedFrame(true, opClose, []byte{3, 232}),
	}, nil)
	want := events(in, nil, 1<<20)
	if strings.Count(want, "\n") != 5 {
		t.Fatalf("whole input: %s", want)
	}
	for step := 1; step < 40; step++ {
		var cuts []int
		for i := step; i < len(in); i += step * (1 + i%7) {
			cuts = append(cuts, i)
		}
		if got := events(in, cuts, 1<<20); got != want {
			t.Fatalf("cut every %d: got\n%s\nwant\n%s", step, got, want)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	cases := []struct {
		in string
		n  int
		ok bool
	}{
		{"", 0, true},
		{"abc", 3, true},
		{"κ", 2, true},
		{"\xce", 0, true},
		{"a\xe2\x82", 1, true},
		{"\xe0\x80", 0, false}, // overlong
		{"\xed\xa0", 0, false}, // surrogate
		{"\xf4\x90", 0, false}, // past U+10FFFF
		{"\xf0\x9f\x98", 0, true},
		{"\xff", 0, false},
		{"\xc0\xaf", 0, false},
		{"a\x80", 1, false},
	}
	for _, tc := range cases {
		n, ok := validPrefix([]byte(tc.in))
		if n != tc.n || ok != tc.ok {
			t.Errorf("validPrefix(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

// FuzzReader checks that the reader never panics, never returns a
// message longer than the limit or text that is not UTF-8, and finds the
// same events however the input is cut into receives.
func FuzzReader(f *testing.F) {
	f.Add(maskedFrame(true, opText, []byte("hello")), uint16(3))
	f.Add(append(maskedFrame(false, opText, []byte("\xce")), maskedFrame(true, opContinuation, []byte("\xba"))...), uint16(1))
	f.Add(maskedFrame(true, opClose, []byte{3, 232, 'x'}), uint16(2))
	f.Add([]byte{0x82, 0xfe, 0x00, 0x80, 1, 2, 3, 4}, uint16(5))
	f.Add([]byte{0x81, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4}, uint16(7))
	f.Fuzz(func(t *testing.T, in []byte, step uint16) {
		const limit = 4096
		want := events(in, nil, limit)
		for _, line := range strings.Split(want, "\n") {
			var ev, op, n int
			if k, _ := fmt.Sscanf(line, "%d %d %d", &ev, &op, &n); k == 3 && event(ev) == evMessage && n > limit {
				t.Fatalf("message of %d bytes past the limit", n)
			}
		}
		s := int(step%64) + 1
		var cuts []int
		for i := s; i < len(in); i += s {
			cuts = append(cuts, i)
		}
		if got := events(in, cuts, limit); got != want {
			t.Fatalf("cut every %d: got\n%s\nwant\n%s", s, got, want)
		}
	})
}
