package merge

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

type item struct{ src, seq int }

// producer pushes items onto n queues in a random order: each queue gets
// per items, in sequence.
type producer struct {
	qs   []*queue[item]
	next []int
	per  int
	left int
	r    *rand.Rand
}

func newProducer(n, per int, seed int64) *producer {
	p := &producer{qs: make([]*queue[item], n), next: make([]int, n), per: per, left: n * per, r: rand.New(rand.NewSource(seed))}
	for i := range p.qs {
		p.qs[i] = &queue[item]{}
	}
	return p
}

func (p *producer) streams() []Stream[item] {
	ss := make([]Stream[item], len(p.qs))
	for i, q := range p.qs {
		ss[i] = q
	}
	return ss
}

// burst pushes up to k items to randomly chosen queues.
func (p *producer) burst(k int) {
	for ; k > 0 && p.left > 0; k-- {
		i := p.r.Intn(len(p.qs))
		for p.next[i] == p.per {
			i = (i + 1) % len(p.qs)
		}
		p.qs[i].Push(item{i, p.next[i]})
		p.next[i]++
		p.left--
	}
}

func (p *producer) closeAll() {
	for _, q := range p.qs {
		q.Close()
	}
}

// receiver checks that every item arrives once, in its stream's order.
type receiver struct {
	next []int
	n    int
	errs []string
}

func newReceiver(n int) *receiver { return &receiver{next: make([]int, n)} }

func (r *receiver) got(v item) {
	if r.next[v.src] != v.seq {
		r.errs = append(r.errs, fmt.Sprintf("stream %d: got seq %d, want %d", v.src, v.seq, r.next[v.src]))
	}
	r.next[v.src] = v.seq + 1
	r.n++
}

func (r *receiver) verify(t *testing.T, per int) {
	t.Helper()
	for _, e := range r.errs {
		t.Error(e)
	}
	for i, n := range r.next {
		if n != per {
			t.Errorf("stream %d: received %d items, want %d", i, n, per)
		}
	}
}

const (
	nStreams = 100
	perItems = 20
)

// Every item is delivered exactly once and each stream's order is kept,
// across 100 streams and random send orders, with each way of receiving.
func TestExactlyOnceInOrder(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("PollRecv/seed=%d", seed), func(t *testing.T) { exactlyOncePoll(t, seed) })
		t.Run(fmt.Sprintf("Recv/seed=%d", seed), func(t *testing.T) { exactlyOnceRecv(t, seed) })
		t.Run(fmt.Sprintf("All/seed=%d", seed), func(t *testing.T) { exactlyOnceAll(t, seed) })
	}
}

func exactlyOncePoll(t *testing.T, seed int64) {
	ex := executor.New()
	defer ex.Close()
	p := newProducer(nStreams, perItems, seed)
	r := newReceiver(nStreams)
	var w countWaker
	ex.Drive(func() {
		m := Merge(ex, p.streams()...)
		for p.left > 0 {
			p.burst(1 + p.r.Intn(8))
			for k := p.r.Intn(10); k > 0; k-- {
				v, ok, err := m.PollRecv(&w)
				if err != nil {
					t.Errorf("PollRecv: %v", err)
					return
				}
				if !ok {
					break
				}
				r.got(v)
			}
			m.check(t)
		}
		p.closeAll()
		for {
			v, ok, err := m.PollRecv(&w)
			if errors.Is(err, ErrClosed) {
				break
			}
			if !ok {
				t.Errorf("PollRecv pending after every stream closed (err %v)", err)
				return
			}
			r.got(v)
		}
		m.check(t)
		if m.Len() != 0 || !m.Ended() {
			t.Errorf("after the end: Len %d, Ended %v", m.Len(), m.Ended())
		}
	})
	r.verify(t, perItems)
}

