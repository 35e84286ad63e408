package loop

// The watchdog: one goroutine per session (see health.go) that detects
// stalls and samples the scheduling delay.
//
// Stalls. Every check (threshold/8, at least a millisecond) the watchdog
// reads ask (health.go) and learns since when the task running now has
// held the loop: askStamped, since startAt (the one task started since the
// last request); askWanted, since the later of the request and the loop's
// wake-up (no task has started since). askNone means tasks come and go: the
// watchdog asks again. Once the task has held the loop for the threshold,
// the stall is reported, once, with that lower bound. One check inside a
// stall is enough to see it, however late the check is, as long as the
// request was made (by an earlier check, or by the wake-up) before the
// stalling task started. And when no check comes while a stamped task runs
// (a watchdog kept off the CPU for longer than the stall), the loop itself
// notes the stall as the task ends (health's late stall), and the watchdog
// reports it at its next look, with the task's whole time and no stack.
// Invariants (watchdog-owned):
//   - armed: the watchdog has looked since the loop last slept (a loop seen
//     asleep disarms); reqAt: when it last moved ask from askNone to
//     askWanted; reported: the since of the last stall reported, so each
//     stall is reported at most once;
//   - a check that comes more than maxGap (four thresholds, and at least a
//     second) after the last is late, and late has two causes: the whole process was frozen (a
//     stopped process, a paused VM, a debugger), or only the watchdog was
//     kept off a CPU (a loaded machine, more busy loops than cores: then
//     nearly every check is late, if mostly by less). The process's CPU
//     clock tells them apart: a frozen process used next to no CPU time
//     over the gap. Only a freeze moves thawAt to now, and no stall counts
//     time before thawAt (the task is not blamed for time it did not
//     have); a late watchdog keeps counting. Shorter gaps are never taken
//     for a freeze: a machine so loaded that the process gets next to no
//     CPU for a while (other processes' load) is as bad for the loop's
//     callers as a long task, and counts, while the freezes worth telling
//     apart (a debugger, SIGSTOP, a paused VM) last seconds;
//   - the stack of a stall is taken only while its task still holds the
//     loop: ask and startAt unchanged after the dump (and the loop not
//     asleep) mean that no task started since, and a stack inside runBatch
//     (or a fiber) that the loop is not between batches, so the dump shows
//     the stalling task. Otherwise the report carries no stack rather than
//     one from after the stall.
//
// Idle. The watchdog must not keep a sleeping loop's process (or
// testing/synctest bubble) awake. A tick that finds the loop asleep, with
// no task run since the last tick (the probe does not count), parks the
// watchdog (health.dogParked): its tickers stop and it waits for the loop
// to wake (idleEnd clears dogParked and sends on wake). So an idle loop
// costs no wake-ups beyond a tick or two, and a fake 24 h sleep in a
// bubble is one step of fake time.
//
// Delay. Every probe period the watchdog submits a probe (a Runnable kept
// for the session, so probing allocates nothing) stamped with the time it
// was sent; the probe stamps the time it ran. At most one probe is in
// flight: a loop that is behind is not sent another until the last has run,
// and its lateness is the sample. Stats computes Delay from the last
// probeWindow samples, kept in health. The probe is the loop's own
// bookkeeping: it does not count in TasksRun. A parked watchdog sends no
// probe: an idle loop has no scheduled work whose delay to measure.

import (
	"bytes"
	"log/slog"
	"reflect"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/internal/gid"
)

type watchdog struct {
	e        *Loop
	quit     chan struct{}
	done     chan struct{}
	wake     chan struct{} // health.dogWake: the loop woke while the watchdog was parked
	loopGoid uint64        // of the goroutine running the loop

	// Stall detection.
	every    int64 // check period, ns
	maxGap   int64 // a check this long after the last one may follow a freeze, ns
	last     int64 // mono() of the last check
	lastCPU  int64 // processCPU() at the last check, -1 if unknown
	armed    bool
	reqAt    int64 // mono() when the watchdog last set askWanted
	thawAt   int64 // mono() when a freeze of the process was last seen to end,
	thawed   bool  // if one was (mono() may be negative: in a synctest bubble)
	reported int64 // since of the last stall reported, if any
	anyYet   bool  // a stall has been reported (reported is set)

	// Delay probe.
	probe probe
	sent  int64 // mono() when the probe in flight was sent; 0: none in flight
}

