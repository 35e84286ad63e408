package channel_test

// Channels under the simulation (package sim): senders and receivers of
// every form (SendWait, Send futures, TrySend, RecvWait, Recv futures,
// TryRecv, All, Select) on rendezvous and buffered channels of two
// executors, with cancelled sends and receives and channels closed
// mid-run, checked against what package channel promises:
//
//   - an item is received at most once, exactly once if its send
//     succeeded, never if its send failed or was withdrawn (a Cancel that
//     returned true, a Select that took another case);
//   - the items one sender sends one channel reach each recvActor in the
//     order they were sent (the buffer and the waiting senders and
//     receivers are FIFO);
//   - a send to a closed channel fails with ErrClosed, and every pending
//     send and receive completes exactly once when the channel closes;
//   - a channel never buffers more than its capacity.
//
// Every observation is recorded in the world's trace.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/simtest"
	"github.com/spindle-rt/spindle/sim"
)

func TestSimChannels(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { runChanSim(t, w) })
}

// One seed, one trace: the same seed run twice gives the same trace.
func TestSimChannelsReplay(t *testing.T) {
	simtest.Replays(t, runChanSim)
}

type citem struct {
	id, ch, sender, k int
	accepted          bool // its send succeeded
	refused           bool // its send failed or was withdrawn
	withdrawn         bool // its send was withdrawn: it must never be received
	recvd             int
	completed         int // the send's outcomes seen (futures and waits)
}

// errNotSent is the outcome of a Select's send case when another case
// happened.
var errNotSent = errors.New("another case happened")

// recvActor is one receiving actor: the items it got from each channel, in
// the order its receives were made.
type recvActor struct {
	got [][]int // [ch][receive] item id, -1 for none
}

type chanSim struct {
	t         *testing.T
	w         *sim.World
	ex        *executor.Executor
	other     *executor.Executor // tasks that await the channels' futures from another loop
	chans     []*channel.Chan[int]
	closed    []bool
	items     []*citem
	next      [][]int // [sender][ch]: items sent so far
	shared    int     // the sender of Send futures and TrySend
	recvs     []*recvActor
	budget    int
	pending   int // futures and tasks not yet completed
	completed int
}

func runChanSim(t *testing.T, w *sim.World) {
	rng := w.Rand()
	h := w.Host("h")
	s := &chanSim{t: t, w: w, budget: 200 + rng.Intn(200)}
	fail := executor.WithPanicHandler(func(v any) { t.Errorf("panic: %v", v) })
	s.ex = h.Executor(executor.WithName("ch"), fail)
	s.other = h.Executor(executor.WithName("other"), fail)
	for range 1 + rng.Intn(3) {
		s.chans = append(s.chans, channel.New[int](s.ex, rng.Intn(4)))
		s.closed = append(s.closed, false)
	}
	s.shared = s.newSender()
	for range 3 {
		if err := s.ex.Submit(func() { s.ops(4) }); err != nil {
			t.Fatal(err)
		}
	}
	for s.budget > 0 {
		at := w.Now() + time.Duration(rng.Intn(5))*time.Millisecond
		w.RunUntil(func() bool { return w.Now() >= at }, time.Hour)
		if err := s.ex.Submit(func() { s.ops(3) }); err != nil {
			t.Fatal(err)
		}
	}
	w.RunUntil(func() bool { return false }, time.Hour)
	// Take what is buffered or offered, then close every channel: every
	// pending operation ends.
	drain := s.newReceiver()
	_ = s.ex.Submit(func() {
		for ci, c := range s.chans {
			for {
				v, ok := c.TryRecv()
				if !ok {
					break
				}
				s.got(drain, ci, v)
			}
			c.Close()
			s.closed[ci] = true
		}
	})
	w.RunUntil(func() bool { return false }, time.Hour)
	s.final()
}