func exactlyOnceRecv(t *testing.T, seed int64) {
	ex := executor.New()
	defer ex.Close()
	p := newProducer(nStreams, perItems, seed)
	r := newReceiver(nStreams)
	var m *Merged[item]
	closedSeen := 0
	recv := func() {
		m.Recv().OnComplete(func(v item, err error) {
			switch {
			case err == nil:
				r.got(v)
			case errors.Is(err, ErrClosed):
				closedSeen++
			default:
				t.Errorf("Recv: %v", err)
			}
		})
	}
	ex.Drive(func() { m = Merge(ex, p.streams()...) })
	for p.left > 0 {
		ex.Drive(func() {
			for k := p.r.Intn(8); k > 0; k-- {
				recv()
			}
			p.burst(1 + p.r.Intn(8))
			m.check(t)
		})
	}
	ex.Drive(func() {
		for range nStreams*perItems - r.n + 3 {
			recv()
		}
		p.closeAll()
	})
	if closedSeen == 0 {
		t.Errorf("no Recv failed with ErrClosed after the end")
	}
	r.verify(t, perItems)
}

func exactlyOnceAll(t *testing.T, seed int64) {
	ex := executor.New()
	defer ex.Close()
	p := newProducer(nStreams, perItems, seed)
	r := newReceiver(nStreams)
	var task *future.Future[int]
	ex.Drive(func() {
		m := Merge(ex, p.streams()...)
		task = future.Spawn(ex, func(ctx context.Context) (int, error) {
			for v, err := range m.All(ctx) {
				if err != nil {
					return r.n, err
				}
				r.got(v)
			}
			return r.n, nil
		})
	})
	for p.left > 0 {
		ex.Drive(func() { p.burst(1 + p.r.Intn(8)) })
	}
	ex.Drive(p.closeAll)
	if n, err := spindletest.Await(t, task); err != nil || n != nStreams*perItems {
		t.Errorf("task: %d items, %v", n, err)
	}
	r.verify(t, perItems)
}

// Two always-ready streams share the receives evenly: FIFO ready order.
func TestFairness(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	counts := map[int]int{}
	ex.Drive(func() {
		m := Merge[int](ex, forever(0), forever(1))
		for range 1000 {
			v, ok, err := m.PollRecv(nil)
			if !ok || err != nil {
				t.Errorf("PollRecv: ok=%v err=%v", ok, err)
				return
			}
			counts[v]++
		}
	})
	for id := range 2 {
		if counts[id] < 400 {
			t.Errorf("stream %d got %d of 1000 receives, want >= 400 (%v)", id, counts[id], counts)
		}
	}
}

// A stream that becomes ready is served after at most the streams queued
// before it, however much a busy stream holds.
func TestNoStarvation(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		busy, quiet := &queue[int]{}, &queue[int]{}
		for i := range 10000 {
			busy.items = append(busy.items, i)
		}
		m := Merge[int](ex, busy, quiet)
		for range 100 {
			m.PollRecv(nil)
		}
		quiet.Push(-1)
		for range 3 {
			if v, _, _ := m.PollRecv(nil); v == -1 {
				return
			}
		}
		t.Errorf("the quiet stream's item did not come within 3 receives")
	})
}

// The parent waker is woken exactly once per transition from no substream
// ready to some ready, and not while substreams are already queued.
func TestParentWakes(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		qs := make([]*queue[int], 50)
		ss := make([]Stream[int], len(qs))
		for i := range qs {
			qs[i] = &queue[int]{}
			ss[i] = qs[i]
		}
		m := Merge(ex, ss...)
		var w countWaker
		if _, ok, _ := m.PollRecv(&w); ok {
			t.Error("item from empty streams")
		}
		r := rand.New(rand.NewSource(7))
		for tr := int64(1); tr <= 200; tr++ {
			k := 1 + r.Intn(5) // several wakes in one transition
			for range k {
				qs[r.Intn(len(qs))].Push(int(tr))
			}
			if got := w.count(); got != tr {
				t.Errorf("transition %d (%d wakes): parent woken %d times in all, want %d", tr, k, got, tr)
				return
			}
			for n := 0; ; n++ {
				_, ok, err := m.PollRecv(&w)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					if n != k {
						t.Errorf("transition %d: %d items, want %d", tr, n, k)
					}
					break
				}
			}
			m.check(t)
		}
		// A waker is kept only by a pending poll: after an item, nobody is
		// woken, and PollRecv(nil) asks for no wake.
		qs[0].Push(1, 2)
		m.PollRecv(&w)
		before := w.count()
		qs[1].Push(3)
		m.PollRecv(nil)
		m.PollRecv(nil)
		m.PollRecv(nil)
		qs[2].Push(4)
		if w.count() != before {
			t.Errorf("parent woken without a pending poll")
		}
	})
}

