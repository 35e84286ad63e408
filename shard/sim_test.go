package shard_test

// Shard groups under the simulation (package sim): random Call, CallWith,
// Invoke, InvokeWith, Send, Update, Updater.Update, InvokeAll and
// MapReduce between the shards of a group and from an executor outside
// it, tasks that await calls, stalls of shards, and the group closed
// mid-traffic, checked against what package shard promises:
//
//   - a call's function, a Send's and an update's run exactly once, on the
//     callee's loop, with the callee's instance of the Sharded service;
//   - everything one caller (a shard, or the driver's goroutine, which
//     makes every call from outside) sends one callee arrives in the order
//     it was made, whatever its kind, with none lost while the group is
//     open;
//   - a call completes exactly once, on the caller's loop (on the callee's
//     for a call from outside), with its own reply: the value, the error
//     as it was returned, a *future.PanicError for a panic; once the group
//     has closed, with its result if its function ran and ErrClosed if it
//     did not;
//   - InvokeAll and MapReduce see every shard's instance once, in shard
//     order.
//
// Every observation is recorded in the world's trace.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/simtest"
	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/sim"
)

func TestSimShards(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runShardSim(t, w) })
}

// One seed, one trace: the same seed run twice gives the same trace.
func TestSimShardsReplay(t *testing.T) {
	simtest.Replays(t, runShardSim)
}

// inst is a shard's instance of the service.
type inst struct {
	owner int
	last  []int // by caller: the sequence number of the last message that arrived
	got   int
}

// msg is what a message carries: who sent it, in which order.
type msg struct{ from, to, seq int }

// errReply is an error a call's function returns, which must cross as it
// is.
type errReply struct{ m msg }

func (e *errReply) Error() string { return fmt.Sprintf("reply error %v", e.m) }

type scall struct {
	m      msg
	kind   string
	ran    int
	fails  int // 0: value, 1: error, 2: panic
	done   int
	v      int
	err    error
	onLoop bool
}

type shardSim struct {
	t       *testing.T
	w       *sim.World
	g       *shard.Group
	out     *executor.Executor // outside the group
	svc     *shard.Sharded[inst]
	upd     []*shard.Updater[inst, msg]
	seq     [][]int // [caller][callee]: messages sent so far; caller len(shards) is the outside
	arrived [][]int // [caller][callee]: the last message that arrived
	calls   []*scall
	oneWays int
	budget  int

	mu      sync.Mutex // the completions that the group's Close runs on its goroutines
	closing bool
	tasks   int
	ended   int
}

func runShardSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	h := w.Host("h")
	n := 2 + rng.Intn(3)
	s := &shardSim{t: t, w: w, budget: 400 + rng.Intn(400)}
	s.g = h.Group(n, executor.WithName("s"), executor.WithPanicHandler(func(v any) {
		if _, ok := v.(string); !ok {
			t.Errorf("a shard's panic handler got %v", v)
		}
	}))
	s.out = h.Executor(executor.WithName("out"))
	s.seq, s.arrived = make([][]int, n+1), make([][]int, n+1)
	for i := range s.seq {
		s.seq[i], s.arrived[i] = make([]int, n), make([]int, n)
	}
	s.upd = make([]*shard.Updater[inst, msg], n)
	s.svc = shard.NewSharded(s.g, func(i int) *inst {
		if !s.g.Shard(i).OnLoop() {
			t.Errorf("the instance of shard %d made off its loop", i)
		}
		return &inst{owner: i, last: make([]int, n+1)}
	})
	for i := range n {
		if err := s.g.Shard(i).Submit(func() { s.ops(i, 4) }); err != nil {
			t.Fatal(err)
		}
	}
	closeAt := time.Duration(-1)
	if rng.Intn(3) == 0 {
		closeAt = time.Duration(rng.Intn(20)) * time.Millisecond
	}
	oneByOne := rng.Intn(2) == 0
	for s.budget > 0 && !s.closing {
		at := w.Now() + time.Duration(rng.Intn(5))*time.Millisecond
		w.RunUntil(func() bool { return w.Now() >= at }, time.Hour)
		if closeAt >= 0 && w.Now() >= closeAt {
			s.closeGroup(oneByOne)
			break
		}
		// Work from outside the group, and more for a shard.
		if err := s.out.Submit(func() { s.ops(n, 3) }); err != nil {
			t.Fatal(err)
		}
		i := rng.Intn(n)
		if err := s.g.Shard(i).Submit(func() { s.ops(i, 3) }); err != nil {
			t.Fatal(err)
		}
	}
	w.RunUntil(func() bool { return false }, time.Hour)
	if !s.closing {
		// Quiet and open: everything sent has arrived, every call has
		// completed.
		for ci := range s.seq {
			for to, sent := range s.seq[ci] {
				if got := s.arrived[ci][to]; got != sent {
					t.Errorf("quiet: %d of %d messages from %s to shard %d arrived", got, sent, s.name(ci), to)
				}
			}
		}
		for _, c := range s.calls {
			if c.done != 1 {
				t.Errorf("quiet: %s %d from %s to shard %d completed %d times", c.kind, c.m.seq, s.name(c.m.from), c.m.to, c.done)
			}
		}
		s.closeGroup(oneByOne)
	}
	s.final()
}

