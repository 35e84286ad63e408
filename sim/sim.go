package sim

// The world: hosts, their loops, the network and the driver.
//
// Invariants:
//   - one goroutine (the test's) runs everything: the driver steps one
//     loop at a time (loop.Loop.Step), and the network's events and the
//     loops' timers run on the world's clock, which moves only when no
//     loop has work;
//   - every choice the program does not make itself is drawn from the
//     world's one *rand.Rand, in an order that depends only on the seed
//     and on what ran before: which ready loop runs next, and everything
//     the network decides (internal/simnet);
//   - a loop made by the world is never run by a goroutine of its own:
//     Run, Start and Group.Start are not called on it (Close is, at a
//     crash of its host or at the end, on the test's goroutine);
//   - members and groups hold the loops of the hosts that are up, in the
//     order they were made; a crash takes its host's out (keeping the
//     others' order) and closes them, outside any step: a crash or
//     restart asked for during a step (from a task) waits in deferred
//     until that step returns;
//   - pulse is odd exactly while a step of a loop (or a crash's unwinding)
//     runs, and grows by two per step: the watchdog (check.go) reads it
//     from its own goroutine, nothing else does;
//   - still counts the loop steps run since the clock last moved; past
//     the livelock bound the run fails.

import (
	"fmt"
	"math/rand"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simnet"
	"github.com/spindle-rt/spindle/shard"
)

// World is a simulated program: hosts on a network, executors and shard
// groups on the hosts, all stepped by one driver in an order its seed
// decides, on fake time. Make one with New.
type World struct {
	seed     int64
	rng      *rand.Rand
	user     *rand.Rand
	net      *simnet.Net
	members  []*member
	groups   []group
	cand     []int
	steps    uint64
	at       []atStep // by step, then in the order they were asked for
	atSeq    uint64
	stepping bool     // a loop's step runs
	deferred []func() // crashes and restarts asked for during a step

	still    uint64 // loop steps since the clock last moved
	stillAt  int64  // the clock's reading then
	livelock uint64 // bound on still; 0: DefaultLivelock
	t        testing.TB
	pulse    atomic.Uint64
}

type member struct {
	host  *Host
	name  string
	lp    *loop.Loop
	ex    *executor.Executor
	p     *simnet.Poller
	stall int64 // the loop is not stepped before this time
}

type group struct {
	host *Host
	g    *shard.Group
}

type atStep struct {
	n, seq uint64
	fn     func()
}

// DefaultLivelock is how many loop steps may run while the world's clock
// does not move before the run fails as a livelock (World.SetLivelock).
const DefaultLivelock = 1_000_000

// New returns an empty world whose choices are drawn from seed.
func New(seed int64) *World {
	rng := rand.New(rand.NewSource(seed))
	w := &World{seed: seed, rng: rng, user: rand.New(rand.NewSource(seed ^ 0x5eed5eed)), net: simnet.New(rng)}
	return w
}

// Seed returns the world's seed.
func (w *World) Seed() int64 { return w.seed }

// Rand returns a source of the test's own choices (a workload): drawn
// from the seed too, apart from the world's.
func (w *World) Rand() *rand.Rand { return w.user }

// Faults returns the network's faults, to be changed by the test before
// or during a run: a change holds from the next thing the network draws.
func (w *World) Faults() *Faults { return (*Faults)(&w.net.Faults) }

// Hits returns the counts of the faults the network has drawn so far that
// only the program sees: the accepts that failed.
func (w *World) Hits() Hits { return Hits(w.net.Hits()) }

// Now returns the time elapsed on the world's clock.
func (w *World) Now() time.Duration { return time.Duration(w.net.Now()) }

// Steps returns the number of loop steps run so far.
func (w *World) Steps() uint64 { return w.steps }

// Trace returns the digest of the run so far: every byte delivered, every
// event of the network and every step of the driver. Two runs of one
// seed have the same trace.
func (w *World) Trace() uint64 { return w.net.Trace() }

// TraceHex is Trace in hexadecimal, as the replay line prints it.
func (w *World) TraceHex() string { return fmt.Sprintf("%016x", w.net.Trace()) }

