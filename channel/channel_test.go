package channel_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// call runs fn on the loop of a started executor and returns once it ran.
func call(t testing.TB, ex *executor.Executor, fn func()) {
	t.Helper()
	if _, err := spindletest.Await(t, future.Call(ex, func() (struct{}, error) {
		fn()
		return struct{}{}, nil
	})); err != nil {
		t.Fatalf("Call: %v", err)
	}
}

// peek returns the outcome of f, which must be ready.
func peek[T any](t testing.TB, f *future.Future[T]) (T, error) {
	t.Helper()
	r, ok := f.Peek()
	if !ok {
		t.Fatalf("future is not ready")
	}
	return r.Value, r.Err
}

// pending fails the test if f is ready.
func pending[T any](t testing.TB, f *future.Future[T], what string) {
	t.Helper()
	if f.Ready() {
		r, _ := f.Peek()
		t.Fatalf("%s: ready with (%v, %v), want pending", what, r.Value, r.Err)
	}
}

// receiver is one of the four ways to wait for an item: a Recv future, a
// task in RecvWait, a select future (SelectFuture) and a task in Select,
// the selects with a second case on never, which nothing sends to. recv
// starts the receive on the loop and returns a future of the item (or the
// error) it ends with, so that a scenario runs the same with each.
type receiver struct {
	name string
	task bool // the receiver is a task that waits in place
	recv func(ex *executor.Executor, c, never *channel.Chan[int]) *future.Future[int]
}

var receivers = []receiver{
	{"Recv", false, func(_ *executor.Executor, c, _ *channel.Chan[int]) *future.Future[int] { return c.Recv() }},
	{"RecvWait", true, func(ex *executor.Executor, c, _ *channel.Chan[int]) *future.Future[int] {
		return future.Spawn(ex, func(ctx context.Context) (int, error) { return c.RecvWait(ctx) })
	}},
	{"SelectFuture", false, func(_ *executor.Executor, c, never *channel.Chan[int]) *future.Future[int] {
		rc := c.RecvCase()
		return future.Transform(channel.SelectFuture(never.RecvCase(), rc), func(i int, err error) (int, error) {
			return rc.Value(), chose(i, err, rc.Err())
		})
	}},
	{"Select", true, func(ex *executor.Executor, c, never *channel.Chan[int]) *future.Future[int] {
		return future.Spawn(ex, func(ctx context.Context) (int, error) {
			rc := c.RecvCase()
			i, err := channel.Select(ctx, never.RecvCase(), rc)
			return rc.Value(), chose(i, err, rc.Err())
		})
	}},
}

// sender is, likewise, one of the four ways to wait to send v.
type sender struct {
	name string
	task bool
	send func(ex *executor.Executor, c, never *channel.Chan[int], v int) *future.Future[struct{}]
}

var senders = []sender{
	{"Send", false, func(_ *executor.Executor, c, _ *channel.Chan[int], v int) *future.Future[struct{}] { return c.Send(v) }},
	{"SendWait", true, func(ex *executor.Executor, c, _ *channel.Chan[int], v int) *future.Future[struct{}] {
		return future.Spawn(ex, func(ctx context.Context) (struct{}, error) { return struct{}{}, c.SendWait(ctx, v) })
	}},
	{"SelectFuture", false, func(_ *executor.Executor, c, never *channel.Chan[int], v int) *future.Future[struct{}] {
		sc := c.SendCase(v)
		return future.Transform(channel.SelectFuture(never.RecvCase(), sc), func(i int, err error) (struct{}, error) {
			return struct{}{}, chose(i, err, sc.Err())
		})
	}},
	{"Select", true, func(ex *executor.Executor, c, never *channel.Chan[int], v int) *future.Future[struct{}] {
		return future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			sc := c.SendCase(v)
			i, err := channel.Select(ctx, never.RecvCase(), sc)
			return struct{}{}, chose(i, err, sc.Err())
		})
	}},
}

// chose returns the outcome of a select over (never, c) that must have
// chosen c's case (index 1): the select's error, else the case's.
func chose(i int, selErr, caseErr error) error {
	switch {
	case selErr != nil:
		return selErr
	case i != 1:
		return fmt.Errorf("select chose case %d, want 1", i)
	}
	return caseErr
}

func TestRendezvous(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	var r1 *future.Future[int]
	var s1 *future.Future[struct{}]
	ex.Drive(func() {
		if c.Cap() != 0 || c.Len() != 0 {
			t.Errorf("Cap, Len = %d, %d; want 0, 0", c.Cap(), c.Len())
		}
		if c.TrySend(1) {
			t.Error("TrySend with no receiver succeeded")
		}
		if _, ok := c.TryRecv(); ok {
			t.Error("TryRecv on an empty channel succeeded")
		}
		r1 = c.Recv()
		pending(t, r1, "Recv with no sender")
		if !c.TrySend(7) {
			t.Error("TrySend to a waiting receiver failed")
		}
		if v, err := peek(t, r1); v != 7 || err != nil {
			t.Errorf("Recv = (%v, %v), want (7, nil)", v, err)
		}
		s1 = c.Send(8)
		pending(t, s1, "Send with no receiver")
		if c.Len() != 0 {
			t.Errorf("Len = %d with a waiting sender, want 0 (nothing is buffered)", c.Len())
		}
		if v, ok := c.TryRecv(); !ok || v != 8 {
			t.Errorf("TryRecv = (%v, %v), want (8, true)", v, ok)
		}
		if _, err := peek(t, s1); err != nil {
			t.Errorf("Send after the receive: %v", err)
		}
	})
}