func (s *chanSim) newReceiver() *recvActor {
	r := &recvActor{got: make([][]int, len(s.chans))}
	s.recvs = append(s.recvs, r)
	return r
}

// newSender returns a sender no one has used.
func (s *chanSim) newSender() int {
	s.next = append(s.next, make([]int, len(s.chans)))
	return len(s.next) - 1
}

// newItem makes the next item of sender from to channel ci.
func (s *chanSim) newItem(from, ci int) *citem {
	s.next[from][ci]++
	it := &citem{id: len(s.items), ch: ci, sender: from, k: s.next[from][ci]}
	s.items = append(s.items, it)
	return it
}

// sent records the outcome of item it's send.
func (s *chanSim) sent(it *citem, err error, how string) {
	it.completed++
	s.w.Record('s', uint64(it.id), simtest.Bit(err == nil), []byte(fmt.Sprint(how, err)))
	switch {
	case it.completed > 1:
		s.t.Errorf("item %d: its %s completed %d times", it.id, how, it.completed)
	case err == nil:
		it.accepted = true
	case errors.Is(err, channel.ErrClosed) && !s.closed[it.ch]:
		s.t.Errorf("item %d: %s failed with ErrClosed on an open channel", it.id, how)
	default:
		it.refused = true
	}
}

// got records that recvActor r got value v from channel ci (at slot i of
// its receives), returning the slot.
func (s *chanSim) got(r *recvActor, ci, v int) {
	r.got[ci] = append(r.got[ci], v)
	s.take(ci, v)
}

// take checks an item that reached a recvActor.
func (s *chanSim) take(ci, v int) {
	s.w.Record('r', uint64(ci), uint64(v), nil)
	if v < 0 || v >= len(s.items) {
		s.t.Errorf("channel %d: received %d, which no one sent", ci, v)
		return
	}
	it := s.items[v]
	it.recvd++
	if it.ch != ci {
		s.t.Errorf("item %d, sent on channel %d, received from channel %d", v, it.ch, ci)
	}
	if it.withdrawn {
		s.t.Errorf("item %d received though its send was withdrawn", v)
	}
}

func (s *chanSim) track() func() {
	s.pending++
	n := 0
	return func() {
		n++
		s.completed++
		if n > 1 {
			s.t.Errorf("an operation completed %d times", n)
		}
	}
}

// ops runs up to k random operations on the channels' loop.
func (s *chanSim) ops(k int) {
	rng := s.w.Rand()
	for range 1 + rng.Intn(k) {
		if s.budget <= 0 {
			return
		}
		s.budget--
		ci := rng.Intn(len(s.chans))
		c := s.chans[ci]
		if c.Len() > c.Cap() {
			s.t.Errorf("channel %d buffers %d items, past its capacity %d", ci, c.Len(), c.Cap())
		}
		if rng.Intn(4) == 0 {
			s.shared = s.newSender()
		}
		sender := s.shared
		switch op := rng.Intn(20); {
		case op < 4:
			s.sendTask(ci, rng.Intn(2) == 0)
		case op < 7:
			s.sendFutures(sender, ci)
		case op < 8:
			it := s.newItem(sender, ci)
			ok := c.TrySend(it.id)
			if ok && s.closed[ci] {
				s.t.Errorf("TrySend to closed channel %d took item %d", ci, it.id)
			}
			err := errNotSent
			if ok {
				err = nil
			}
			s.sent(it, err, "TrySend")
		case op < 11:
			s.recvTask(ci, rng.Intn(3))
		case op < 14:
			s.recvFutures(ci)
		case op < 15:
			r := s.newReceiver()
			if v, ok := c.TryRecv(); ok {
				s.got(r, ci, v)
			}
		case op < 16:
			s.selectTask()
		case op < 17 && rng.Intn(12) == 0:
			s.w.Record('C', uint64(ci), 0, nil)
			c.Close()
			s.closed[ci] = true
		default:
			s.ex.AfterFunc(time.Duration(rng.Intn(3))*time.Millisecond, func() { s.ops(3) })
		}
	}
}

