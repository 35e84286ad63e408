package loop

// Loop health: what the loop records so that others can watch it.
//
// A session is one stretch of a loop run by Run, Start or a Shutdown that
// drains on its caller (the loops that may sleep); RunUntilIdle and Drive,
// which borrow their caller's goroutine until nothing is ready, are not
// sessions and cost nothing here. A session labels the loop goroutine for
// pprof, starts the watchdog (watchdog.go) and is timed for Busy and Idle.
//
// Invariants:
//   - asked is the one word the loop touches per task: the watchdog sets it,
//     and the loop clears it when a task starts (pulse) and when the loop
//     falls asleep (idleBegin). So while asked stays set, the loop has been
//     awake inside one task (or between two) since the watchdog set it. The
//     loop only loads it per task and stores only when it was set, at most
//     once per watchdog tick;
//   - the timing fields (active, start, inSession, idle, sleepAt, asleep)
//     and the delay samples are guarded by mu. The timing fields change at
//     session start and end and around each sleep, never per task or per
//     batch, so a session's time splits exactly into Busy (awake) and Idle
//     (asleep); the samples change once per probe;
//   - stalls only grows; the watchdog adds one per stall it reports.

import (
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/internal/gid"
)

// LabelKey is executor.ProfileLabel (see there).
const LabelKey = "spindle.executor"

// StallFunc receives a stall: the executor's name, how long the task has
// held the loop, and the stack of the goroutine holding it (the fields of
// executor.Stall, which documents them).
type StallFunc func(executor string, held time.Duration, stack []byte)

// Delay has the fields of executor.Delay, which documents them; the
// executor converts one into the other.
type Delay struct {
	P50, P99, Max time.Duration
	Samples       int
	Window        time.Duration
}

type health struct {
	asked atomic.Bool // set by the watchdog, cleared by the loop

	threshold   time.Duration // stall threshold; <= 0: no stall detection
	onStall     StallFunc     // nil: log with log/slog
	probeEvery  time.Duration // delay probe period; <= 0: no probe
	probeWindow int           // delay samples kept
	labels      context.Context

	// Loop-owned: the session's context (nil outside a session) and
	// watchdog.
	ctx      context.Context
	watchdog *watchdog

	watchG atomic.Uintptr // gid of the watchdog goroutine, 0 when none runs
	stalls atomic.Uint64

	mu        sync.Mutex
	active    time.Duration // length of the finished sessions
	start     int64         // mono() when the current session began
	inSession bool
	idle      time.Duration // time asleep, finished sleeps
	sleepAt   int64         // mono() when the loop fell asleep
	asleep    bool
	delays    []int64 // ring of the last probeWindow delays, ns
	sentAt    []int64 // mono() when each delay's probe was sent
	nextDelay int     // ring position of the next delay
}

func (h *health) init(cfg Config, name string) {
	h.threshold, h.onStall = cfg.StallThreshold, cfg.OnStall
	if cfg.ProbeInterval > 0 {
		h.probeEvery = cfg.ProbeInterval
		h.probeWindow = int(min(max(cfg.ProbeWindow/cfg.ProbeInterval, 1), maxDelaySamples))
	}
	h.labels = pprof.WithLabels(context.Background(), pprof.Labels(LabelKey, name))
}

// maxDelaySamples bounds the delay probe's window.
const maxDelaySamples = 10000

// pulse tells the watchdog that a task starts. The loop calls it before
// every task: one load, and a store only when the watchdog has asked since.
func (e *Loop) pulse() {
	if e.health.asked.Load() {
		e.health.asked.Store(false)
	}
}

// idleBegin records that the loop falls asleep.
func (e *Loop) idleBegin() {
	h := &e.health
	h.mu.Lock()
	h.sleepAt, h.asleep = mono(), true
	h.mu.Unlock()
	h.asked.Store(false)
}

// idleEnd records that the loop woke up.
func (e *Loop) idleEnd() {
	h := &e.health
	h.mu.Lock()
	h.idle += time.Duration(mono() - h.sleepAt)
	h.asleep = false
	h.mu.Unlock()
}

// sleeping reports whether the loop is asleep.
func (h *health) sleeping() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asleep
}

// beginSession begins a session on the loop goroutine (see the top of
// this file). While it lasts the goroutine carries ctx's pprof labels plus
// LabelKey; afterwards ctx's labels only, as with pprof.Do.
func (e *Loop) beginSession(ctx context.Context) {
	h := &e.health
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(LabelKey, e.name)))
	h.mu.Lock()
	h.start, h.inSession = mono(), true
	h.mu.Unlock()
	h.ctx = ctx
	h.watchdog = e.startWatchdog()
}

// endSession ends the session, if one is running: the loop finishes closing
// only after it, so that no watchdog outlives Close. Loop only.
func (e *Loop) endSession() {
	h := &e.health
	if h.ctx == nil {
		return
	}
	h.watchdog.stop()
	h.watchdog = nil
	h.mu.Lock()
	h.active += time.Duration(mono() - h.start)
	h.inSession = false
	h.mu.Unlock()
	pprof.SetGoroutineLabels(h.ctx)
	h.ctx = nil
}

// onWatchdog reports whether the caller is the watchdog (in a stall
// handler).
func (e *Loop) onWatchdog() bool {
	g := e.health.watchG.Load()
	return g != 0 && g == gid.Current()
}

// labelTaskGoroutine gives a new task goroutine the executor's label.
func (e *Loop) labelTaskGoroutine() { pprof.SetGoroutineLabels(e.health.labels) }

// addDelay records a delay sample d of a probe sent at sentAt, in the ring
// of the last probeWindow ones.
func (h *health) addDelay(d, sentAt int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.delays) < h.probeWindow {
		h.delays = append(h.delays, d)
		h.sentAt = append(h.sentAt, sentAt)
	} else {
		h.delays[h.nextDelay], h.sentAt[h.nextDelay] = d, sentAt
	}
	h.nextDelay = (h.nextDelay + 1) % h.probeWindow
}

// fillHealth adds the health figures to s.
func (e *Loop) fillHealth(s *Stats) {
	h := &e.health
	s.Stalls = h.stalls.Load()
	now := mono()
	h.mu.Lock()
	total, idle := h.active, h.idle
	if h.inSession {
		total += time.Duration(now - h.start)
	}
	if h.asleep {
		idle += time.Duration(now - h.sleepAt)
	}
	delays := slices.Clone(h.delays)
	var oldest, newest int64
	if n := len(h.delays); n > 0 {
		newest = h.sentAt[(h.nextDelay+n-1)%n] + h.delays[(h.nextDelay+n-1)%n]
		oldest = h.sentAt[h.nextDelay%n]
	}
	h.mu.Unlock()
	s.Busy, s.Idle = total-idle, idle
	if n := len(delays); n > 0 {
		slices.Sort(delays)
		s.Delay = Delay{
			P50:     time.Duration(delays[rank(n, 50)]),
			P99:     time.Duration(delays[rank(n, 99)]),
			Max:     time.Duration(delays[n-1]),
			Samples: n,
			Window:  time.Duration(newest - oldest),
		}
	}
}

// rank is the index of the p-th percentile of n sorted samples (nearest
// rank).
func rank(n, p int) int { return max((n*p+99)/100-1, 0) }
