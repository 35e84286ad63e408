//go:build linux

package main

import "testing"

// TestHWCounters opens the counters: where the kernel grants them, a
// sample around some work counts instructions and cycles; where it refuses
// them (the development machines answer ENOENT), the error says which call
// failed, and the table prints n/a (TestWriteTableCounters).
func TestHWCounters(t *testing.T) {
	h, err := openHWCounters()
	if err != nil {
		t.Logf("counters refused: %v", err)
		if len(err.Error()) < len("perf_event_open") {
			t.Errorf("error %q does not say what failed", err)
		}
		return
	}
	defer h.close()
	var before, after hwSample
	h.sampleInto(&before)
	sum := 0
	for i := range 1_000_000 {
		sum += i
	}
	h.sampleInto(&after)
	inst, cycles, ok := after.since(before)
	if !ok || inst < 1e6 || cycles <= 0 {
		t.Errorf("since = %v, %v, %v after a million additions (sum %d)", inst, cycles, ok, sum)
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