func TestBuffered(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[string](ex, 3)
	ex.Drive(func() {
		for _, s := range []string{"a", "b", "c"} {
			if !c.TrySend(s) {
				t.Fatalf("TrySend(%q) with room failed", s)
			}
		}
		if c.TrySend("x") {
			t.Error("TrySend to a full channel succeeded")
		}
		if c.Len() != 3 || c.Cap() != 3 {
			t.Errorf("Len, Cap = %d, %d; want 3, 3", c.Len(), c.Cap())
		}
		d := c.Send("d") // waits: the buffer is full
		e := c.Send("e")
		pending(t, d, "Send to a full channel")
		var got []string
		for range 5 {
			v, ok := c.TryRecv()
			if !ok {
				t.Fatal("TryRecv ran dry early")
			}
			got = append(got, v)
			if len(got) == 1 {
				// Taking "a" moved "d" into the buffer: d has completed.
				if _, err := peek(t, d); err != nil {
					t.Errorf("Send(d): %v", err)
				}
				pending(t, e, "second waiting Send")
				if c.Len() != 3 {
					t.Errorf("Len after refill = %d, want 3", c.Len())
				}
			}
		}
		if strings.Join(got, "") != "abcde" {
			t.Errorf("received %v, want a..e in order", got)
		}
		if _, err := peek(t, e); err != nil {
			t.Errorf("Send(e): %v", err)
		}
	})
}

