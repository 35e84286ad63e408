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
//   - ask is the one word the loop touches per task. askWanted asks the
//     loop to stamp the start of its next task: the watchdog sets it (from
//     askNone, by compare-and-swap, noting when in its reqAt), and so do
//     the session's start and a wake-up while the watchdog is behind (its
//     last look, lastLook, is older than one and a half of its periods: it
//     is parked, or kept off the CPU). The next task start (pulse) stores
//     the time in startAt and moves ask to askStamped; the start after that
//     moves it to askNone, and so does falling asleep (idleBegin) from
//     askStamped; a request not yet served stays across the sleep. So
//     askWanted means no task has started since the later of reqAt and
//     wokeAt, and askStamped that exactly one has, at startAt, and still
//     holds the loop; a stamp's startAt identifies its task. The loop only
//     loads ask per task and stores (and reads the clock) only when it is
//     set: at most twice per watchdog tick, and per wake-up while the
//     watchdog is behind;
//   - the timing fields (active, start, inSession, idle, sleepAt, wokeAt,
//     asleep), the late stall (late, lateStart, lateEnd) and the delay
//     samples are guarded by mu. The timing fields change at session start
//     and end and around each sleep, never per task or per batch, so a
//     session's time splits exactly into Busy (awake) and Idle (asleep);
//     the samples change once per probe; a late stall is noted by the loop
//     when a stamped task that held the loop for the threshold ends, and
//     taken by the watchdog;
//   - stalls only grows; the watchdog adds one per stall it reports;
//   - dogParked (under mu) is set by the watchdog when it finds the loop
//     asleep with no task run since its last tick, and parks; idleEnd,
//     under the same lock, clears it and sends one token on dogWake, so the
//     watchdog cannot miss the wake-up. A loop awake or newly asleep costs
//     nothing here beyond the lock idleEnd takes anyway (watchdog.go, Idle).

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
	ask      atomic.Uint32 // askNone, askWanted or askStamped; see the invariants
	startAt  atomic.Int64  // mono() when the task stamped by askStamped started
	lastLook atomic.Int64  // mono() of the watchdog's last look
	behind   int64         // a watchdog whose last look is this old is behind, ns

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
	wokeAt    int64         // mono() when the loop last woke
	asleep    bool
	delays    []int64       // ring of the last probeWindow delays, ns
	sentAt    []int64       // mono() when each delay's probe was sent
	nextDelay int           // ring position of the next delay
	late      bool          // a stamped task held the loop for the threshold, for the watchdog to report:
	lateStart int64         // its start
	lateEnd   int64         // and its end
	dogParked bool          // the watchdog waits on dogWake for the loop to wake
	dogWake   chan struct{} // the parked watchdog's wake-up, capacity 1
}

func (h *health) init(cfg Config, name string) {
	h.threshold, h.onStall = cfg.StallThreshold, cfg.OnStall
	h.behind = checkPeriod(h.threshold) * 3 / 2
	if cfg.ProbeInterval > 0 {
		h.probeEvery = cfg.ProbeInterval
		h.probeWindow = int(min(max(cfg.ProbeWindow/cfg.ProbeInterval, 1), maxDelaySamples))
	}
	h.labels = pprof.WithLabels(context.Background(), pprof.Labels(LabelKey, name))
}

// maxDelaySamples bounds the delay probe's window.
const maxDelaySamples = 10000

// clock is mono, the clock of the loop's side of the watchdog (pulse,
// idleBegin, idleEnd); the watchdog's own tests move it by hand.
var clock = mono

// The states of health.ask.
const (
	askNone    uint32 = iota // no stamp wanted: two tasks started since the last request, or the loop slept
	askWanted                // stamp the next task's start
	askStamped               // one task has started since the request, at startAt
)

// pulse tells the watchdog that a task starts. The loop calls it before
// every task: one load, and a store only when a stamp is wanted or was
// just taken.
func (e *Loop) pulse() {
	if v := e.health.ask.Load(); v != askNone {
		e.health.pulseSlow(v)
	}
}