// closeGroup closes the group from the driver: its shards one at a time
// and then the group, or the group at once.
func (s *shardSim) closeGroup(oneByOne bool) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.w.Record('C', simtest.Bit(oneByOne), uint64(s.w.Now()), nil)
	if oneByOne {
		for i := range s.g.Len() {
			_ = s.g.Shard(i).Close()
		}
	}
	_ = s.g.Close()
}

// name names caller ci.
func (s *shardSim) name(ci int) string {
	if ci == s.g.Len() {
		return "out"
	}
	return fmt.Sprint("shard ", ci)
}

// exOf is caller ci's executor.
func (s *shardSim) exOf(ci int) *executor.Executor {
	if ci == s.g.Len() {
		return s.out
	}
	return s.g.Shard(ci)
}

// next returns the next message from ci to to.
func (s *shardSim) next(ci, to int) msg {
	s.seq[ci][to]++
	return msg{from: ci, to: to, seq: s.seq[ci][to]}
}

// arrive checks a message on its callee, with the instance it reached.
func (s *shardSim) arrive(m msg, kind string, in *inst) {
	what := fmt.Sprintf("%s %d from %s to shard %d", kind, m.seq, s.name(m.from), m.to)
	if !s.g.Shard(m.to).OnLoop() {
		s.t.Errorf("%s ran off the callee's loop", what)
	}
	if cur, ok := s.g.Current(); !ok || cur != m.to {
		s.t.Errorf("%s ran where Current is %d, %v", what, cur, ok)
	}
	if in.owner != m.to {
		s.t.Errorf("%s got the instance of shard %d", what, in.owner)
	}
	if in != s.svc.Local() {
		s.t.Errorf("%s got an instance that is not the callee's Local", what)
	}
	if last := in.last[m.from]; m.seq != last+1 {
		s.t.Errorf("%s arrived after message %d", what, last)
	}
	in.last[m.from] = m.seq
	s.arrived[m.from][m.to] = m.seq
	in.got++
	s.w.Record('m', uint64(m.from<<16|m.to), uint64(m.seq), []byte(kind))
}