// sendTask spawns a task that sends items one at a time, with SendWait
// or by awaiting Send's future from the other executor.
func (s *chanSim) sendTask(ci int, wait bool) {
	rng := s.w.Rand()
	c := s.chans[ci]
	n := 1 + rng.Intn(6)
	sender := s.newSender()
	done := s.track()
	on := s.ex
	if !wait {
		on = s.other
	}
	future.Spawn(on, func(ctx context.Context) (struct{}, error) {
		defer done()
		for range n {
			it := s.newItem(sender, ci)
			var err error
			how := "SendWait"
			if wait {
				err = c.SendWait(ctx, it.id)
			} else {
				how = "Send awaited"
				f := future.Call(s.ex, func() (*future.Future[struct{}], error) { return c.Send(it.id), nil })
				var sf *future.Future[struct{}]
				if sf, err = f.Await(ctx); err == nil {
					_, err = sf.Await(ctx)
				}
			}
			s.sent(it, err, how)
			if err != nil {
				return struct{}{}, nil
			}
			if rng.Intn(3) == 0 {
				if _, err := future.Sleep(on, time.Duration(rng.Intn(3))*time.Millisecond).Await(ctx); err != nil {
					return struct{}{}, nil
				}
			}
		}
		return struct{}{}, nil
	})
}

// sendFutures makes a few Send futures in a row from one sender, and
// withdraws one of them later, maybe.
func (s *chanSim) sendFutures(sender, ci int) {
	rng := s.w.Rand()
	c := s.chans[ci]
	var fs []*future.Future[struct{}]
	var its []*citem
	for range 1 + rng.Intn(4) {
		it := s.newItem(sender, ci)
		f := c.Send(it.id)
		if s.closed[ci] {
			if r, ok := f.Peek(); !ok || !errors.Is(r.Err, channel.ErrClosed) {
				s.t.Errorf("Send to closed channel %d: %v, %v; want ErrClosed at once", ci, r.Err, ok)
			}
		}
		done := s.track()
		f.OnComplete(func(_ struct{}, err error) {
			done()
			s.sent(it, err, "Send")
		})
		fs = append(fs, f)
		its = append(its, it)
	}
	if rng.Intn(3) == 0 {
		i := rng.Intn(len(fs))
		s.ex.AfterFunc(time.Duration(rng.Intn(3))*time.Millisecond, func() {
			if fs[i].Cancel() {
				its[i].withdrawn = true
				if its[i].recvd > 0 {
					s.t.Errorf("item %d: Cancel of its Send returned true after it was received", its[i].id)
				}
			}
		})
	}
}

// recvTask spawns a receiving task: RecvWait, or All, or awaiting Recv's
// futures from the other executor.
func (s *chanSim) recvTask(ci, form int) {
	rng := s.w.Rand()
	c := s.chans[ci]
	r := s.newReceiver()
	n := 1 + rng.Intn(6)
	done := s.track()
	on := s.ex
	if form == 2 {
		on = s.other
	}
	future.Spawn(on, func(ctx context.Context) (struct{}, error) {
		defer done()
		switch form {
		case 0:
			for range n {
				v, err := c.RecvWait(ctx)
				if err != nil {
					s.recvErr(ci, err)
					return struct{}{}, nil
				}
				s.got(r, ci, v)
			}
		case 1:
			i := 0
			for v := range c.All(ctx) {
				s.got(r, ci, v)
				if i++; i == n {
					break
				}
			}
		default:
			for range n {
				f, _ := future.Call(s.ex, func() (*future.Future[int], error) { return c.Recv(), nil }).Await(ctx)
				if f == nil {
					return struct{}{}, nil
				}
				v, err := f.Await(ctx)
				if err != nil {
					s.recvErr(ci, err)
					return struct{}{}, nil
				}
				s.got(r, ci, v)
			}
		}
		return struct{}{}, nil
	})
}