// Per item the merge polls only the substreams that were woken: the one
// that got the item and the one that gave the previous item (re-queued in
// case it held more). Nothing scales with the number of substreams.
func TestNoScan(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		const n = 1000
		qs := make([]*queue[int], n)
		ss := make([]Stream[int], n)
		for i := range qs {
			qs[i] = &queue[int]{}
			ss[i] = qs[i]
		}
		m := Merge(ex, ss...)
		var w countWaker
		m.PollRecv(&w) // the first poll registers every waker
		polls := func() (s int) {
			for _, q := range qs {
				s += q.polls
			}
			return s
		}
		r := rand.New(rand.NewSource(42))
		for i := range 5000 {
			before := polls()
			qs[r.Intn(n)].Push(i)
			v, ok, err := m.PollRecv(&w)
			if !ok || err != nil || v != i {
				t.Errorf("item %d: %d %v %v", i, v, ok, err)
				return
			}
			if d := polls() - before; d > 2 {
				t.Errorf("item %d cost %d substream polls, want <= 2", i, d)
				return
			}
		}
	})
}

// Add grows a running merge; Remove and Handle.Remove drop substreams from
// every piece of bookkeeping.
func TestGrowAndRemove(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		m := New[int](ex)
		var w countWaker
		if _, ok, err := m.PollRecv(&w); ok || err != nil {
			t.Errorf("empty open merge: ok=%v err=%v, want pending", ok, err)
		}
		a := &queue[int]{}
		a.Push(1)
		ha := m.Add(a)
		if w.count() != 1 {
			t.Errorf("Add did not wake the waiting consumer")
		}
		if v, ok, _ := m.PollRecv(&w); !ok || v != 1 {
			t.Errorf("got %d %v, want 1", v, ok)
		}
		b, c := &queue[int]{}, &queue[int]{}
		hb := m.Add(b)
		m.Add(c)
		m.check(t)
		for _, ok, _ := m.PollRecv(&w); ok; _, ok, _ = m.PollRecv(&w) {
		}
		if m.Len() != 3 {
			t.Errorf("Len %d, want 3", m.Len())
		}
		// b is queued when removed: it must leave the ready queue too.
		b.Push(2)
		c.Push(3)
		if !hb.Remove() || hb.Remove() || hb.Active() {
			t.Errorf("Handle.Remove: first must succeed, second fail")
		}
		m.check(t)
		if v, ok, _ := m.PollRecv(&w); !ok || v != 3 {
			t.Errorf("got %d %v, want 3 (b's item must not come)", v, ok)
		}
		b.Push(4) // b's stream still holds no waker of ours, or a dead one
		if m.ready.Len() != 1 {
			t.Errorf("ready queue holds %d substreams, want c's only", m.ready.Len())
		}
		m.check(t)
		if !m.Remove(c) || m.Remove(c) {
			t.Errorf("Merged.Remove by stream")
		}
		m.check(t)
		if m.Len() != 1 || ha.Stream() != Stream[int](a) {
			t.Errorf("Len %d, want 1", m.Len())
		}
		// A dead waker does nothing.
		w0 := w.count()
		m.PollRecv(&w)
		b.Push(5)
		if w.count() != w0 {
			t.Errorf("a removed substream woke the consumer")
		}
		// An open merge stays open with no substream until Seal.
		ha.Remove()
		if m.Ended() {
			t.Errorf("open merge ended without Seal")
		}
		m.Seal()
		if !m.Ended() || w.count() != w0+1 {
			t.Errorf("Seal of an empty merge: ended %v, wakes %d (want %d)", m.Ended(), w.count(), w0+1)
		}
		if _, _, err := m.PollRecv(&w); !errors.Is(err, ErrClosed) {
			t.Errorf("after the end: %v, want ErrClosed", err)
		}
		defer func() {
			if recover() == nil {
				t.Errorf("Add after the end did not panic")
			}
		}()
		m.Add(a)
	})
}

