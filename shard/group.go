package shard

// The group and its shards.
//
// Invariants:
//   - shards never changes after New; shard i runs on executor i, named
//     <name>-<i>;
//   - a shard's out, dirty, sent, recv and lastFree are owned by its loop
//     (read by the group's sweep only after the loop has finished);
//   - out[j] is the lane to shard j, made by the loop on its first call to
//     j; a lane is in dirty exactly while its dirty flag is set, that is
//     while it holds messages pushed since its last publish (or since the
//     last flush, whichever came later);
//   - sent counts the messages the shard pushed on its lanes and recv the
//     messages its drains delivered: requests and replies alike, so once
//     every call has been answered the sums over the shards are equal. The
//     group's Shutdown compares them (close.go).

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/gid"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Group runs one executor per shard and carries calls between them. Make
// one with New, start it with Start, and stop it with Shutdown or Close.
// Its methods may be called from any goroutine. The zero value is not
// usable: its methods panic with a message that says so.
type Group struct {
	shards  []*shard
	started atomic.Bool
	state   atomic.Int32 // stateOpen -> stateDraining -> stateClosed

	stopOnce sync.Once
	abortCtx context.Context // cancelled by Close, or by a Shutdown whose ctx ended
	abort    context.CancelFunc
	done     chan struct{} // closed once every shard has closed and every call was released
}

const (
	stateOpen int32 = iota
	stateDraining
	stateClosed
)

// shard is one executor of a group and the ends of its lanes.
type shard struct {
	g     *Group
	idx   int
	ex    *loop.Loop
	exe   *executor.Executor
	out   []*lane
	dirty []*lane
	sent  uint64
	recv  uint64

	lastFree any // the free list of calls used last (call.go)
}

// New returns a group of n shards, each an executor made with opts and
// named "<name>-<i>" after the name opts give (WithName; "spindle" by
// default), so logs and panics say which shard they come from. n <= 0
// means runtime.GOMAXPROCS(0). The shards do not run until Start.
func New(n int, opts ...executor.Option) *Group {
	return newGroup(n, opts)
}

func newGroup(n int, opts []executor.Option) *Group {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	// The options' name, read from an executor that never runs.
	name := executor.New(opts...).Name()
	g := &Group{shards: make([]*shard, n), done: make(chan struct{})}
	g.abortCtx, g.abort = context.WithCancel(context.Background())
	for i := range g.shards {
		exe := executor.New(append(slices.Clip(opts), executor.WithName(name+"-"+strconv.Itoa(i)))...)
		s := &shard{g: g, idx: i, ex: (*loop.Loop)(exe), exe: exe, out: make([]*lane, n)}
		s.ex.AddFlusher(s)
		g.shards[i] = s
	}
	return g
}

// Start runs every shard's loop in a goroutine of its own. It panics if
// the group was already started or has begun to close.
func (g *Group) Start() {
	g.mustMade("Start")
	if g.state.Load() != stateOpen {
		panic("shard: Start after Shutdown or Close")
	}
	if !g.started.CompareAndSwap(false, true) {
		panic("shard: Start called twice")
	}
	for _, s := range g.shards {
		s.exe.Start()
	}
}

// Len returns the number of shards.
func (g *Group) Len() int {
	g.mustMade("Len")
	return len(g.shards)
}

// mustMade panics on a Group that New did not make: its zero value has no
// shards to run anything on.
func (g *Group) mustMade(op string) {
	if g == nil || g.done == nil {
		panic("shard: " + op + " on a Group not made by New")
	}
}

// Shard returns shard i's executor. It panics unless 0 <= i < Len().
func (g *Group) Shard(i int) *executor.Executor { return g.shard("Shard(%d)", i).exe }

// shard returns shard i, or panics with what (a format for i) if there is
// none.
func (g *Group) shard(what string, i int) *shard {
	if g == nil || g.done == nil {
		g.mustMade(fmt.Sprintf(what, i))
	}
	if i < 0 || i >= len(g.shards) {
		panic(fmt.Sprintf("shard: "+what+" on a group of %d shards", i, len(g.shards)))
	}
	return g.shards[i]
}

// Of returns the shard that owns key. It depends on key and Len() alone,
// so it is stable for the group's life (and across processes with the
// same number of shards), and keys spread evenly: sequential keys as well
// as random ones. Hash other keys (a string, say, with hash/maphash) to a
// uint64 first.
func (g *Group) Of(key uint64) int {
	g.mustMade("Of")
	hi, _ := bits.Mul64(mix(key), uint64(len(g.shards)))
	return int(hi)
}

// mix is SplitMix64's finalizer: every bit of x affects every bit of the
// result, so the high bits that Of keeps depend on all of key.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Current returns the index of the shard whose loop the caller holds (a
// callback or task body of that shard), and false elsewhere.
func (g *Group) Current() (shard int, ok bool) {
	g.mustMade("Current")
	me := gid.Current()
	for i, s := range g.shards {
		if me == s.ex.LoopG.Load() || me == s.ex.CoroG.Load() {
			return i, true
		}
	}
	return -1, false
}

// send pushes m on the lane to shard to, publishing at once when a batch
// is full or the loop has closed (it will reach no batch boundary). Loop
// only.
func (s *shard) send(to int, m message) {
	l := s.out[to]
	if l == nil {
		l = &lane{src: s, dst: s.g.shards[to], q: newRingQueue()}
		s.out[to] = l
	}
	s.sent++
	if l.q.push(m) || s.ex.Closed() {
		l.publish()
		return
	}
	if !l.dirty {
		l.dirty = true
		s.dirty = append(s.dirty, l)
	}
}

// Flush publishes what the shard's lanes gathered during the batch that
// just ran. The loop calls it at every batch boundary.
func (s *shard) Flush() {
	for i, l := range s.dirty {
		l.dirty = false
		l.publish()
		s.dirty[i] = nil
	}
	s.dirty = s.dirty[:0]
}