// probe is the delay probe's task.
type probe struct {
	e   *Loop
	ran atomic.Int64
}

// Run stamps the time the probe ran; the probe does not count as a task.
func (p *probe) Run() {
	p.e.ran--
	p.ran.Store(mono())
}

// startWatchdog starts the session's watchdog on its own goroutine, or
// returns nil when both stall detection and the delay probe are off.
func (e *Loop) startWatchdog() *watchdog {
	h := &e.health
	if h.threshold <= 0 && h.probeEvery <= 0 {
		return nil
	}
	w := &watchdog{e: e, quit: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	w.probe.e = e
	h.mu.Lock()
	h.dogWake, h.dogParked = w.wake, false
	h.mu.Unlock()
	if h.threshold > 0 {
		w.loopGoid = currentGoid()
		w.every = checkPeriod(h.threshold)
		w.maxGap = max(4*int64(h.threshold), int64(time.Second), 2*w.every)
	}
	go w.run()
	return w
}

// stop ends the watchdog and waits for its goroutine, also while that is in
// the stall handler (a Shutdown or Close from the handler does not wait for
// the loop, so this cannot deadlock). A nil watchdog is a no-op.
func (w *watchdog) stop() {
	if w == nil {
		return
	}
	close(w.quit)
	<-w.done
}

func (w *watchdog) run() {
	h := &w.e.health
	h.watchG.Store(gid.Current())
	defer func() {
		h.watchG.Store(0)
		close(w.done)
	}()
	var check, sample <-chan time.Time
	var checkT, sampleT *time.Ticker
	lastRan := w.e.pubRan.Load()
	if w.every > 0 {
		checkT = time.NewTicker(time.Duration(w.every))
		defer checkT.Stop()
		check = checkT.C
		w.last, w.lastCPU = mono(), cpuNow()
	}
	if h.probeEvery > 0 {
		sampleT = time.NewTicker(h.probeEvery)
		defer sampleT.Stop()
		sample = sampleT.C
	}
	for {
		select {
		case <-w.quit:
			w.reportLate()
			return
		case <-check:
			w.check(mono(), cpuNow())
		case <-sample:
			w.sample(mono())
		}
		ran := w.e.pubRan.Load()
		if !h.parkIfAsleep(ran, lastRan) {
			lastRan = ran
			continue
		}
		// The loop sleeps: so does the watchdog, until the loop wakes.
		if checkT != nil {
			checkT.Stop()
		}
		if sampleT != nil {
			sampleT.Stop()
		}
		w.takeProbe()
		w.reportLate()
		select {
		case <-w.quit:
			w.reportLate()
			return
		case <-w.wake:
		}
		w.armed = false
		w.last, w.lastCPU = mono(), cpuNow()
		if checkT != nil {
			checkT.Reset(time.Duration(w.every))
		}
		if sampleT != nil {
			sampleT.Reset(h.probeEvery)
		}
	}
}

// checkPeriod is how often the watchdog looks for a stall of threshold.
func checkPeriod(threshold time.Duration) int64 {
	return max(int64(threshold/8), int64(time.Millisecond))
}

// cpuNow is processCPU's reading, or -1 when there is none.
func cpuNow() int64 {
	if c, ok := processCPU(); ok {
		return c
	}
	return -1
}

// frozenShare: a late check whose gap saw the process use less than
// 1/frozenShare of one CPU finds the process frozen. A process that ran
// anything at all in the gap (the task that stalls, other loops, the
// runtime) uses far more.
const frozenShare = 16

// check is one look for a stall at time now; cpu is the process's CPU
// time then (processCPU), or -1 when it is not known.
func (w *watchdog) check(now, cpu int64) {
	h := &w.e.health
	gap, used := now-w.last, cpu-w.lastCPU
	known := cpu >= 0 && w.lastCPU >= 0
	w.last, w.lastCPU = now, cpu
	h.lastLook.Store(now)
	w.reportLate()
	asleep, wokeAt := h.sleeping()
	if asleep {
		w.armed = false
		return
	}
	if gap > w.maxGap && known && used < gap/frozenShare {
		w.thawAt, w.thawed = now, true // the process was frozen
	}
	var since int64
	switch h.ask.Load() {
	case askStamped:
		since = h.startAt.Load()
	case askWanted:
		if w.e.phase.Load() == phaseClosed {
			return // no task since the request: the loop is in its close path
		}
		since = wokeAt
		if w.armed {
			since = max(since, w.reqAt)
		}
	default:
		if h.ask.CompareAndSwap(askNone, askWanted) {
			w.reqAt = now
		}
		w.armed = true
		return
	}
	w.armed = true
	if w.anyYet && since == w.reported {
		return // reported already
	}
	if d := time.Duration(now - w.after(since)); d >= h.threshold {
		w.reported, w.anyYet = since, true
		w.report(d, true)
	}
}

// reportLate reports the late stall the loop noted, unless it is the
// stall reported last (seen while it ran).
func (w *watchdog) reportLate() {
	start, end, ok := w.e.health.takeLate()
	if !ok || w.anyYet && start == w.reported {
		return
	}
	d := time.Duration(end - w.after(start))
	if d < w.e.health.threshold {
		return // most of it was a freeze of the process
	}
	w.reported, w.anyYet = start, true
	w.report(d, false)
}

// after returns t, or the end of the last freeze if that came later: no
// stall counts time the process did not have.
func (w *watchdog) after(t int64) int64 {
	if w.thawed {
		return max(t, w.thawAt)
	}
	return t
}

// report hands a stall that has lasted d so far to the stall handler,
// with the stack of the goroutine holding the loop if running (the task
// still runs). It counts the stall once the stack is taken, so Stats shows
// it only then. A stack taken after the task let go of the loop is not the
// stall's: the report then has none.
func (w *watchdog) report(d time.Duration, running bool) {
	e := w.e
	h := &e.health
	var stack []byte
	if running {
		ask, start := h.ask.Load(), h.startAt.Load()
		stack = holderStack(dumpStacks(), w.loopGoid)
		if asleep, _ := h.sleeping(); asleep || h.ask.Load() != ask || h.startAt.Load() != start || !inTask(stack) {
			stack = nil // the task let go of the loop before or while the dump was taken
		}
	}
	h.stalls.Add(1)
	fn := e.health.onStall
	if fn == nil {
		slog.Warn("spindle: a task has held the loop too long", "executor", e.name, "duration", d, "stack", string(stack))
		return
	}
	defer func() {
		if r := recover(); r != nil {
			slog.Error("spindle: stall handler panicked", "executor", e.name, "panic", r)
		}
	}()
	fn(e.name, d, stack)
}

// sample takes in the probe in flight, if it has run, and sends the next.
func (w *watchdog) sample(now int64) {
	if !w.takeProbe() {
		return // still queued: its lateness is the sample, once it runs
	}
	w.probe.ran.Store(0)
	w.sent = now
	if w.e.SubmitRunnable(&w.probe, nil, 0) != nil {
		w.sent = 0 // closing
	}
}

// takeProbe takes in the sample of the probe in flight, if it has run, and
// reports whether no probe is in flight now.
func (w *watchdog) takeProbe() bool {
	if w.sent == 0 {
		return true
	}
	ran := w.probe.ran.Load()
	if ran == 0 {
		return false
	}
	w.e.health.addDelay(ran-w.sent, w.sent)
	w.sent = 0
	return true
}

// maxStacks bounds the buffer for the stacks of all goroutines.
const maxStacks = 64 << 20

// AllStacks returns the stacks of all goroutines, as runtime.Stack formats
// them.
func AllStacks() []byte {
	for n := 1 << 20; ; n *= 4 {
		buf := make([]byte, n)
		if k := runtime.Stack(buf, true); k < n || n >= maxStacks {
			return buf[:k]
		}
	}
}

// dumpStacks is AllStacks; the watchdog's tests replace it.
var dumpStacks = AllStacks

// runBatchFrame names the function that runs the loop's tasks.
var runBatchFrame = []byte(runtime.FuncForPC(reflect.ValueOf((*Loop).runBatch).Pointer()).Name() + "(")

// inTask reports whether stack (holderStack's choice) is of a goroutine
// inside a task: the loop goroutine in runBatch (also while it has lent the
// loop to a fiber), or a fiber. A loop goroutine between batches (polling,
// yielding, going to sleep) has let go of the task that stalled, even
// before the loop's word says so.
func inTask(stack []byte) bool {
	return bytes.Contains(stack, runBatchFrame) || bytes.Contains(stack, fiberFrame)
}

// fiberFrame names the function at the bottom of every fiber's stack.
var fiberFrame = []byte(runtime.FuncForPC(reflect.ValueOf((*Loop).runFiberBody).Pointer()).Name() + "(")

// holderStack picks out of dump (all goroutines, as runtime.Stack writes
// them) the stack of the goroutine holding the loop run by goroutine
// loopGoid. That is the loop goroutine itself unless it is parked in a
// coroutine switch, which means it has lent the loop to a fiber: then it is
// the fiber goroutine that is not parked in a switch and was created by the
// loop goroutine (every task goroutine of a session is). If that does not
// single one out (task goroutines left from RunUntilIdle, or a task that
// itself drives a coroutine), the result is the loop goroutine's stack
// followed by every candidate's. The result does not share dump's memory.
func holderStack(dump []byte, loopGoid uint64) []byte {
	var loopStack []byte
	var loopParked bool
	var mine, others [][]byte
	for g := range bytes.SplitSeq(dump, []byte("\n\n")) {
		id, parked, ok := goroutineHeader(g)
		switch {
		case !ok:
		case id == loopGoid:
			loopStack, loopParked = g, parked
		case parked || !bytes.Contains(g, fiberFrame):
		case createdIn(g) == loopGoid:
			mine = append(mine, g)
		default:
			others = append(others, g)
		}
	}
	switch {
	case loopStack == nil:
		return []byte("spindle: the stack of the goroutine holding the loop was not found")
	case !loopParked:
		return bytes.Clone(loopStack)
	case len(mine) == 1:
		return bytes.Clone(mine[0])
	case len(mine) == 0 && len(others) == 1:
		return bytes.Clone(others[0])
	}
	return bytes.Join(append(append([][]byte{loopStack}, mine...), others...), []byte("\n\n"))
}

// goroutineHeader parses the first line of a goroutine's stack,
// "goroutine 7 [chan receive, 2 minutes]:", into its id and whether its
// state is "coroutine" (parked in a coroutine switch).
func goroutineHeader(g []byte) (id uint64, parked, ok bool) {
	rest, found := bytes.CutPrefix(g, []byte("goroutine "))
	if !found {
		return 0, false, false
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return 0, false, false
	}
	id, err := strconv.ParseUint(string(rest[:sp]), 10, 64)
	if err != nil {
		return 0, false, false
	}
	_, state, _ := bytes.Cut(rest, []byte("["))
	state, _, _ = bytes.Cut(state, []byte("]"))
	state, _, _ = bytes.Cut(state, []byte(","))
	return id, string(state) == "coroutine", true
}

// createdIn returns the id of the goroutine that created the goroutine
// whose stack is g ("created by f in goroutine 7"), or 0.
func createdIn(g []byte) uint64 {
	_, line, found := bytes.Cut(g, []byte("\ncreated by "))
	if !found {
		return 0
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	_, num, found := bytes.Cut(line, []byte(" in goroutine "))
	if !found {
		return 0
	}
	id, _ := strconv.ParseUint(string(num), 10, 64)
	return id
}

// currentGoid returns the runtime's id of the calling goroutine, the number
// runtime.Stack prints. It costs a traceback: the loop calls it once per
// session.
func currentGoid() uint64 {
	var buf [64]byte
	id, _, _ := goroutineHeader(buf[:runtime.Stack(buf[:], false)])
	return id
}