// Removing the last substream of a sealed merge ends it and wakes the
// consumer, which then sees ErrClosed; Close ends it at once.
func TestRemoveLastAndClose(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		a := &queue[int]{}
		m := Merge[int](ex, a)
		var w countWaker
		m.PollRecv(&w)
		m.Remove(a)
		if !m.Ended() || w.count() != 1 {
			t.Errorf("removing the last stream: ended %v wakes %d", m.Ended(), w.count())
		}
		if len(Merge[int](ex).subs) != 0 || !Merge[int](ex).Ended() {
			t.Errorf("Merge of nothing must be ended")
		}

		b, c := &queue[int]{}, &queue[int]{}
		m = Merge[int](ex, b, c)
		f := m.Recv()
		b.Push(1)
		m.Close()
		m.check(t)
		if m.Len() != 0 || m.ready.Len() != 0 {
			t.Errorf("Close left %d substreams, %d queued", m.Len(), m.ready.Len())
		}
		f.OnComplete(func(_ int, err error) {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Recv pending at Close: %v, want ErrClosed", err)
			}
		})
	})
}

var errBoom = errors.New("boom")

// A stream that ends is dropped quietly; one that fails has its error
// delivered once and is dropped; the others go on.
func TestEndedAndFailing(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		a, b, c := &queue[int]{}, &queue[int]{}, &queue[int]{}
		m := Merge[int](ex, a, b, c)
		var w countWaker
		m.PollRecv(&w)
		a.Push(1)
		a.Close()
		b.Push(2)
		b.Fail(errBoom)
		var vals []int
		var errs []error
		for {
			v, ok, err := m.PollRecv(&w)
			if ok {
				vals = append(vals, v)
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			break
		}
		if len(vals) != 2 || len(errs) != 1 || !errors.Is(errs[0], errBoom) {
			t.Errorf("vals %v errs %v; want [1 2] and one errBoom", vals, errs)
		}
		if m.Len() != 1 || m.Ended() {
			t.Errorf("Len %d ended %v, want 1 live stream", m.Len(), m.Ended())
		}
		m.check(t)
		c.Push(3)
		if v, ok, _ := m.PollRecv(&w); !ok || v != 3 {
			t.Errorf("c: %d %v", v, ok)
		}
		c.Close()
		if _, _, err := m.PollRecv(&w); !errors.Is(err, ErrClosed) {
			t.Errorf("after every stream ended: %v, want ErrClosed", err)
		}
		if _, _, err := m.PollRecv(&w); !errors.Is(err, ErrClosed) {
			t.Errorf("ErrClosed must stick: %v", err)
		}
	})
}