// ops runs up to k random operations from caller ci (a shard, or the
// outside executor when ci is the group's Len), on its loop.
func (s *shardSim) ops(ci, k int) {
	rng := s.w.Rand()
	n := s.g.Len()
	outside := ci == n
	if !s.exOf(ci).OnLoop() {
		s.t.Errorf("ops of %s off its loop", s.name(ci))
		return
	}
	for range 1 + rng.Intn(k) {
		if s.budget <= 0 || s.closing {
			return
		}
		s.budget--
		to := rng.Intn(n)
		switch c := rng.Intn(22); {
		case c < 10:
			s.call(ci, to, c%5)
		case c < 12:
			m := s.next(ci, to)
			s.oneWays++
			if err := shard.Send(s.g, to, func() { s.arrive(m, "send", s.svc.Local()) }); err != nil {
				s.t.Errorf("Send %v: %v", m, err)
			}
		case c < 14:
			m := s.next(ci, to)
			s.oneWays++
			if err := shard.Update(s.svc, to, m, func(in *inst, m msg) { s.arrive(m, "update", in) }); err != nil {
				s.t.Errorf("Update %v: %v", m, err)
			}
		case c < 16 && !outside:
			if s.upd[ci] == nil {
				s.upd[ci] = shard.NewUpdater(s.svc, func(in *inst, m msg) { s.arrive(m, "updater", in) })
			}
			for range 1 + rng.Intn(70) {
				m := s.next(ci, to)
				s.oneWays++
				if err := s.upd[ci].Update(to, m); err != nil {
					s.t.Errorf("Updater.Update %v: %v", m, err)
				}
			}
		case c < 17 && rng.Intn(2) == 0:
			s.all(ci)
		case c < 17:
			// A burst past what one drain of a lane takes (and past a
			// ring segment): sends and calls, in order.
			for range 100 + rng.Intn(300) {
				if rng.Intn(4) == 0 {
					s.call(ci, to, rng.Intn(5))
					continue
				}
				m := s.next(ci, to)
				s.oneWays++
				if err := shard.Send(s.g, to, func() { s.arrive(m, "send", s.svc.Local()) }); err != nil {
					s.t.Errorf("Send %v: %v", m, err)
				}
			}
		case c < 19:
			s.task(ci, to)
		case c < 20:
			s.w.Stall(s.g.Shard(to), time.Duration(1+rng.Intn(4))*time.Millisecond)
		default:
			s.exOf(ci).AfterFunc(time.Duration(rng.Intn(3))*time.Millisecond, func() { s.ops(ci, 3) })
		}
	}
}

// call makes a call of one of the five kinds from ci to shard to and
// checks its completion.
func (s *shardSim) call(ci, to, kind int) *future.Future[int] {
	c := &scall{m: s.next(ci, to), fails: s.w.Rand().Intn(12)}
	s.calls = append(s.calls, c)
	run := func(in *inst) (int, error) {
		c.ran++
		s.arrive(c.m, c.kind, in)
		switch c.fails {
		case 0:
			return 0, &errReply{c.m}
		case 1:
			panic(fmt.Sprint("call ", c.m))
		}
		return c.m.from<<24 | c.m.to<<16 | c.m.seq, nil
	}
	var f *future.Future[int]
	switch kind {
	case 0:
		c.kind = "Call"
		f = shard.Call(s.g, to, func() (int, error) { return run(s.svc.Local()) })
	case 1:
		c.kind = "CallWith"
		f = shard.CallWith(s.g, to, c, func(c *scall) (int, error) { return run(s.svc.Local()) })
	case 2, 3:
		c.kind = "Invoke"
		f = shard.Invoke(s.svc, to, run)
	default:
		c.kind = "InvokeWith"
		f = shard.InvokeWith(s.svc, to, c, func(in *inst, c *scall) (int, error) { return run(in) })
	}
	// The future belongs to the caller's shard, or to the callee for a
	// call from outside.
	owner := s.g.Shard(to)
	if ci < s.g.Len() {
		owner = s.g.Shard(ci)
	}
	f.OnComplete(func(v int, err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.done++
		c.v, c.err = v, err
		c.onLoop = owner.OnLoop() || owner.Closed()
		if !s.closing {
			s.w.Record('r', uint64(c.m.from<<16|c.m.to), uint64(c.m.seq), []byte(fmt.Sprint(v, err)))
		}
	})
	return f
}

