package loop

// Tests of the watchdog's parts on synthetic input: the stall state
// machine on a clock the test moves, the choice of the holder's stack out
// of a goroutine dump, and the delay summary.

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stall check, step by step: the watchdog checks every 10 ms of a
// clock the test moves, the loop's side is played by pulse (a task starts)
// and idleBegin/idleEnd, and the threshold is 50 ms.
func TestWatchdogCheck(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tc := range []struct {
		name    string
		end     int64            // last check, ms
		loop    map[int64]string // what the loop does at a time (ms): "task", "sleep" or "wake"
		frozen  [2]int64         // no check in this open interval (ms)
		reports []int64          // the checks that report a stall (ms)
	}{
		{name: "one long task is reported once", end: 200, reports: []int64{50}},
		{name: "a task starting between checks restarts the count", end: 200,
			loop: map[int64]string{35: "task"}, reports: []int64{90}},
		{name: "short tasks are no stall, an endless last one is", end: 200,
			loop: map[int64]string{5: "task", 15: "task", 25: "task", 35: "task", 45: "task", 55: "task", 65: "task", 75: "task"}, reports: []int64{130}},
		{name: "a sleeping loop is no stall", end: 200,
			loop: map[int64]string{5: "sleep", 95: "wake"}, reports: []int64{150}},
		{name: "a late watchdog keeps counting", end: 200,
			frozen: [2]int64{10, 50}, reports: []int64{50}},
		{name: "a frozen watchdog restarts the count", end: 200,
			frozen: [2]int64{10, 70}, reports: []int64{120}},
		{name: "the next stall is reported again", end: 200,
			loop: map[int64]string{55: "task"}, reports: []int64{50, 110}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []int64
			var now int64
			e := New(Config{StallThreshold: 50 * time.Millisecond, OnStall: func(string, time.Duration, []byte) { reported = append(reported, now) }})
			w := &watchdog{e: e, every: 10 * ms, maxGap: 50 * ms}
			for now = 0; now <= tc.end; now++ {
				switch tc.loop[now] {
				case "task":
					e.pulse()
				case "sleep":
					e.idleBegin()
				case "wake":
					e.idleEnd()
				}
				if now%10 == 0 && (now <= tc.frozen[0] || now >= tc.frozen[1]) {
					w.check(now * ms)
				}
			}
			if !slices.Equal(reported, tc.reports) {
				t.Fatalf("stalls reported at %v ms, want %v", reported, tc.reports)
			}
			if n := e.health.stalls.Load(); n != uint64(len(reported)) {
				t.Fatalf("stalls = %d, reports = %d", n, len(reported))
			}
		})
	}
}

const (
	loopRunning = "goroutine 5 [running]:\nmain.block()\n\t/x.go:1\ngithub.com/spindle-rt/spindle/internal/loop.(*Loop).runBatch(0x1)\ncreated by main.main in goroutine 1\n\t/x.go:2"
	loopParked  = "goroutine 5 [coroutine, 3 minutes]:\niter.Pull[...].func2()\ngithub.com/spindle-rt/spindle/internal/loop.(*Fiber).Run(0x1)\ncreated by main.main in goroutine 1\n\t/x.go:2"
	otherGo     = "goroutine 6 [chan receive]:\nmain.other()\n\t/x.go:3\ncreated by main.main in goroutine 1\n\t/x.go:4"
)

// fiber is the stack of a task goroutine: parked or not, created by
// goroutine parent.
func fiber(id, parent int, parked bool) string {
	state := "sleep"
	if parked {
		state = "coroutine"
	}
	return "goroutine " + strconv.Itoa(id) + " [" + state + "]:\nmain.task" + strconv.Itoa(id) + "()\n" +
		string(fiberFrame) + "0x1, 0x2)\n\t/fiber.go:1\ncreated by iter.Pull[...] in goroutine " + strconv.Itoa(parent) + "\n\t/iter.go:271 +0x90"
}

func TestHolderStack(t *testing.T) {
	for _, tc := range []struct {
		name string
		dump []string
		want []string // the goroutines of the result, in order
	}{
		{"loop goroutine holds", []string{otherGo, loopRunning, fiber(7, 5, true)}, []string{"goroutine 5 "}},
		{"task of this loop holds", []string{loopParked, fiber(7, 5, true), fiber(8, 5, false), fiber(9, 3, false), otherGo}, []string{"goroutine 8 "}},
		{"the only running task", []string{loopParked, fiber(7, 5, true), fiber(9, 3, false)}, []string{"goroutine 9 "}},
		{"ambiguous", []string{loopParked, fiber(8, 5, false), fiber(9, 5, false), fiber(10, 3, false)}, []string{"goroutine 5 ", "goroutine 8 ", "goroutine 9 ", "goroutine 10 "}},
		{"not found", []string{otherGo}, []string{"spindle: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(holderStack([]byte(strings.Join(tc.dump, "\n\n")+"\n"), 5))
			parts := strings.Split(got, "\n\n")
			if len(parts) != len(tc.want) {
				t.Fatalf("%d stacks, want %d:\n%s", len(parts), len(tc.want), got)
			}
			for i, p := range parts {
				if !strings.HasPrefix(p, tc.want[i]) {
					t.Fatalf("stack %d starts %q, want %q", i, p[:min(len(p), 20)], tc.want[i])
				}
			}
		})
	}
}

func TestGoroutineHeader(t *testing.T) {
	for _, tc := range []struct {
		line   string
		id     uint64
		parked bool
		ok     bool
	}{
		{"goroutine 7 [coroutine]:", 7, true, true},
		{"goroutine 12 [chan receive, 2 minutes]:", 12, false, true},
		{"goroutine 3 [running, locked to thread]:", 3, false, true},
		{"goroutine 9 gp=0xc000 m=nil [coroutine]:", 9, true, true},
		{"goroutine x [running]:", 0, false, false},
		{"created by main.main", 0, false, false},
	} {
		id, parked, ok := goroutineHeader([]byte(tc.line + "\nmain.f()"))
		if id != tc.id || parked != tc.parked || ok != tc.ok {
			t.Errorf("%q: (%d, %v, %v), want (%d, %v, %v)", tc.line, id, parked, ok, tc.id, tc.parked, tc.ok)
		}
	}
	if id := currentGoid(); id == 0 {
		t.Fatal("currentGoid = 0")
	}
}

// Delay: nearest-rank percentiles over the last probeWindow samples.
func TestDelaySummary(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tc := range []struct {
		name          string
		window        int
		delays        []int64 // ms, one probe sent every 10 ms
		p50, p99, max int64
		samples       int
		span          int64 // ms
	}{
		{"none", 4, nil, 0, 0, 0, 0, 0},
		{"one", 4, []int64{3}, 3, 3, 3, 1, 3},
		{"percentiles", 100, seq(1, 100), 50, 99, 100, 100, 990 + 100},
		{"the window slides", 3, []int64{500, 1, 2, 3}, 2, 3, 3, 3, 20 + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Loop{}
			e.health.probeWindow = tc.window
			for i, d := range tc.delays {
				e.health.addDelay(d*ms, int64(i)*10*ms)
			}
			var s Stats
			e.fillHealth(&s)
			want := Delay{P50: time.Duration(tc.p50 * ms), P99: time.Duration(tc.p99 * ms), Max: time.Duration(tc.max * ms), Samples: tc.samples, Window: time.Duration(tc.span * ms)}
			if s.Delay != want {
				t.Fatalf("Delay = %+v, want %+v", s.Delay, want)
			}
		})
	}
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}