// A failing substream's error reaches Recv and All once; both go on.
func TestFailureThroughRecvAndAll(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var recvRes []string
	var task *future.Future[[]string]
	ex.Drive(func() {
		a, b := &queue[int]{}, &queue[int]{}
		m := Merge[int](ex, a, b)
		for range 3 {
			m.Recv().OnComplete(func(v int, err error) { recvRes = append(recvRes, fmt.Sprint(v, err)) })
		}
		a.Fail(errBoom)
		b.Push(7)
		b.Close()

		c, d := &queue[int]{}, &queue[int]{}
		m2 := Merge[int](ex, c, d)
		task = future.Spawn(ex, func(ctx context.Context) ([]string, error) {
			var out []string
			for v, err := range m2.All(ctx) {
				out = append(out, fmt.Sprint(v, err))
			}
			return out, nil
		})
		c.Push(1)
		c.Fail(errBoom)
		d.Push(2)
		d.Close()
	})
	if fmt.Sprint(recvRes) != "[0 boom 7 <nil> 0 channel: closed]" {
		t.Errorf("Recv results %q", recvRes)
	}
	out, err := spindletest.Await(t, task)
	if err != nil || fmt.Sprint(out) != "[1 <nil> 2 <nil> 0 boom]" {
		t.Errorf("All: %q, %v", out, err)
	}
}

