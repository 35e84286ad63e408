//go:build linux

package main

import (
	"encoding/binary"
	"slices"
	"testing"
)

// TestPerfAttr checks the hand-built perf_event_attr layout.
func TestPerfAttr(t *testing.T) {
	a := perfAttr(perfTypeHardware, perfCountHWInstructions)
	ne := binary.NativeEndian
	if got := ne.Uint32(a[0:]); got != 0 {
		t.Errorf("type = %d, want 0 (PERF_TYPE_HARDWARE)", got)
	}
	if got := ne.Uint32(a[4:]); got != 112 || len(a) != 112 {
		t.Errorf("size = %d, len %d, want 112 (PERF_ATTR_SIZE_VER5)", got, len(a))
	}
	if got := ne.Uint64(a[8:]); got != 1 {
		t.Errorf("config = %d, want 1 (PERF_COUNT_HW_INSTRUCTIONS)", got)
	}
	if got := ne.Uint64(a[32:]); got != 3 {
		t.Errorf("read_format = %#x, want 3 (TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING)", got)
	}
	// disabled(0) inherit(1) exclude_kernel(5) exclude_hv(6) on a
	// little-endian machine is 0b110_0011.
	flags := ne.Uint64(a[40:])
	want := uint64(0x63)
	if bigEndian() {
		want = 0xc6 << 56
	}
	if flags != want {
		t.Errorf("flag word = %#x, want %#x", flags, want)
	}
	for i, b := range a[48:] {
		if b != 0 {
			t.Errorf("byte %d = %#x, want 0", 48+i, b)
		}
	}
	if c := perfAttr(perfTypeHardware, perfCountHWCPUCycles); ne.Uint64(c[8:]) != 0 {
		t.Errorf("cycles config = %d, want 0", ne.Uint64(c[8:]))
	}
}

// TestCBit checks the bit-field masks for the machine's byte order.
func TestCBit(t *testing.T) {
	if bigEndian() {
		if cBit(0) != 1<<63 || cBit(6) != 1<<57 {
			t.Errorf("big-endian cBit(0) = %#x, cBit(6) = %#x", cBit(0), cBit(6))
		}
	} else if cBit(0) != 1 || cBit(6) != 1<<6 {
		t.Errorf("little-endian cBit(0) = %#x, cBit(6) = %#x", cBit(0), cBit(6))
	}
}

// TestDecodeReading checks the decoding of read(2) on a counter.
func TestDecodeReading(t *testing.T) {
	var buf [perfReadSize]byte
	binary.NativeEndian.PutUint64(buf[0:], 123456789)
	binary.NativeEndian.PutUint64(buf[8:], 1000)
	binary.NativeEndian.PutUint64(buf[16:], 500)
	want := perfReading{value: 123456789, enabled: 1000, running: 500, ok: true}
	if got := decodeReading(buf); got != want {
		t.Errorf("decodeReading = %+v, want %+v", got, want)
	}
}

// TestScaledDelta checks summing, scaling and rejecting counter deltas.
func TestScaledDelta(t *testing.T) {
	rd := func(v, e, r uint64) perfReading { return perfReading{value: v, enabled: e, running: r, ok: true} }
	for _, tc := range []struct {
		name          string
		before, after []perfReading
		want          float64
		ok            bool
	}{
		{"sum over threads", []perfReading{rd(10, 100, 100), rd(0, 0, 0)}, []perfReading{rd(110, 200, 200), rd(50, 40, 40)}, 150, true},
		{"thread that did not run", []perfReading{rd(7, 5, 5)}, []perfReading{rd(7, 5, 5)}, 0, true},
		{"multiplexed: scaled up", []perfReading{rd(0, 0, 0)}, []perfReading{rd(100, 400, 100)}, 400, true},
		{"never scheduled", []perfReading{rd(0, 0, 0)}, []perfReading{rd(0, 100, 0)}, 0, false},
		{"failed read", []perfReading{rd(0, 0, 0)}, []perfReading{{}}, 0, false},
		{"length mismatch", []perfReading{rd(0, 0, 0)}, []perfReading{rd(1, 1, 1), rd(1, 1, 1)}, 0, false},
		{"no counters", nil, nil, 0, false},
		{"went backwards", []perfReading{rd(10, 10, 10)}, []perfReading{rd(5, 20, 20)}, 0, false},
	} {
		got, ok := scaledDelta(tc.before, tc.after)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: scaledDelta = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestHWSampleSince checks that a sample difference needs both events.
func TestHWSampleSince(t *testing.T) {
	rd := func(v uint64) perfReading { return perfReading{value: v, enabled: v, running: v, ok: true} }
	prev := hwSample{inst: []perfReading{rd(100)}, cycles: []perfReading{rd(50)}}
	now := hwSample{inst: []perfReading{rd(400)}, cycles: []perfReading{rd(250)}}
	if inst, cycles, ok := now.since(prev); inst != 300 || cycles != 200 || !ok {
		t.Errorf("since = %v, %v, %v; want 300, 200, true", inst, cycles, ok)
	}
	now.cycles[0].ok = false
	if _, _, ok := now.since(prev); ok {
		t.Error("since with a failed cycles read reports ok")
	}
}

// TestParseTIDs checks the parsing of /proc/self/task and the subset test.
func TestParseTIDs(t *testing.T) {
	got := parseTIDs([]string{"42", "7", "self", "", "-3", "0", "1000"})
	if want := []int{7, 42, 1000}; !slices.Equal(got, want) {
		t.Errorf("parseTIDs = %v, want %v", got, want)
	}
	if !subsetOf([]int{7, 42}, []int{1, 7, 42}) || subsetOf([]int{7, 43}, []int{7, 42}) || !subsetOf(nil, []int{1}) {
		t.Error("subsetOf is wrong")
	}
}

// TestIoctlRequest checks the ioctl request numbers per architecture.
func TestIoctlRequest(t *testing.T) {
	if got := ioctlRequest(perfIocEnable, "amd64"); got != 0x2400 {
		t.Errorf("amd64 ENABLE = %#x, want 0x2400", got)
	}
	if got := ioctlRequest(perfIocReset, "arm64"); got != 0x2403 {
		t.Errorf("arm64 RESET = %#x, want 0x2403", got)
	}
	if got := ioctlRequest(perfIocDisable, "ppc64le"); got != 0x20002401 {
		t.Errorf("ppc64le DISABLE = %#x, want 0x20002401", got)
	}
	if got := ioctlRequest(perfIocEnable, "mips64"); got != 0x20002400 {
		t.Errorf("mips64 ENABLE = %#x, want 0x20002400", got)
	}
}

// TestEventName checks the event names used in error messages.
func TestEventName(t *testing.T) {
	if got := eventName(perfTypeHardware, perfCountHWInstructions); got != "instructions" {
		t.Errorf("eventName(instructions) = %q", got)
	}
	if got := eventName(perfTypeHardware, perfCountHWCPUCycles); got != "cycles" {
		t.Errorf("eventName(cycles) = %q", got)
	}
	if got := eventName(perfTypeSoftware, 1); got != "type 1 config 1" {
		t.Errorf("eventName(software) = %q", got)
	}
}