// An operation that can complete at once returns a completed future: an
// immediate Send shares one future per channel and allocates nothing, an
// immediate Recv allocates only its future, TrySend and TryRecv never
// allocate, and awaiting completed futures in a task does not suspend.
func TestImmediateCompletion(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 1)
	ex.Drive(func() {
		s1 := c.Send(1)
		if !s1.Ready() {
			t.Fatal("immediate Send not ready")
		}
		r := c.Recv()
		if v, err := peek(t, r); v != 1 || err != nil {
			t.Fatalf("Recv = (%v, %v)", v, err)
		}
		if s2 := c.Send(2); s2 != s1 {
			t.Error("two immediate Sends returned different futures; want the shared one")
		}
		c.TryRecv()

		if n := testing.AllocsPerRun(1000, func() {
			c.Send(3)
			c.TryRecv()
		}); n != 0 {
			t.Errorf("immediate Send: %v allocs, want 0", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			c.TrySend(3)
			c.TryRecv()
		}); n != 0 {
			t.Errorf("TrySend+TryRecv: %v allocs, want 0", n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			c.TrySend(3)
			c.Recv()
		}); n > 1 {
			t.Errorf("immediate Recv: %v allocs, want at most 1", n)
		}
		fresh := channel.New[int](ex, 5)
		if n := testing.AllocsPerRun(1, func() {
			for i := range 5 {
				fresh.TrySend(i)
			}
			for range 5 {
				fresh.TryRecv()
			}
		}); n != 0 {
			t.Errorf("filling and draining a new channel: %v allocs, want 0", n)
		}
		w := &countWaker{}
		if n := testing.AllocsPerRun(1000, func() {
			c.PollRecv(w) // pending: registers w
		}); n != 0 {
			t.Errorf("pending PollRecv: %v allocs, want 0", n)
		}
	})

	ran0 := ex.Stats().TasksRun
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		sum := 0
		for i := range 100 {
			s, r := c.Send(i), c.Recv()
			all := future.All(r, r) // a combinator of completed futures is complete
			if !all.Ready() {
				return 0, errors.New("All of completed futures is pending")
			}
			if _, err := s.Await(ctx); err != nil {
				return 0, err
			}
			v, err := r.Await(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	ex.RunUntilIdle()
	if v, err := peek(t, f); v != 4950 || err != nil {
		t.Fatalf("task = (%v, %v)", v, err)
	}
	if n := ex.Stats().TasksRun - ran0; n != 1 {
		t.Errorf("the task ran in %d slices, want 1 (it never suspends)", n)
	}
}

// Waiting receivers are served in the order they queued, whatever way
// they wait in, and so are waiting senders: each way in turn, twice over.
func TestFIFOWaiters(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c, never := channel.New[int](ex, 0), channel.New[int](ex, 0)
	var fs []*future.Future[int]
	for _, r := range append(receivers, receivers...) {
		ex.Drive(func() { fs = append(fs, r.recv(ex, c, never)) }) // a task starts waiting before Drive returns
	}
	ex.Drive(func() {
		for i := range fs {
			if !c.TrySend(100 + i) {
				t.Fatalf("TrySend %d: no waiting receiver", i)
			}
		}
		if c.TrySend(0) {
			t.Error("TrySend succeeded with no receiver left")
		}
	})
	for i, f := range fs {
		if v, err := peek(t, f); v != 100+i || err != nil {
			t.Errorf("receiver %d (%s) = (%v, %v), want (%d, nil): served out of queue order", i, receivers[i%len(receivers)].name, v, err, 100+i)
		}
	}

	var done []*future.Future[struct{}]
	for i, snd := range append(senders, senders...) {
		ex.Drive(func() { done = append(done, snd.send(ex, c, never, i)) })
	}
	var sent []int
	ex.Drive(func() {
		for v, ok := c.TryRecv(); ok; v, ok = c.TryRecv() {
			sent = append(sent, v)
		}
	})
	if fmt.Sprint(sent) != "[0 1 2 3 4 5 6 7]" {
		t.Errorf("senders delivered %v, want [0 1 2 3 4 5 6 7]", sent)
	}
	for i, f := range done {
		if _, err := peek(t, f); err != nil {
			t.Errorf("sender %d (%s): %v", i, senders[i%len(senders)].name, err)
		}
	}
}

// countWaker counts its wake-ups.
type countWaker struct{ n int }

func (w *countWaker) Wake() { w.n++ }

func TestCloseKeepsBufferedItems(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 4)
	ex.Drive(func() {
		c.TrySend(1)
		c.TrySend(2)
		c.Close()
		c.Close() // idempotent
		if !c.Closed() || c.Len() != 2 {
			t.Errorf("Closed, Len = %v, %d; want true, 2", c.Closed(), c.Len())
		}
		if c.TrySend(3) {
			t.Error("TrySend after Close succeeded")
		}
		if _, err := peek(t, c.Send(3)); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("Send after Close: %v, want ErrClosed", err)
		}
		if v, err := peek(t, c.Recv()); v != 1 || err != nil {
			t.Errorf("Recv after Close = (%v, %v), want (1, nil)", v, err)
		}
		if v, ok, err := c.PollRecv(&countWaker{}); v != 2 || !ok || err != nil {
			t.Errorf("PollRecv after Close = (%v, %v, %v), want (2, true, nil)", v, ok, err)
		}
		if _, err := peek(t, c.Recv()); !errors.Is(err, channel.ErrClosed) {
			t.Errorf("Recv when closed and drained: %v, want ErrClosed", err)
		}
		if _, ok := c.TryRecv(); ok {
			t.Error("TryRecv when closed and drained succeeded")
		}
		if _, ok, err := c.PollRecv(&countWaker{}); ok || !errors.Is(err, channel.ErrClosed) {
			t.Errorf("PollRecv when closed and drained = (%v, %v), want ErrClosed", ok, err)
		}
		if i, err := channel.TrySelect(c.RecvCase()); i != 0 || !errors.Is(err, channel.ErrClosed) {
			t.Errorf("TrySelect(recv) when closed = (%d, %v), want (0, ErrClosed)", i, err)
		}
		if i, err := channel.TrySelect(c.SendCase(9)); i != 0 || !errors.Is(err, channel.ErrClosed) {
			t.Errorf("TrySelect(send) when closed = (%d, %v), want (0, ErrClosed)", i, err)
		}
		if c.Len() != 0 {
			t.Errorf("Len = %d, want 0", c.Len())
		}
	})
	// Tasks see the same.
	f := future.Spawn(ex, func(ctx context.Context) (string, error) {
		_, rerr := c.RecvWait(ctx)
		serr := c.SendWait(ctx, 1)
		n := 0
		for range c.All(ctx) {
			n++
		}
		return fmt.Sprint(errors.Is(rerr, channel.ErrClosed), errors.Is(serr, channel.ErrClosed), n), nil
	})
	ex.RunUntilIdle()
	if v, err := peek(t, f); v != "true true 0" || err != nil {
		t.Errorf("task = (%q, %v), want \"true true 0\"", v, err)
	}
}

// Close fails every kind of waiting receiver and, on another channel, every
// kind of waiting sender, and moves no item.
func TestCloseWithWaiters(t *testing.T) {
	for _, r := range receivers {
		t.Run("receiver/"+r.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			c, never := channel.New[int](ex, 0), channel.New[int](ex, 0)
			var f *future.Future[int]
			ex.Drive(func() { f = r.recv(ex, c, never) })
			ex.Drive(c.Close)
			if _, err := peek(t, f); !errors.Is(err, channel.ErrClosed) {
				t.Errorf("waiting receiver: %v, want ErrClosed", err)
			}
			ex.Drive(func() {
				if never.TrySend(0) {
					t.Error("a finished select still receives from its other channel")
				}
			})
		})
	}
	for _, snd := range senders {
		t.Run("sender/"+snd.name, func(t *testing.T) {
			ex := executor.New()
			defer ex.Close()
			c, never := channel.New[int](ex, 0), channel.New[int](ex, 0)
			var f *future.Future[struct{}]
			ex.Drive(func() { f = snd.send(ex, c, never, 1) })
			ex.Drive(c.Close)
			if _, err := peek(t, f); !errors.Is(err, channel.ErrClosed) {
				t.Errorf("waiting sender: %v, want ErrClosed", err)
			}
			ex.Drive(func() {
				if _, ok := c.TryRecv(); ok {
					t.Error("an item of a failed sender was received")
				}
			})
		})
	}
	t.Run("PollRecv", func(t *testing.T) {
		ex := executor.New()
		defer ex.Close()
		c := channel.New[int](ex, 0)
		poll := &countWaker{}
		ex.Drive(func() {
			if _, ok, _ := c.PollRecv(poll); ok {
				t.Error("PollRecv on an empty channel got an item")
			}
			c.Close()
		})
		if poll.n != 1 {
			t.Errorf("poll waker woken %d times by Close, want 1", poll.n)
		}
	})
}