// Record folds an observation of the test (a reply it checked) into the
// trace.
func (w *World) Record(kind byte, a, b uint64, data []byte) { w.net.Record(kind, a, b, data) }

// Host is a machine of the world: an IP address (10.0.x.y), a disk, and
// the executors on it. Listening on an unspecified or loopback address
// listens on the host's address. A host can crash (World.Crash) and
// restart (World.Restart), running its program (Start) again.
type Host struct {
	w       *World
	h       *simnet.Host
	disk    *Disk
	program func(h *Host)
	down    bool
}

// Host adds a machine, up, with an empty disk.
func (w *World) Host(name string) *Host {
	h := &Host{w: w, h: w.net.Host(name), disk: newDisk(w)}
	h.h.Disk = h.disk.d
	return h
}

// Disk returns the host's simulated disk, the same across its crashes.
func (h *Host) Disk() *Disk { return h.disk }

// IP returns the host's address.
func (h *Host) IP() net.IP { return h.h.IP }

// Addr returns the host's address with port, as Dial takes it.
func (h *Host) Addr(port int) string { return net.JoinHostPort(h.h.IP.String(), fmt.Sprint(port)) }

// Name returns the name the host was made with.
func (h *Host) Name() string { return h.h.Name }

// Down reports whether h is crashed and not restarted (from the moment
// World.Crash is called until World.Restart is).
func (h *Host) Down() bool { return h.down }

// Start runs program on h now, and again at every Restart(h): program
// makes the host's executors and groups (h.Executor, h.Group) and starts
// its services on them, as a machine's boot starts its processes. What
// program keeps must be made by it, since a crash drops everything the
// host's loops held; what it reads back is what the host's disk kept.
// It panics if h already has a program or is down.
func (h *Host) Start(program func(h *Host)) {
	switch {
	case program == nil:
		panic("sim: Start with a nil program")
	case h.program != nil:
		panic(fmt.Sprintf("sim: Start of host %q, which has a program", h.Name()))
	case h.down:
		panic(fmt.Sprintf("sim: Start of host %q, which is down", h.Name()))
	}
	h.program = program
	program(h)
}

// clock is the world's clock, as the loops read it.
type clock struct{ n *simnet.Net }

func (c clock) Now() int64 { return c.n.Now() }

// adopt makes ex a loop of the world on h.
func (h *Host) adopt(ex *executor.Executor) {
	lp := (*loop.Loop)(ex)
	p := h.h.Poller()
	lp.SetClock(clock{h.w.net}, p)
	h.w.members = append(h.w.members, &member{host: h, name: ex.Name(), lp: lp, ex: ex, p: p})
}

func (h *Host) mustUp(op string) {
	if h.down {
		panic(fmt.Sprintf("sim: %s on host %q, which is down", op, h.Name()))
	}
}

// Executor returns an executor on h that the world steps. Do not Run or
// Start it. It panics if h is down.
func (h *Host) Executor(opts ...executor.Option) *executor.Executor {
	h.mustUp("Executor")
	ex := executor.New(opts...)
	h.adopt(ex)
	return ex
}

// Group returns a shard group of n loops on h that the world steps. Do
// not Start it. It panics if h is down.
func (h *Host) Group(n int, opts ...executor.Option) *shard.Group {
	h.mustUp("Group")
	g := shard.New(n, opts...)
	for i := 0; i < g.Len(); i++ {
		h.adopt(g.Shard(i))
	}
	h.w.groups = append(h.w.groups, group{h, g})
	return g
}