// Recv serves receivers in FIFO order, and a cancelled Recv moves no item.
func TestRecvOrderAndCancel(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []string
	ex.Drive(func() {
		a := &queue[int]{}
		m := Merge[int](ex, a)
		fs := make([]*future.Future[int], 4)
		for i := range fs {
			fs[i] = m.Recv()
		}
		fs[1].Cancel()
		for i, f := range fs {
			f.OnComplete(func(v int, err error) { got = append(got, fmt.Sprint(i, ":", v, err)) })
		}
		a.Push(10, 20, 30, 40)
		ex.Post(func() {
			// The fourth item waits for the next receiver.
			m.Recv().OnComplete(func(v int, err error) { got = append(got, fmt.Sprint("late:", v, err)) })
		})
	})
	want := "[1:0 context canceled 0:10 <nil> 2:20 <nil> 3:30 <nil> late:40 <nil>]"
	if fmt.Sprint(got) != want {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// hookStream runs a hook when it is polled, then yields its items.
type hookStream struct {
	queue[int]
	onPoll func()
}

func (h *hookStream) PollRecv(w executor.Waker) (int, bool, error) {
	if f := h.onPoll; f != nil {
		h.onPoll = nil
		f()
	}
	return h.queue.PollRecv(w)
}

// An item taken for a Recv that is cancelled (from another goroutine) while
// the item is on its way goes to the next receiver: no item is lost.
func TestCancelRaceLosesNothing(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var got []string
	var m *Merged[int]
	ex.Drive(func() {
		s := &hookStream{}
		m = Merge[int](ex, s)
		first := m.Recv()
		first.OnComplete(func(v int, err error) { got = append(got, fmt.Sprint("first:", v, err)) })
		// The drain checks that first still waits, then polls; the
		// cancellation lands in between, as one from another goroutine may.
		s.onPoll = func() { first.Cancel() }
		s.Push(5)
	})
	ex.Drive(func() {
		if !m.hasStash {
			t.Errorf("the item taken for the cancelled Recv was not kept")
		}
		m.Recv().OnComplete(func(v int, err error) { got = append(got, fmt.Sprint("second:", v, err)) })
	})
	if fmt.Sprint(got) != "[first:0 context canceled second:5 <nil>]" {
		t.Fatalf("got %v", got)
	}
}

// RecvWait: inside a task it suspends; on the loop outside a task it returns a
// ready item or ErrDeadlock, losing nothing.
func TestRecvWait(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var m *Merged[int]
	a := &queue[int]{}
	var task *future.Future[int]
	ex.Drive(func() {
		m = Merge[int](ex, a)
		if _, err := m.RecvWait(context.Background()); !errors.Is(err, future.ErrDeadlock) {
			t.Errorf("RecvWait outside a task: %v, want ErrDeadlock", err)
		}
		a.Push(1)
		if v, err := m.RecvWait(context.Background()); v != 1 || err != nil {
			t.Errorf("RecvWait of a ready item: %d %v", v, err)
		}
		task = future.Spawn(ex, func(ctx context.Context) (int, error) {
			sum := 0
			for {
				v, err := m.RecvWait(ctx)
				if errors.Is(err, ErrClosed) {
					return sum, nil
				}
				if err != nil {
					return sum, err
				}
				sum += v
			}
		})
	})
	ex.Drive(func() { a.Push(2, 3) })
	ex.Drive(func() { a.Push(4) })
	ex.Drive(a.Close)
	if v, err := spindletest.Await(t, task); v != 9 || err != nil {
		t.Errorf("task: %d %v, want 9", v, err)
	}
}

// A RecvWait whose context ends withdraws its receiver.
func TestRecvWaitCancelled(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	b := &queue[int]{}
	var m *Merged[int]
	ctx, cancel := context.WithCancel(context.Background())
	task := callOn(t, ex, func() *future.Future[int] {
		m = Merge[int](ex, b)
		return future.Spawn(ex, func(context.Context) (int, error) { return m.RecvWait(ctx) })
	})
	cancel()
	if _, err := spindletest.Await(t, task); !errors.Is(err, context.Canceled) {
		t.Errorf("RecvWait after cancel: %v", err)
	}
	callOn(t, ex, func() int {
		b.Push(8)
		if v, err := m.RecvWait(context.Background()); v != 8 || err != nil {
			t.Errorf("item after a withdrawn RecvWait: %d %v", v, err)
		}
		return 0
	})
}

// All: a context that ends, an executor that closes, a range left early,
// and a range outside a task.
func TestAllEdges(t *testing.T) {
	ex := executor.New()
	ex.Start()
	a := &queue[int]{}
	var m *Merged[int]
	ctx, cancel := context.WithCancel(context.Background())
	task := callOn(t, ex, func() *future.Future[string] {
		m = Merge[int](ex, a)
		a.Push(1)
		return future.Spawn(ex, func(context.Context) (string, error) {
			var out []string
			for v, err := range m.All(ctx) {
				out = append(out, fmt.Sprint(v, err))
			}
			return fmt.Sprint(out), nil
		})
	})
	cancel()
	if s, err := spindletest.Await(t, task); s != "[1 <nil> 0 context canceled]" || err != nil {
		t.Errorf("All with a cancelled ctx: %q %v", s, err)
	}
	// Leave a range early; the next items stay for the next receiver.
	task = callOn(t, ex, func() *future.Future[string] {
		a.Push(2, 3)
		return future.Spawn(ex, func(ctx context.Context) (string, error) {
			for v := range m.All(ctx) {
				return fmt.Sprint(v), nil
			}
			return "", nil
		})
	})
	if s, _ := spindletest.Await(t, task); s != "2" {
		t.Errorf("first item: %q", s)
	}
	task = callOn(t, ex, func() *future.Future[string] {
		var out []string
		for v, err := range m.All(context.Background()) { // not a task
			out = append(out, fmt.Sprint(v, err))
		}
		if fmt.Sprint(out) != "[3 <nil> 0 "+future.ErrDeadlock.Error()+"]" {
			t.Errorf("All outside a task: %q", out)
		}
		return future.Spawn(ex, func(ctx context.Context) (string, error) {
			var last error
			for _, err := range m.All(ctx) {
				last = err
			}
			return fmt.Sprint(last), nil
		})
	})
	// Let the task reach its wait before closing.
	callOn(t, ex, func() int { return 0 })
	ex.Close()
	if r, ok := task.Peek(); !ok || r.Value != executor.ErrClosed.Error() {
		t.Errorf("All when the executor closes: %+v (done %v), want the range to end with ErrClosed", r, ok)
	}
}

// Merges nest: a Merged is a Stream.
func TestNested(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		a, b, c := &queue[int]{}, &queue[int]{}, &queue[int]{}
		inner := Merge[int](ex, a, b)
		outer := Merge[int](ex, inner, c)
		var w countWaker
		outer.PollRecv(&w)
		a.Push(1)
		if w.count() != 1 {
			t.Errorf("outer consumer woken %d times, want 1", w.count())
		}
		c.Push(2)
		b.Push(3)
		sum := 0
		for v, ok, _ := outer.PollRecv(&w); ok; v, ok, _ = outer.PollRecv(&w) {
			sum += v
		}
		if sum != 6 {
			t.Errorf("sum %d, want 6", sum)
		}
		a.Close()
		b.Close()
		c.Close()
		if _, _, err := outer.PollRecv(&w); !errors.Is(err, ErrClosed) {
			t.Errorf("nested end: %v", err)
		}
	})
}