// A cancelled Send or Recv future is withdrawn: it moves no item, and the
// next waiter is served instead.
func TestCancelMovesNothing(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	ex.Drive(func() {
		r1, r2 := c.Recv(), c.Recv()
		if !r1.Cancel() {
			t.Fatal("Cancel of a pending Recv returned false")
		}
		if !c.TrySend(5) {
			t.Fatal("TrySend: the second receiver was not served")
		}
		if _, err := peek(t, r1); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Recv: %v", err)
		}
		if v, err := peek(t, r2); v != 5 || err != nil {
			t.Errorf("second Recv = (%v, %v), want (5, nil)", v, err)
		}
		if r2.Cancel() {
			t.Error("Cancel of a completed Recv returned true")
		}
		r3 := c.Recv()
		r3.Cancel()
		if c.TrySend(6) {
			t.Error("TrySend succeeded with only a cancelled receiver")
		}

		s1, s2 := c.Send(1), c.Send(2)
		s1.Cancel()
		if v, ok := c.TryRecv(); !ok || v != 2 {
			t.Errorf("TryRecv = (%v, %v), want the second sender's 2", v, ok)
		}
		if _, err := peek(t, s2); err != nil {
			t.Errorf("second Send: %v", err)
		}
		s3 := c.Send(3)
		s3.Cancel()
		if v, ok := c.TryRecv(); ok {
			t.Errorf("TryRecv got %v from a cancelled sender", v)
		}

		sel := channel.SelectFuture(c.RecvCase())
		sel.Cancel()
		if c.TrySend(7) {
			t.Error("TrySend succeeded with only a cancelled select")
		}
	})
}

// Cancel from other goroutines races with hand-offs on the loop: each
// pending Recv either gets its item (and Cancel reports false) or is
// cancelled (and the item goes to the next receiver or stays with the
// sender). Nothing is lost or duplicated.
func TestCancelRaceLosesNothing(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	const rounds = 2000
	type round struct {
		f         *future.Future[int]
		cancelled bool
	}
	var (
		mu  sync.Mutex
		rs  []*round
		wg  sync.WaitGroup
		out = make(chan *round, rounds)
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range out {
			ok := r.f.Cancel()
			mu.Lock()
			r.cancelled = ok
			mu.Unlock()
		}
	}()
	sentOK := map[int]bool{}
	_, err := spindletest.Await(t, future.Spawn(ex, func(ctx context.Context) (int, error) {
		for i := range rounds {
			r := &round{f: c.Recv()}
			rs = append(rs, r)
			out <- r
			if i%3 == 0 {
				if err := future.Yield(ctx); err != nil {
					return 0, err
				}
			}
			if c.TrySend(i) {
				sentOK[i] = true
			}
		}
		return 0, nil
	}))
	close(out)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, r := range rs {
		v, err := spindletest.Await(t, r.f)
		mu.Lock()
		cancelled := r.cancelled
		mu.Unlock()
		switch {
		case cancelled && !errors.Is(err, context.Canceled):
			t.Fatalf("Cancel reported true but the future has (%v, %v)", v, err)
		case !cancelled && err != nil:
			t.Fatalf("Cancel reported false but the future failed: %v", err)
		case err == nil:
			if got[v] {
				t.Fatalf("item %d received twice", v)
			}
			got[v] = true
		}
	}
	for v := range sentOK {
		if !got[v] {
			t.Fatalf("item %d was sent (TrySend true) but never received", v)
		}
	}
	if len(got) != len(sentOK) {
		t.Fatalf("received %d items, sent %d", len(got), len(sentOK))
	}
}

// A task whose context ends is withdrawn at once: no item moves to it even
// before it runs again, and it returns the context's error.
func TestTaskCancelMovesNothing(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var foreign, own, sender *future.Future[int]
	call(t, ex, func() {
		// A context that is not the task's.
		foreign = future.Spawn(ex, func(context.Context) (int, error) { return c.RecvWait(ctx) })
		// The task's own context, ended by cancelling the task.
		own = future.Spawn(ex, func(tctx context.Context) (int, error) { return c.RecvWait(tctx) })
	})
	call(t, ex, func() {
		cancel()
		own.Cancel()
		if c.TrySend(1) {
			t.Error("TrySend succeeded although both waiting tasks were cancelled")
		}
	})
	if _, err := spindletest.Await(t, foreign); !errors.Is(err, context.Canceled) {
		t.Errorf("RecvWait with a cancelled context: %v", err)
	}
	if _, err := spindletest.Await(t, own); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled task: %v", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	call(t, ex, func() {
		sender = future.Spawn(ex, func(context.Context) (int, error) { return 0, c.SendWait(ctx2, 9) })
	})
	call(t, ex, func() {
		cancel2()
		if v, ok := c.TryRecv(); ok {
			t.Errorf("TryRecv got %d from a cancelled sender task", v)
		}
	})
	if _, err := spindletest.Await(t, sender); !errors.Is(err, context.Canceled) {
		t.Errorf("SendWait with a cancelled context: %v", err)
	}
	// An already-ended context does not wait at all.
	f := future.Spawn(ex, func(context.Context) (int, error) { return c.RecvWait(ctx2) })
	if _, err := spindletest.Await(t, f); !errors.Is(err, context.Canceled) {
		t.Errorf("RecvWait with an ended context: %v", err)
	}
}