// pulseSlow is pulse's path when ask is set. The end of a stamped task
// is timed too: a task that held the loop for the threshold while the
// watchdog could not look (a machine with more busy loops than cores keeps
// it off the CPU) is handed to the watchdog as a late stall.
func (h *health) pulseSlow(v uint32) {
	switch v {
	case askWanted:
		h.startAt.Store(clock())
		h.ask.Store(askStamped)
		return
	}
	h.ask.Store(askNone)
	if h.threshold > 0 {
		if now, start := clock(), h.startAt.Load(); now-start >= int64(h.threshold) {
			h.mu.Lock()
			h.lateStart, h.lateEnd, h.late = start, now, true
			h.mu.Unlock()
		}
	}
}

// idleBegin records that the loop falls asleep.
func (e *Loop) idleBegin() {
	h := &e.health
	now := clock()
	h.mu.Lock()
	h.sleepAt, h.asleep = now, true
	h.stampEndLocked(now)
	h.mu.Unlock()
}

// stampEndLocked clears a stamp because the loop stops running tasks at
// now (it falls asleep, or the session ends), and notes a late stall if
// the task stamped last held the loop for the threshold. A request not yet
// served (askWanted) stays across a sleep, for the first task after the
// wake-up; the watchdog only moves ask from askNone, so a load and a store
// do. h.mu is held.
func (h *health) stampEndLocked(now int64) {
	switch h.ask.Load() {
	case askStamped:
		h.ask.Store(askNone)
		if start := h.startAt.Load(); h.threshold > 0 && now-start >= int64(h.threshold) {
			h.lateStart, h.lateEnd, h.late = start, now, true
		}
	}
}

// takeLate returns the late stall that the loop noted (see pulseSlow), if
// there is one, and forgets it. Watchdog only.
func (h *health) takeLate() (start, end int64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start, end, ok = h.lateStart, h.lateEnd, h.late
	h.lateStart, h.lateEnd, h.late = 0, 0, false
	return start, end, ok
}

// idleEnd records that the loop woke up.
func (e *Loop) idleEnd() {
	h := &e.health
	now := clock()
	h.mu.Lock()
	h.idle += time.Duration(now - h.sleepAt)
	h.asleep, h.wokeAt = false, now
	if h.dogParked {
		h.dogParked = false
		select {
		case h.dogWake <- struct{}{}:
		default: // a token is already there (from a watchdog that quit while parked)
		}
	}
	h.mu.Unlock()
	if h.threshold > 0 && now-h.lastLook.Load() > h.behind && h.ask.Load() == askNone {
		h.ask.Store(askWanted) // the watchdog is behind: ask for it
	}
}

// parkIfAsleep reports whether the loop is asleep and has run no task
// since the watchdog's last tick (ran is the loop's published task count
// now, lastRan at that tick; the probe is not counted), and if so marks the
// watchdog parked (see the invariants). Watchdog only.
func (h *health) parkIfAsleep(ran, lastRan uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.asleep || ran != lastRan {
		return false
	}
	h.dogParked = true
	return true
}

// sleeping reports whether the loop is asleep, and when it last woke.
func (h *health) sleeping() (asleep bool, wokeAt int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asleep, h.wokeAt
}

// beginSession begins a session on the loop goroutine (see the top of
// this file). While it lasts the goroutine carries ctx's pprof labels plus
// LabelKey; afterwards ctx's labels only, as with pprof.Do.
func (e *Loop) beginSession(ctx context.Context) {
	h := &e.health
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(LabelKey, e.name)))
	h.mu.Lock()
	h.start, h.inSession = mono(), true
	h.wokeAt = h.start
	h.mu.Unlock()
	h.lastLook.Store(h.start)
	if h.threshold > 0 {
		h.ask.Store(askWanted) // stamp the session's first task
	}
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
	h.mu.Lock()
	h.stampEndLocked(clock()) // the watchdog's last look reports a late stall
	h.mu.Unlock()
	h.ask.Store(askNone)
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