// selfWaker is a stream that, when polled, wakes itself and reports
// pending a number of times before it yields: PollRecv must not spin on it.
type selfWaker struct{ left int }

func (s *selfWaker) PollRecv(w executor.Waker) (int, bool, error) {
	if s.left == 0 {
		return 42, true, nil
	}
	s.left--
	w.Wake()
	return 0, false, nil
}

func TestSelfWakingStream(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		s := &selfWaker{left: 3}
		m := Merge[int](ex, s)
		var w countWaker
		for i := 1; i <= 3; i++ {
			if _, ok, err := m.PollRecv(&w); ok || err != nil {
				t.Errorf("poll %d: ok=%v err=%v, want pending", i, ok, err)
			}
			if w.count() != int64(i) {
				t.Errorf("poll %d: consumer woken %d times, want %d (asked to poll again)", i, w.count(), i)
			}
		}
		if v, ok, _ := m.PollRecv(&w); !ok || v != 42 {
			t.Errorf("final poll: %d %v", v, ok)
		}
	})
}

// Wakes from other goroutines are handed to the loop, one hand-off in
// flight per substream however many wakes arrive.
func TestRemoteWakeCoalesced(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var m *Merged[int]
	q := &queue[int]{}
	var w countWaker
	ex.Drive(func() {
		m = Merge[int](ex, q)
		m.PollRecv(&w)
	})
	sw := q.w // the substream's waker
	spindletest.Parallel(8, func(int) {
		for range 1000 {
			sw.Wake()
		}
	})
	if n := ex.RunUntilIdle(); n != 1 {
		t.Errorf("8000 remote wakes ran %d tasks on the loop, want 1", n)
	}
	if w.count() != 1 {
		t.Errorf("consumer woken %d times, want 1", w.count())
	}
	ex.Drive(func() { m.check(t) })
}

// Streams pushed from many goroutines while the loop runs: every item
// arrives once, in each stream's order (run with -race).
func TestRemoteProducers(t *testing.T) {
	const producers, per = 16, 500
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	qs := make([]*lockedQueue[item], producers)
	ss := make([]Stream[item], producers)
	for i := range qs {
		qs[i] = &lockedQueue[item]{}
		ss[i] = qs[i]
	}
	r := newReceiver(producers)
	task := future.Spawn(ex, func(ctx context.Context) (int, error) {
		m := Merge(ex, ss...)
		for v, err := range m.All(ctx) {
			if err != nil {
				return r.n, err
			}
			r.got(v)
		}
		return r.n, nil
	})
	spindletest.Parallel(len(qs), func(i int) {
		q := qs[i]
		for s := range per {
			q.push(item{i, s}, false)
		}
		q.push(item{}, true)
	})
	if n, err := spindletest.Await(t, task); n != producers*per || err != nil {
		t.Errorf("task: %d items, %v", n, err)
	}
	r.verify(t, per)
}

// Loop-only methods refuse a goroutine that does not hold the loop.
func TestLoopOnly(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	q := &queue[int]{}
	m := Merge[int](ex, q) // Merge and New may be called anywhere
	var h *Handle[int]
	ex.Drive(func() { h = m.Add(&queue[int]{}) })
	for name, fn := range map[string]func(){
		"Add":           func() { m.Add(&queue[int]{}) },
		"Remove":        func() { m.Remove(q) },
		"Handle.Remove": func() { h.Remove() },
		"Seal":          func() { m.Seal() },
		"Close":         func() { m.Close() },
		"Recv":          func() { m.Recv() },
		"RecvWait":      func() { m.RecvWait(context.Background()) },
		"All":           func() { m.All(context.Background())(func(int, error) bool { return false }) },
		"PollRecv":      func() { m.PollRecv(&countWaker{}) },
		"Len":           func() { m.Len() },
		"Ended":         func() { m.Ended() },
	} {
		t.Run(name, func(t *testing.T) {
			spindletest.MustPanic(t, "merge: ", "use executor.Submit", fn)
		})
	}
}