// A deadline on a context derived from the task's ends the wait.
func TestTaskDeadline(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		_, err := c.RecvWait(dctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("RecvWait: %v, want DeadlineExceeded", err)
		}
		i, err := channel.Select(dctx, c.RecvCase())
		if i != -1 || !errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("Select = (%d, %v), want (-1, DeadlineExceeded)", i, err)
		}
		if c.TrySend(1) {
			return 0, errors.New("a timed-out receiver took an item")
		}
		return 0, nil
	})
	if _, err := spindletest.Await(t, f); err != nil {
		t.Fatal(err)
	}
}

// When the executor closes, waiting tasks fail with executor.ErrClosed and
// move nothing, whichever way they wait in; a task whose hand-off already
// happened keeps its item.
func TestExecutorCloseReleasesTasks(t *testing.T) {
	for _, r := range receivers {
		if !r.task {
			continue
		}
		t.Run("receiver/"+r.name, func(t *testing.T) {
			ex := executor.New()
			c, never := channel.New[int](ex, 0), channel.New[int](ex, 0)
			var f *future.Future[int]
			ex.Drive(func() { f = r.recv(ex, c, never) })
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := peek(t, f); !errors.Is(err, executor.ErrClosed) {
				t.Errorf("waiting receiver: %v, want executor.ErrClosed", err)
			}
		})
	}
	for _, snd := range senders {
		if !snd.task {
			continue
		}
		t.Run("sender/"+snd.name, func(t *testing.T) {
			ex := executor.New()
			c, never := channel.New[int](ex, 0), channel.New[int](ex, 0)
			var f *future.Future[struct{}]
			ex.Drive(func() { f = snd.send(ex, c, never, 1) })
			if err := ex.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := peek(t, f); !errors.Is(err, executor.ErrClosed) {
				t.Errorf("waiting sender: %v, want executor.ErrClosed", err)
			}
		})
	}
	t.Run("hand-off before close", func(t *testing.T) {
		ex := executor.New()
		d := channel.New[int](ex, 0)
		var sendErr, recvErr error
		got := 0
		ex.Drive(func() {
			future.Spawn(ex, func(ctx context.Context) (int, error) { sendErr = d.SendWait(ctx, 1); return 0, nil })
			future.Spawn(ex, func(ctx context.Context) (int, error) { got, recvErr = d.RecvWait(ctx); return 0, nil })
		})
		if err := ex.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ex.Close(); err != nil { // again: idempotent
			t.Fatal(err)
		}
		// The sender queued first, so the receiving task took its item at once.
		if sendErr != nil || recvErr != nil || got != 1 {
			t.Fatalf("hand-off before close: send %v, recv (%d, %v)", sendErr, got, recvErr)
		}
	})
}

func TestSelectExactlyOnce(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	a := channel.New[int](ex, 1)
	b := channel.New[int](ex, 1)
	out := channel.New[int](ex, 0)
	ex.Drive(func() {
		a.TrySend(1)
		b.TrySend(2)
		ra, rb := a.RecvCase(), b.RecvCase()
		i, err := channel.TrySelect(ra, rb)
		if i != 0 || err != nil || ra.Value() != 1 {
			t.Errorf("TrySelect = (%d, %v, %d), want (0, nil, 1): the first ready case wins", i, err, ra.Value())
		}
		if b.Len() != 1 {
			t.Error("the case not chosen moved its item")
		}
		i, err = channel.TrySelect(ra, rb)
		if i != 1 || err != nil || rb.Value() != 2 || ra.Value() != 0 {
			t.Errorf("TrySelect = (%d, %v, %d, %d), want (1, nil, 2, 0)", i, err, rb.Value(), ra.Value())
		}
		if i, err := channel.TrySelect(ra, rb, out.SendCase(3)); i != -1 || err != nil {
			t.Errorf("TrySelect with nothing ready = (%d, %v), want (-1, nil)", i, err)
		}
		if out.TrySend(0) {
			t.Error("TrySelect left a waiter behind")
		}
	})

	// A pending future select over receives on a and b and a send on out:
	// the send happens, and the receives then move nothing.
	var sel *future.Future[int]
	ex.Drive(func() {
		sel = channel.SelectFuture(a.RecvCase(), b.RecvCase(), out.SendCase(42))
		pending(t, sel, "SelectFuture with nothing ready")
		if v, ok := out.TryRecv(); !ok || v != 42 {
			t.Errorf("TryRecv from the select's send = (%v, %v)", v, ok)
		}
		if i, err := peek(t, sel); i != 2 || err != nil {
			t.Errorf("SelectFuture = (%d, %v), want (2, nil)", i, err)
		}
		if !a.TrySend(10) || !b.TrySend(20) {
			t.Error("TrySend to buffered channels failed")
		}
		if a.Len() != 1 || b.Len() != 1 {
			t.Errorf("a finished select took an item: Len %d, %d", a.Len(), b.Len())
		}
		a.TryRecv()
		b.TryRecv()
	})

	// A task select receives exactly one of two items sent together.
	var ra, rb *channel.RecvCase[int]
	var f *future.Future[int]
	ex.Drive(func() {
		ra, rb = a.RecvCase(), b.RecvCase()
		f = future.Spawn(ex, func(ctx context.Context) (int, error) { return channel.Select(ctx, ra, rb) })
	})
	ex.Drive(func() {
		b.TrySend(7) // wakes the select
		a.TrySend(8) // must stay in a
	})
	if i, err := peek(t, f); i != 1 || err != nil || rb.Value() != 7 {
		t.Errorf("Select = (%d, %v, %d), want (1, nil, 7)", i, err, rb.Value())
	}
	ex.Drive(func() {
		if v, ok := a.TryRecv(); !ok || v != 8 {
			t.Errorf("a = (%v, %v), want (8, true): the select took a second item", v, ok)
		}
	})
}