// recvErr checks the error of a receive.
func (s *chanSim) recvErr(ci int, err error) {
	if !errors.Is(err, channel.ErrClosed) || !s.closed[ci] {
		s.t.Errorf("a receive from channel %d (closed %v): %v", ci, s.closed[ci], err)
	}
}

// recvFutures makes a few Recv futures in a row for one recvActor, and
// withdraws one of them later, maybe.
func (s *chanSim) recvFutures(ci int) {
	rng := s.w.Rand()
	c := s.chans[ci]
	r := s.newReceiver()
	n := 1 + rng.Intn(4)
	slots := make([]int, n)
	filled := 0
	var fs []*future.Future[int]
	for i := range n {
		f := c.Recv()
		done := s.track()
		f.OnComplete(func(v int, err error) {
			done()
			slots[i] = -1
			if err == nil {
				slots[i] = v
				s.take(ci, v)
			} else if !errors.Is(err, context.Canceled) {
				s.recvErr(ci, err)
			}
			if filled++; filled == n {
				// In the order the receives were made.
				for _, v := range slots {
					if v >= 0 {
						r.got[ci] = append(r.got[ci], v)
					}
				}
			}
		})
		fs = append(fs, f)
	}
	if rng.Intn(3) == 0 {
		i := rng.Intn(n)
		s.ex.AfterFunc(time.Duration(rng.Intn(3))*time.Millisecond, func() { fs[i].Cancel() })
	}
}

// selectTask spawns a task that selects between a receive from one
// channel and a send to another, once.
func (s *chanSim) selectTask() {
	rng := s.w.Rand()
	a, b := rng.Intn(len(s.chans)), rng.Intn(len(s.chans))
	r := s.newReceiver()
	it := s.newItem(s.newSender(), b)
	done := s.track()
	future.Spawn(s.ex, func(ctx context.Context) (struct{}, error) {
		defer done()
		rc, sc := s.chans[a].RecvCase(), s.chans[b].SendCase(it.id)
		i, err := channel.Select(ctx, rc, sc)
		s.w.Record('S', uint64(i), 0, []byte(fmt.Sprint(err)))
		switch {
		case i == 0 && err == nil:
			s.got(r, a, rc.Value())
			s.sent(it, errNotSent, "Select")
		case i == 0:
			s.recvErr(a, err)
			s.sent(it, errNotSent, "Select")
		default:
			s.sent(it, err, "Select")
		}
		if it.refused {
			it.withdrawn = true
		}
		return struct{}{}, nil
	})
}

// final checks every item and every recvActor once the world is quiet.
func (s *chanSim) final() {
	t := s.t
	for _, it := range s.items {
		what := fmt.Sprintf("item %d (sender %d, #%d, channel %d)", it.id, it.sender, it.k, it.ch)
		switch {
		case it.recvd > 1:
			t.Errorf("%s received %d times", what, it.recvd)
		case it.accepted && it.recvd == 0:
			t.Errorf("%s was taken by the channel but never received", what)
		case !it.accepted && it.recvd > 0:
			t.Errorf("%s was received, but its send failed or was withdrawn", what)
		case it.completed == 0:
			t.Errorf("%s: its send never completed", what)
		}
	}
	for ri, r := range s.recvs {
		for ci, got := range r.got {
			last := map[int]int{}
			for _, v := range got {
				it := s.items[v]
				if it.k <= last[it.sender] {
					t.Errorf("recvActor %d got item #%d of sender %d from channel %d after #%d", ri, it.k, it.sender, ci, last[it.sender])
				}
				last[it.sender] = it.k
			}
		}
	}
	if s.completed != s.pending {
		t.Errorf("%d of %d operations completed", s.completed, s.pending)
	}
	s.w.Record('F', uint64(len(s.items)), uint64(s.completed), nil)
}
