package loop

// The watchdog: one goroutine per session (see health.go) that detects
// stalls and samples the scheduling delay.
//
// Stalls. Every check (threshold/8, at least a millisecond) the watchdog
// looks at asked. If the loop cleared it since the last check, a task
// started (or the loop slept) in between: the watchdog sets it again and
// notes the time, armedAt. If it is still set, no task has started since
// armedAt, so the task running then has held the loop for at least
// now-armedAt; once that reaches the threshold the stall is reported, once,
// with that lower bound (it undershoots by less than one check). Invariants
// (watchdog-owned):
//   - armed: asked was set by this watchdog at armedAt and the loop has not
//     been seen asleep since; reported: the stall of the current arming has
//     been reported, so each stall is reported at most once;
//   - a check that finds the loop asleep disarms; one that comes more than a
//     threshold after the last (the whole process was frozen, not just the
//     loop: a stopped process, a paused VM) restarts the count from now
//     instead of blaming the task for time it did not have. A watchdog that
//     is merely late (a busy machine) keeps counting.
//
// Delay. Every probe period the watchdog submits a probe (a Runnable kept
// for the session, so probing allocates nothing) stamped with the time it
// was sent; the probe stamps the time it ran. At most one probe is in
// flight: a loop that is behind is not sent another until the last has run,
// and its lateness is the sample. Stats computes Delay from the last
// probeWindow samples, kept in health. The probe is the loop's own
// bookkeeping: it does not count in TasksRun.

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
	loopGoid uint64 // of the goroutine running the loop

	// Stall detection.
	every    int64 // check period, ns
	maxGap   int64 // a check this long after the last one restarts the count, ns
	last     int64 // mono() of the last check
	armed    bool
	reported bool
	armedAt  int64

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
	w := &watchdog{e: e, quit: make(chan struct{}), done: make(chan struct{})}
	w.probe.e = e
	if h.threshold > 0 {
		w.loopGoid = currentGoid()
		w.every = max(int64(h.threshold/8), int64(time.Millisecond))
		w.maxGap = max(int64(h.threshold), 2*w.every)
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
	if w.every > 0 {
		t := time.NewTicker(time.Duration(w.every))
		defer t.Stop()
		check = t.C
		w.last = mono()
	}
	if h.probeEvery > 0 {
		t := time.NewTicker(h.probeEvery)
		defer t.Stop()
		sample = t.C
	}
	for {
		select {
		case <-w.quit:
			return
		case <-check:
			w.check(mono())
		case <-sample:
			w.sample(mono())
		}
	}
}

// check is one look for a stall at time now.
func (w *watchdog) check(now int64) {
	h := &w.e.health
	gap := now - w.last
	w.last = now
	switch {
	case h.sleeping():
		w.armed = false
	case !w.armed || !h.asked.Load():
		// First look since the loop woke, or a task started since the last.
		h.asked.Store(true)
		w.armed, w.armedAt, w.reported = true, now, false
	case gap > w.maxGap:
		w.armedAt = now
	case !w.reported && time.Duration(now-w.armedAt) >= h.threshold:
		w.reported = true
		w.report(time.Duration(now - w.armedAt))
	}
}

// report hands a stall that has lasted d so far, with the stack of the
// goroutine holding the loop, to the stall handler. It counts the stall
// once the stack is taken, so Stats shows it only then.
func (w *watchdog) report(d time.Duration) {
	e := w.e
	stack := holderStack(allStacks(), w.loopGoid)
	e.health.stalls.Add(1)
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
	if w.sent != 0 {
		ran := w.probe.ran.Load()
		if ran == 0 {
			return // still queued: its lateness is the sample, once it runs
		}
		w.e.health.addDelay(ran-w.sent, w.sent)
	}
	w.probe.ran.Store(0)
	w.sent = now
	if w.e.SubmitRunnable(&w.probe, nil, 0) != nil {
		w.sent = 0 // closing
	}
}

// maxStacks bounds the buffer for the stacks of all goroutines.
const maxStacks = 64 << 20

// allStacks returns the stacks of all goroutines, as runtime.Stack formats
// them.
func allStacks() []byte {
	for n := 1 << 20; ; n *= 4 {
		buf := make([]byte, n)
		if k := runtime.Stack(buf, true); k < n || n >= maxStacks {
			return buf[:k]
		}
	}
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