// The merge allocates nothing per item.
func TestZeroAllocsPerItem(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		qs := make([]*queue[int], 100)
		ss := make([]Stream[int], len(qs))
		for i := range qs {
			qs[i] = &queue[int]{items: make([]int, 0, 1)}
			ss[i] = qs[i]
		}
		m := Merge(ex, ss...)
		var w countWaker
		m.PollRecv(&w)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			q := qs[(i*37)%len(qs)]
			q.items = append(q.items[:0], i)
			q.wake()
			m.PollRecv(&w)
			i++
		})
		if allocs != 0 {
			t.Errorf("%v allocations per item, want 0", allocs)
		}
	})
}

// Cancelling a task that waits in RecvWait or All on its own context ends
// the wait with context.Canceled, and the item that comes next is kept.
func TestTaskCancelledWhileWaiting(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	q := &queue[int]{}
	var m *Merged[int]
	tasks := callOn(t, ex, func() []*future.Future[int] {
		m = Merge[int](ex, q)
		return []*future.Future[int]{
			future.Spawn(ex, func(ctx context.Context) (int, error) {
				_, err := m.RecvWait(context.WithValue(ctx, ctxKey{}, 1))
				if !errors.Is(err, context.Canceled) {
					t.Errorf("RecvWait of a cancelled task: %v", err)
				}
				return 0, err
			}),
			future.Spawn(ex, func(ctx context.Context) (int, error) {
				for _, err := range m.All(ctx) {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("All of a cancelled task: %v", err)
					}
				}
				return 0, nil
			}),
		}
	})
	callOn(t, ex, func() int { return m.waiters.Len() }) // both wait
	for _, f := range tasks {
		f.Cancel()
	}
	for _, f := range tasks {
		spindletest.Await(t, f)
	}
	v := callOn(t, ex, func() int {
		q.Push(9)
		v, _ := m.RecvWait(context.Background())
		return v
	})
	if v != 9 {
		t.Errorf("item after the cancelled waiters: %d", v)
	}
}

// Receiving in a task, with RecvWait or All, allocates nothing per item;
// Recv allocates only its future.
func TestTaskReceiveAllocs(t *testing.T) {
	for _, mode := range []string{"All", "RecvWait", "Recv"} {
		t.Run(mode, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			q := &queue[int]{items: make([]int, 0, 1)}
			var m *Merged[int]
			n := 0
			ex.Drive(func() {
				m = Merge[int](ex, q)
				future.Spawn(ex, func(ctx context.Context) (int, error) {
					switch mode {
					case "All":
						for range m.All(ctx) {
							n++
						}
					case "RecvWait":
						for {
							if _, err := m.RecvWait(ctx); err != nil {
								return n, nil
							}
							n++
						}
					case "Recv":
						for {
							if _, err := m.Recv().Await(ctx); err != nil {
								return n, nil
							}
							n++
						}
					}
					return n, nil
				})
			})
			i := 0
			push := func() { q.Push(i); i++ }
			step := func() {
				_ = ex.Submit(push)
				ex.RunUntilIdle()
			}
			for range 100 { // warm up: buffers grow
				step()
			}
			allocs := testing.AllocsPerRun(1000, step)
			if n != i {
				t.Errorf("received %d of %d", n, i)
			}
			want := 0.0
			if mode == "Recv" {
				want = 1
			}
			if allocs > want {
				t.Errorf("%v allocations per item, want <= %v", allocs, want)
			}
			ex.Drive(q.Close)
		})
	}
}

type ctxKey struct{}