// Crash crashes h at once: every loop of h stops (no Close, no linger, no
// FIN: its executors are never stepped again); every connection with an
// end on h is reset or goes silent, as the seed decides per connection
// (Faults.CrashSilent; silent: the peer's bytes vanish and it hears
// nothing, as from a powered-off machine, until h is up again and the
// next bytes that reach it reset the peer); its listeners vanish (while
// h is down a connect to it is refused, or goes unanswered and retries
// until it times out, as the seed decides per crash with
// Faults.DownUnanswered); its memory is dropped: the tasks of its
// executors are unwound (ended with executor.ErrClosed, as by Close)
// with no effect escaping, since its sockets and its file handles belong
// to the dead incarnation and every operation on them fails; and its
// disk crashes (Disk.Crash with the world's rand: writes not synced are
// kept, lost or torn). The crash is in the trace.
//
// Called from a task on one of the world's loops, the crash takes effect
// when that loop's step returns (Down reports true at once). It panics if
// h is down.
func (w *World) Crash(h *Host) {
	w.mine(h, "Crash")
	if h.down {
		panic(fmt.Sprintf("sim: Crash of host %q, which is down", h.Name()))
	}
	h.down = true
	if w.stepping {
		w.deferred = append(w.deferred, func() { w.crash(h) })
		return
	}
	w.crash(h)
}

func (w *World) crash(h *Host) {
	w.net.CrashHost(h.h)
	h.disk.d.Crash(w.rng)
	var dead []*member
	w.members = slices.DeleteFunc(w.members, func(m *member) bool {
		if m.host == h {
			dead = append(dead, m)
			return true
		}
		return false
	})
	var groups []*shard.Group
	w.groups = slices.DeleteFunc(w.groups, func(g group) bool {
		if g.host == h {
			groups = append(groups, g.g)
			return true
		}
		return false
	})
	w.pulse.Add(1) // the unwinding runs tasks: the watchdog watches it as a step
	for _, m := range dead {
		_ = m.ex.Close() // one at a time, before the groups close them together
	}
	for _, g := range groups {
		_ = g.Close()
	}
	w.pulse.Add(1)
}

// Restart runs h's program (Host.Start) again on the same address and
// disk, on new executors; a host without a program comes up empty, for
// the test to make its executors. The restart is in the trace. Called
// from a task, it takes effect when that loop's step returns. It panics
// if h is up.
func (w *World) Restart(h *Host) {
	w.mine(h, "Restart")
	if !h.down {
		panic(fmt.Sprintf("sim: Restart of host %q, which is up", h.Name()))
	}
	h.down = false
	if w.stepping {
		w.deferred = append(w.deferred, func() { w.restart(h) })
		return
	}
	w.restart(h)
}

func (w *World) restart(h *Host) {
	w.net.RestartHost(h.h)
	if h.program != nil {
		h.program(h)
	}
}

func (w *World) mine(h *Host, op string) {
	if h == nil || h.w != w {
		panic("sim: " + op + " of a host of another world")
	}
}

// AtStep runs fn just before the world's step n (when Steps() == n and
// the world is asked to step), on the test's goroutine, outside any loop:
// a crash at a step the seed picks, with n drawn from w.Rand(). Functions
// for one step run in the order they were given; one whose step has
// passed runs at the next step. A world that falls quiet before step n
// never runs it.
func (w *World) AtStep(n uint64, fn func()) {
	if fn == nil {
		panic("sim: AtStep with a nil func")
	}
	w.atSeq++
	a := atStep{n: n, seq: w.atSeq, fn: fn}
	i, _ := slices.BinarySearchFunc(w.at, a, func(x, y atStep) int {
		if x.n != y.n {
			if x.n < y.n {
				return -1
			}
			return 1
		}
		if x.seq < y.seq {
			return -1
		}
		return 1
	})
	w.at = slices.Insert(w.at, i, a)
}

// SetLivelock sets how many loop steps may run while the world's clock
// does not move (DefaultLivelock when n is 0): past it the run fails as a
// livelock, through the test under Check (with the seed's replay
// command), by a panic otherwise. Loops that keep each other busy without
// ever waiting on time or on the network never let the clock move.
func (w *World) SetLivelock(n uint64) { w.livelock = n }

// Partition cuts a from b: bytes and connects between them wait until
// Heal.
func (w *World) Partition(a, b *Host) { w.net.Partition(a.h, b.h) }

// Heal joins a and b again.
func (w *World) Heal(a, b *Host) { w.net.Heal(a.h, b.h) }

// Reset resets every open connection with an end on h: both ends fail
// with ECONNRESET.
func (w *World) Reset(h *Host) { w.net.ResetHost(h.h) }