// all runs InvokeAll or MapReduce from ci.
func (s *shardSim) all(ci int) {
	n := s.g.Len()
	mapper := func(in *inst) (int, error) {
		if !s.g.Shard(in.owner).OnLoop() {
			s.t.Errorf("InvokeAll's function ran with the instance of shard %d off its loop", in.owner)
		}
		return in.owner, nil
	}
	if s.w.Rand().Intn(2) == 0 {
		shard.InvokeAll(s.svc, mapper).OnComplete(func(rs []int, err error) {
			if err != nil {
				s.checkClosed("InvokeAll", err)
				return
			}
			for i, r := range rs {
				if r != i || len(rs) != n {
					s.t.Errorf("InvokeAll from %s: %v", s.name(ci), rs)
					break
				}
			}
		})
		return
	}
	shard.MapReduce(s.svc, mapper, "", func(acc string, r int) string { return acc + fmt.Sprint(r) }).
		OnComplete(func(acc string, err error) {
			want := ""
			for i := range n {
				want += fmt.Sprint(i)
			}
			switch {
			case err != nil:
				s.checkClosed("MapReduce", err)
			case acc != want:
				s.t.Errorf("MapReduce from %s folded %q, want %q", s.name(ci), acc, want)
			}
		})
}

// checkClosed checks that err is ErrClosed and the group is closing.
func (s *shardSim) checkClosed(what string, err error) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if !closing || !errors.Is(err, executor.ErrClosed) {
		s.t.Errorf("%s failed: %v (group closing %v)", what, err, closing)
	}
}

// task spawns a task on ci that awaits calls to shard to, in a row, and
// checks it resumes on its loop with each reply.
func (s *shardSim) task(ci, to int) {
	ex := s.exOf(ci)
	steps := 1 + s.w.Rand().Intn(4)
	s.tasks++
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		defer func() {
			s.mu.Lock()
			s.ended++
			s.mu.Unlock()
		}()
		for range steps {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return struct{}{}, nil
			}
			f := s.call(ci, to, s.w.Rand().Intn(5))
			c := s.calls[len(s.calls)-1]
			v, err := f.Await(ctx)
			s.mu.Lock()
			closing = s.closing
			s.mu.Unlock()
			if closing {
				return struct{}{}, nil
			}
			if !ex.OnLoop() {
				s.t.Errorf("a task of %s resumed off its loop", s.name(ci))
			}
			if err == nil && v != c.m.from<<24|c.m.to<<16|c.m.seq {
				s.t.Errorf("a task of %s awaited %s %v: %d", s.name(ci), c.kind, c.m, v)
			}
		}
		return struct{}{}, nil
	})
}

// final checks every call once the group has closed.
func (s *shardSim) final() {
	t := s.t
	for _, c := range s.calls {
		what := fmt.Sprintf("%s %d from %s to shard %d", c.kind, c.m.seq, s.name(c.m.from), c.m.to)
		var pe *future.PanicError
		var re *errReply
		switch {
		case c.done != 1:
			t.Errorf("%s completed %d times", what, c.done)
		case c.ran > 1:
			t.Errorf("%s ran %d times", what, c.ran)
		case !c.onLoop:
			t.Errorf("%s completed off the loop its future belongs to", what)
		case c.ran == 0 && !errors.Is(c.err, executor.ErrClosed):
			t.Errorf("%s did not run, yet completed with %d, %v", what, c.v, c.err)
		case c.ran == 0 && !s.closing:
			t.Errorf("%s did not run while the group was open", what)
		case c.ran == 1 && c.fails == 0 && (!errors.As(c.err, &re) || re.m != c.m):
			t.Errorf("%s returned its error, and completed with %v", what, c.err)
		case c.ran == 1 && c.fails == 1 && (!errors.As(c.err, &pe) || pe.Value != fmt.Sprint("call ", c.m)):
			t.Errorf("%s panicked, and completed with %v", what, c.err)
		case c.ran == 1 && c.fails > 1 && (c.err != nil || c.v != c.m.from<<24|c.m.to<<16|c.m.seq):
			t.Errorf("%s ran, and completed with %d, %v", what, c.v, c.err)
		}
		s.w.Record('R', uint64(c.m.from<<16|c.m.to), uint64(c.m.seq), []byte(fmt.Sprint(c.ran, c.done, c.v, c.err)))
	}
	if s.ended != s.tasks {
		t.Errorf("%d of %d tasks ended", s.ended, s.tasks)
	}
	s.w.Record('F', uint64(len(s.calls)), uint64(s.oneWays), nil)
}
