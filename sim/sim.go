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
//     Run, Start and Group.Start are not called on it (Close is, at the
//     end, on the test's goroutine).

import (
	"fmt"
	"math/rand"
	"net"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simdisk"
	"github.com/spindle-rt/spindle/internal/simnet"
	"github.com/spindle-rt/spindle/shard"
)

// Faults are the chances and delays the network draws from: delivery
// delays, how many pieces a write arrives in, the window a writer may
// fill, and the chances of short writes, refused and slow connects.
// World.Faults returns the world's, to be changed before or during a run.
type Faults = simnet.Faults

// World is a simulated program: hosts on a network, executors and shard
// groups on the hosts, all stepped by one driver in an order its seed
// decides, on fake time. Make one with New.
type World struct {
	seed    int64
	rng     *rand.Rand
	user    *rand.Rand
	net     *simnet.Net
	members []*member
	groups  []*shard.Group
	cand    []int
	steps   uint64
}

type member struct {
	name  string
	lp    *loop.Loop
	ex    *executor.Executor
	p     *simnet.Poller
	stall int64 // the loop is not stepped before this time
}

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

// Faults returns the network's faults, to be changed by the test.
func (w *World) Faults() *Faults { return &w.net.Faults }

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

// Host is a machine of the world: an IP address (10.0.x.y) and the
// executors on it. Listening on an unspecified or loopback address
// listens on the host's address.
type Host struct {
	w *World
	h *simnet.Host
}

// Disk is a host's simulated disk: its files, what of them is durable,
// its latencies and faults (Disk.Faults). Package fileio's operations on
// a loop of the host run on it, on the world's clock.
type Disk = simdisk.Disk

// DiskFaults are the latencies and faults a Disk draws from: how long an
// operation and a sync take, the chance that a sync fails with EIO, the
// capacity past which writes fail with ENOSPC, and how a crash treats
// writes not yet synced.
type DiskFaults = simdisk.Faults

// Host adds a machine, with an empty disk.
func (w *World) Host(name string) *Host {
	h := &Host{w: w, h: w.net.Host(name)}
	d := simdisk.New(w.net, w.rng)
	d.Record = w.net.Record
	h.h.Disk = d
	return h
}

// Disk returns the host's simulated disk.
func (h *Host) Disk() *Disk { return h.h.Disk.(*Disk) }

// IP returns the host's address.
func (h *Host) IP() net.IP { return h.h.IP }

// Addr returns the host's address with port, as Dial takes it.
func (h *Host) Addr(port int) string { return net.JoinHostPort(h.h.IP.String(), fmt.Sprint(port)) }

// clock is the world's clock, as the loops read it.
type clock struct{ n *simnet.Net }

func (c clock) Now() int64 { return c.n.Now() }

// adopt makes ex a loop of the world on h.
func (h *Host) adopt(ex *executor.Executor) {
	lp := (*loop.Loop)(ex)
	p := h.h.Poller()
	lp.SetClock(clock{h.w.net}, p)
	h.w.members = append(h.w.members, &member{name: ex.Name(), lp: lp, ex: ex, p: p})
}

// Executor returns an executor on h that the world steps. Do not Run or
// Start it.
func (h *Host) Executor(opts ...executor.Option) *executor.Executor {
	ex := executor.New(opts...)
	h.adopt(ex)
	return ex
}

// Group returns a shard group of n loops on h that the world steps. Do
// not Start it.
func (h *Host) Group(n int, opts ...executor.Option) *shard.Group {
	g := shard.New(n, opts...)
	for i := 0; i < g.Len(); i++ {
		h.adopt(g.Shard(i))
	}
	h.w.groups = append(h.w.groups, g)
	return g
}

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
	panic("sim: Stall of an executor the world did not make")
}

// Step runs the network's events that are due, then one batch of one
// ready loop (drawn from the seed); when no loop is ready it moves the
// clock to the next event or timer instead. It returns false once nothing
// can happen any more (the world is quiet).
func (w *World) Step() bool {
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
		w.steps++
		n.Record('s', uint64(i), uint64(now), nil)
		w.members[i].lp.Step()
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
		if m.stall > now && (has || m.p.HasReady() || m.lp.Ready()) {
			t, has = max(t, m.stall), true
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
		_ = g.Close()
	}
}