// Stall keeps ex's loop from running for d of the world's time, as a
// task that held the loop would: its sockets' events and its timers wait.
func (w *World) Stall(ex *executor.Executor, d time.Duration) {
	for _, m := range w.members {
		if m.ex == ex {
			m.stall = w.net.Now() + int64(d)
			w.net.Record('T', uint64(m.stall), 0, []byte(m.name))
			return
		}
	}
	panic("sim: Stall of an executor the world does not step (made elsewhere, or its host crashed)")
}

// Step runs the network's events that are due, then one batch of one
// ready loop (drawn from the seed); when no loop is ready it moves the
// clock to the next event or timer instead. It returns false once nothing
// can happen any more (the world is quiet).
func (w *World) Step() bool {
	for len(w.at) > 0 && w.at[0].n <= w.steps {
		a := w.at[0]
		w.at = slices.Delete(w.at, 0, 1)
		a.fn()
	}
	n := w.net
	n.Advance(n.Now())
	now := n.Now()
	w.cand = w.cand[:0]
	for i, m := range w.members {
		if m.stall > now || m.lp.Closed() {
			continue
		}
		if m.p.HasReady() || m.lp.Ready() {
			w.cand = append(w.cand, i)
		}
	}
	if len(w.cand) > 0 {
		i := w.cand[0]
		if len(w.cand) > 1 {
			i = w.cand[w.rng.Intn(len(w.cand))]
		}
		if now != w.stillAt {
			w.stillAt, w.still = now, 0
		}
		if w.still++; w.still > w.livelockBound() {
			w.failLivelock()
		}
		w.steps++
		n.Record('s', uint64(i), uint64(now), nil)
		w.pulse.Add(1)
		w.stepping = true
		w.members[i].lp.Step()
		w.stepping = false
		w.pulse.Add(1)
		for len(w.deferred) > 0 {
			fn := w.deferred[0]
			w.deferred = slices.Delete(w.deferred, 0, 1)
			fn()
		}
		return true
	}
	next, ok := n.NextEvent()
	for _, m := range w.members {
		if m.lp.Closed() {
			continue
		}
		t, has := int64(0), false
		if d, tok := m.lp.NextTimer(); tok {
			t, has = now+int64(d), true
		}
		switch {
		case m.stall > now && (m.p.HasReady() || m.lp.Ready()):
			t, has = m.stall, true // its work waits for the stall's end only
		case m.stall > now && has:
			t = max(t, m.stall)
		}
		if has && (!ok || t < next) {
			next, ok = t, true
		}
	}
	if !ok {
		return false
	}
	n.Advance(next)
	return true
}

func (w *World) livelockBound() uint64 {
	if w.livelock == 0 {
		return DefaultLivelock
	}
	return w.livelock
}

// failLivelock fails the run: too many steps without the clock moving.
func (w *World) failLivelock() {
	msg := fmt.Sprintf("sim: livelock: %d loop steps at %v of the world's clock without it moving (step %d)", w.still-1, time.Duration(w.stillAt), w.steps)
	if w.t != nil {
		w.t.Helper()
		w.t.Fatal(msg)
	}
	panic(msg)
}

// RunUntil steps the world until done reports true (it is asked after
// every step), the world is quiet, or limit of the world's time has
// passed; it reports whether done came true.
func (w *World) RunUntil(done func() bool, limit time.Duration) bool {
	end := w.net.Now() + int64(limit)
	for !done() {
		if w.net.Now() > end || !w.Step() {
			return done()
		}
	}
	return true
}

// RunFor steps the world for d of its time (or until it is quiet).
func (w *World) RunFor(d time.Duration) {
	end := w.net.Now() + int64(d)
	for w.net.Now() <= end {
		if !w.Step() {
			return
		}
	}
}

// Close closes every group and executor of the world, on the calling
// goroutine.
func (w *World) Close() {
	for _, m := range w.members {
		_ = m.ex.Close() // one at a time, before the groups close them together
	}
	for _, g := range w.groups {
		_ = g.g.Close()
	}
}