// A select with a receive and a send on the same channel happens once.
func TestSelectSendAndRecvSameChannel(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	ex.Drive(func() {
		rc, sc := c.RecvCase(), c.SendCase(5)
		f := channel.SelectFuture(rc, sc)
		pending(t, f, "self-select")
		if !c.TrySend(1) { // meets the receive case
			t.Fatal("TrySend did not meet the select's receive")
		}
		if i, _ := peek(t, f); i != 0 || rc.Value() != 1 {
			t.Errorf("select = %d with %d, want 0 with 1", i, rc.Value())
		}
		if v, ok := c.TryRecv(); ok {
			t.Errorf("the select's send also happened: got %d", v)
		}
	})
}

func TestPollRecv(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	for _, capacity := range []int{0, 2} {
		c := channel.New[int](ex, capacity)
		w1, w2 := &countWaker{}, &countWaker{}
		var s *future.Future[struct{}]
		ex.Drive(func() {
			if _, ok, err := c.PollRecv(w1); ok || err != nil {
				t.Fatalf("cap %d: PollRecv on empty = (%v, %v)", capacity, ok, err)
			}
			if _, ok, _ := c.PollRecv(w2); ok { // replaces w1
				t.Fatal("PollRecv on empty got an item")
			}
			s = c.Send(1)
			if w1.n != 0 || w2.n != 1 {
				t.Errorf("cap %d: wakes = %d, %d; want 0, 1 (only the last poll's waker)", capacity, w1.n, w2.n)
			}
			c.Send(2)
			if w2.n != 1 {
				t.Errorf("cap %d: woken %d times, want once per poll", capacity, w2.n)
			}
			if v, ok, err := c.PollRecv(w2); v != 1 || !ok || err != nil {
				t.Errorf("cap %d: PollRecv = (%v, %v, %v), want (1, true, nil)", capacity, v, ok, err)
			}
			if _, err := peek(t, s); err != nil {
				t.Errorf("cap %d: the polled sender: %v", capacity, err)
			}
			if v, ok, _ := c.PollRecv(w2); v != 2 || !ok {
				t.Errorf("cap %d: second PollRecv = (%v, %v)", capacity, v, ok)
			}
			c.PollRecv(w2)
			c.Close()
			if w2.n != 2 {
				t.Errorf("cap %d: Close woke the poller %d times in all, want 2", capacity, w2.n)
			}
			if _, _, err := c.PollRecv(w2); !errors.Is(err, channel.ErrClosed) {
				t.Errorf("cap %d: PollRecv after Close: %v", capacity, err)
			}
		})
	}
}

// All ranges over the items until the channel is closed and drained; a
// break takes nothing more.
func TestAll(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 2)
	var got []int
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		for v := range c.All(ctx) {
			got = append(got, v)
			if v == 3 {
				break
			}
		}
		return 0, nil
	})
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		for i := 1; i <= 5; i++ {
			if err := c.SendWait(ctx, i); err != nil {
				return 0, err
			}
		}
		c.Close()
		return 0, nil
	})
	ex.RunUntilIdle()
	if _, err := peek(t, f); err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("All = %v, %v; want [1 2 3]", got, err)
	}
	var rest []int
	g := future.Spawn(ex, func(ctx context.Context) (int, error) {
		for v := range c.All(ctx) {
			rest = append(rest, v)
		}
		return 0, nil
	})
	ex.RunUntilIdle()
	if _, err := peek(t, g); err != nil || fmt.Sprint(rest) != "[4 5]" {
		t.Fatalf("All after the break = %v, %v; want [4 5]", rest, err)
	}
}

// All with a context that is not the task's own watches it for the whole
// range: items flow through many waits; when ctx ends while the body is
// busy elsewhere, the range takes what is there at once and then stops
// rather than wait; and when ctx ends while the range waits, it stops
// without taking an item.
func TestAllWithItsOwnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background()) // not the task's
	defer cancel()
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	gate := future.NewPromise[int](ex)
	busy := make(chan struct{})
	var got []int
	reader := future.Spawn(ex, func(tctx context.Context) (int, error) {
		for v := range c.All(ctx) {
			got = append(got, v)
			if v == 50 {
				if _, err := gate.Future().Await(tctx); err != nil {
					return 0, err
				}
			}
		}
		return len(got), ctx.Err()
	})
	writer := future.Spawn(ex, func(tctx context.Context) (int, error) {
		for i := 1; i <= 100; i++ {
			if err := c.SendWait(tctx, i); err != nil {
				return i, err
			}
			if i == 50 {
				// Still on the loop: the writer goes on to wait with 51
				// before anything the test does reaches the reader.
				close(busy)
			}
		}
		return 0, nil
	})
	spindletest.Recv(t, busy)
	cancel()
	gate.Resolve(0)
	// The reader holds 50 (or is about to) and waits for the gate; the
	// writer waits with 51 when the body goes on: it is taken at once,
	// then the range stops instead of waiting for 52.
	if n, err := spindletest.Await(t, reader); n != 51 || !errors.Is(err, context.Canceled) {
		t.Fatalf("reader = (%d, %v), want (51, context.Canceled)", n, err)
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("item %d is %d", i, v)
		}
	}
	// A range that waits when ctx ends stops, and takes nothing.
	idle := channel.New[int](ex, 0)
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := future.Spawn(ex, func(context.Context) (int, error) {
		n := 0
		for range idle.All(ctx2) {
			n++
		}
		return n, ctx2.Err()
	})
	if err := ex.Submit(cancel2); err != nil { // runs after the task has started waiting
		t.Fatal(err)
	}
	if n, err := spindletest.Await(t, second); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting reader = (%d, %v), want (0, context.Canceled)", n, err)
	}
	// 52 is still the writer's: the first range took nothing after 51.
	if v, err := future.Do(context.Background(), ex, func() (int, error) {
		v, ok := c.TryRecv()
		if !ok {
			return 0, errors.New("no sender waiting")
		}
		c.Close()
		return v, nil
	}); v != 52 || err != nil {
		t.Fatalf("after the ranges: (%d, %v), want 52", v, err)
	}
	if i, err := spindletest.Await(t, writer); i != 53 || !errors.Is(err, channel.ErrClosed) {
		t.Fatalf("writer = (%d, %v), want (53, ErrClosed)", i, err)
	}
}

// A 100,000-item pipeline between tasks: producer -> doubler -> consumer,
// through a rendezvous channel and a buffered one, on a running loop.
func TestPipeline(t *testing.T) {
	const n = 100_000
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	c1 := channel.New[int](ex, 0)
	c2 := channel.New[int](ex, 16)
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		defer c1.Close()
		for i := range n {
			if err := c1.SendWait(ctx, i); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		defer c2.Close()
		for v := range c1.All(ctx) {
			if err := c2.SendWait(ctx, 2*v); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	consumer := future.Spawn(ex, func(ctx context.Context) (int, error) {
		next := 0
		for v := range c2.All(ctx) {
			if v != 2*next {
				return 0, fmt.Errorf("item %d is %d, want %d", next, v, 2*next)
			}
			next++
		}
		return next, nil
	})
	if got, err := spindletest.Await(t, consumer); got != n || err != nil {
		t.Fatalf("consumer = (%d, %v), want (%d, nil)", got, err, n)
	}
}

// Waiting in place allocates nothing once the channel's node pool is warm.
func TestTaskWaitAllocatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over a long run")
	}
	ex := executor.New()
	defer ex.Close()
	c := channel.New[int](ex, 0)
	const n = 20000
	var before, after runtime.MemStats
	future.Spawn(ex, func(ctx context.Context) (int, error) {
		for i := range n {
			if i == 1000 {
				runtime.ReadMemStats(&before)
			}
			if err := c.SendWait(ctx, i); err != nil {
				return 0, err
			}
		}
		runtime.ReadMemStats(&after)
		return 0, nil
	})
	r := future.Spawn(ex, func(ctx context.Context) (int, error) {
		for range n {
			if _, err := c.RecvWait(ctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	ex.RunUntilIdle()
	if _, err := peek(t, r); err != nil {
		t.Fatal(err)
	}
	if per := float64(after.Mallocs-before.Mallocs) / (n - 1000); per > 0.01 {
		t.Errorf("%.3f allocs per hand-off, want 0", per)
	}
}

func TestBadInput(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	other := executor.New()
	defer other.Close()
	spindletest.MustPanic(t, "channel: ", "nil executor", func() { channel.New[int](nil, 0) })
	spindletest.MustPanic(t, "channel: ", "negative capacity -1", func() { channel.New[int](ex, -1) })
	var nilc *channel.Chan[int]
	spindletest.MustPanic(t, "channel: ", "nil channel", func() { nilc.Send(1) })
	spindletest.MustPanic(t, "channel: ", "nil channel", func() { nilc.TryRecv() })
	spindletest.MustPanic(t, "channel: ", "nil channel", func() { nilc.Cap() })
	spindletest.MustPanic(t, "channel: ", "nil channel", func() { nilc.All(context.Background()) })
	c := channel.New[int](ex, 1)
	if c.Cap() != 1 || c.Executor() != ex {
		t.Error("Cap or Executor wrong off the loop")
	}
	spindletest.MustPanic(t, "channel: ", "does not hold the loop", func() { c.TrySend(1) })
	spindletest.MustPanic(t, "channel: ", "does not hold the loop", func() { c.Len() })
	spindletest.MustPanic(t, "channel: ", "does not hold the loop", func() { c.Recv() })
	spindletest.MustPanic(t, "channel: ", "does not hold the loop", func() { c.RecvWait(context.Background()) })
	spindletest.MustPanic(t, "channel: ", "nil channel", func() { nilc.SendWait(context.Background(), 1) })

	var msgs []string
	catch := func(fn func()) {
		defer func() { msgs = append(msgs, fmt.Sprint(recover())) }()
		fn()
	}
	d := channel.New[int](other, 0)
	var dcase channel.Case
	other.Drive(func() { dcase = d.RecvCase() })
	ex.Drive(func() {
		catch(func() { channel.TrySelect() })
		catch(func() { channel.TrySelect(nil) })
		catch(func() { c.PollRecv(nil) })
		catch(func() { channel.SelectFuture(c.RecvCase(), dcase) })
	})
	want := []string{
		"channel: TrySelect of no cases",
		"channel: TrySelect with a nil case",
		"channel: PollRecv with nil Waker",
		"channel: SelectFuture of cases on channels bound to different executors",
	}
	if len(msgs) != len(want) {
		t.Fatalf("panics %q", msgs)
	}
	for i := range want {
		if !strings.HasPrefix(msgs[i], want[i]) {
			t.Errorf("panic %d = %q, want prefix %q", i, msgs[i], want[i])
		}
	}
	// On the loop outside a task the waiting operations complete what they
	// can at once and return future.ErrDeadlock where they would wait, as
	// Await does.
	var errs []error
	ex.Drive(func() {
		e := channel.New[int](ex, 1)
		errs = append(errs, e.SendWait(context.Background(), 1)) // room: sent
		errs = append(errs, e.SendWait(context.Background(), 2)) // full
		v, err := e.RecvWait(context.Background())
		errs = append(errs, err)
		if v != 1 {
			t.Errorf("RecvWait = %d, want 1", v)
		}
		_, err = e.RecvWait(context.Background()) // empty
		errs = append(errs, err)
		_, err = channel.Select(context.Background(), e.RecvCase())
		errs = append(errs, err)
	})
	if want := []error{nil, future.ErrDeadlock, nil, future.ErrDeadlock, future.ErrDeadlock}; !slices.Equal(errs, want) {
		t.Errorf("waits on the loop outside a task = %v, want %v", errs, want)
	}
	if !strings.HasPrefix(channel.ErrClosed.Error(), "channel: ") {
		t.Errorf("ErrClosed = %q", channel.ErrClosed)
	}
}

// Send, Recv and SelectFuture futures still pending when the executor
// closes fail with executor.ErrClosed, and their OnComplete callbacks run.
func TestPendingFuturesCompleteOnExecutorClose(t *testing.T) {
	ex := executor.New()
	ex.Start()
	const each = 50
	var mu sync.Mutex
	var errs []error
	record := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var pending []interface{ Ready() bool }
	if _, err := future.Do(context.Background(), ex, func() (int, error) {
		full := channel.New[int](ex, 0)
		empty := channel.New[int](ex, 0)
		other := channel.New[int](ex, 0)
		for i := range each {
			s := full.Send(i)
			s.OnComplete(func(_ struct{}, err error) { record(err) })
			r := empty.Recv()
			r.OnComplete(func(_ int, err error) { record(err) })
			sel := channel.SelectFuture(other.RecvCase(), empty.RecvCase())
			sel.OnComplete(func(_ int, err error) { record(err) })
			pending = append(pending, s, r, sel)
		}
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Nothing but the loop refers to the channels now: it keeps them
	// while they have pending futures.
	runtime.GC()
	runtime.GC()
	ex.Close()
	for i, f := range pending {
		if !f.Ready() {
			t.Fatalf("future %d still pending after Close", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 3*each {
		t.Fatalf("%d OnComplete callbacks ran, want %d", len(errs), 3*each)
	}
	for _, err := range errs {
		if !errors.Is(err, executor.ErrClosed) {
			t.Fatalf("pending channel future failed with %v, want executor.ErrClosed", err)
		}
	}
}

// A channel whose pending futures have all completed (or been swept) is
// not kept alive by its loop, whatever it did before.
func TestChannelWithoutPendingFuturesIsCollected(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	var gone []weak.Pointer[channel.Chan[int]]
	ex.Drive(func() {
		for i := range 3 {
			c := channel.New[int](ex, 1)
			switch i {
			case 0: // a Recv that a Send completes
				r := c.Recv()
				c.Send(1)
				if _, ok := r.Peek(); !ok {
					t.Fatal("Recv not completed by Send")
				}
			case 1: // a Send that a Recv completes, after the buffer filled
				c.Send(1)
				s := c.Send(2)
				c.Recv()
				if _, ok := s.Peek(); !ok {
					t.Fatal("Send not completed by Recv")
				}
			case 2: // a cancelled Recv, dropped by Close
				c.Recv().Cancel()
				c.Close()
			}
			gone = append(gone, weak.Make(c))
		}
	})
	runtime.GC()
	runtime.GC()
	for i, w := range gone {
		if w.Value() != nil {
			t.Errorf("channel %d, with no pending future, is kept alive", i)
		}
	}
}
