package merge

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// panicky is a queue whose PollRecv panics with boom once boom is set.
type panicky struct {
	queue[int]
	boom any
}

func (p *panicky) PollRecv(w executor.Waker) (int, bool, error) {
	if p.boom != nil {
		panic(p.boom)
	}
	return p.queue.PollRecv(w)
}

// explode makes the next poll panic with v and wakes the merge.
func (p *panicky) explode(v any) {
	p.boom = v
	p.wake()
}

// panicValue returns the value carried by err, which must be a
// *future.PanicError.
func panicValue(t *testing.T, what string, err error) any {
	t.Helper()
	var pe *future.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v (%T), want a *future.PanicError", what, err, err)
	}
	if len(pe.Stack) == 0 {
		t.Errorf("%s: PanicError without a stack", what)
	}
	return pe.Value
}

// newPanicMerge returns an executor whose panic handler counts into handled,
// and a merge of a panicky stream and a plain one.
func newPanicMerge(handled *atomic.Int64) (*executor.Executor, *Merged[int], *panicky, *queue[int]) {
	ex := executor.New(executor.WithPanicHandler(func(any) { handled.Add(1) }))
	bad, good := &panicky{}, &queue[int]{}
	var m *Merged[int]
	ex.Drive(func() { m = Merge[int](ex, bad, good) })
	return ex, m, bad, good
}

// A substream that panics while Recv receivers wait fails the first
// receiver with the panic; the receivers behind it, and later ones, get the
// items of the other substreams.
func TestSubstreamPanicRecv(t *testing.T) {
	var handled atomic.Int64
	ex, m, bad, good := newPanicMerge(&handled)
	defer ex.Close()
	var r1, r2 *future.Future[int]
	ex.Drive(func() {
		r1, r2 = m.Recv(), m.Recv()
		bad.explode("substream exploded")
	})
	if !r1.Ready() || r2.Ready() {
		t.Fatalf("after the panic: first receiver ready %v, second %v; want true, false", r1.Ready(), r2.Ready())
	}
	if _, err := spindletest.Await(t, r1); panicValue(t, "Recv", err) != "substream exploded" {
		t.Errorf("Recv: %v, want the panic", err)
	}
	ex.Drive(func() { good.Push(5) })
	if v, err := spindletest.Await(t, r2); v != 5 || err != nil {
		t.Errorf("receiver queued behind the panic: %d %v, want 5", v, err)
	}
	var r3 *future.Future[int]
	ex.Drive(func() {
		r3 = m.Recv()
		good.Push(6)
	})
	if v, err := spindletest.Await(t, r3); v != 6 || err != nil {
		t.Errorf("later receiver: %d %v, want 6", v, err)
	}
	ex.Drive(func() {
		if m.Len() != 1 {
			t.Errorf("Len %d after the panic, want 1: the panicking substream is dropped", m.Len())
		}
		m.check(t)
	})
	if n := handled.Load(); n != 0 {
		t.Errorf("panic handler called %d times; the receiver carries the panic", n)
	}
}

// A substream that panics while tasks wait in RecvWait: the first task's
// RecvWait returns the panic as an error and the task goes on receiving;
// the task queued behind it gets the next item.
func TestSubstreamPanicRecvWait(t *testing.T) {
	var handled atomic.Int64
	ex, m, bad, good := newPanicMerge(&handled)
	defer ex.Close()
	var first, second *future.Future[[]any]
	ex.Drive(func() {
		receive := func(n int) func(ctx context.Context) ([]any, error) {
			return func(ctx context.Context) ([]any, error) {
				var got []any
				for range n {
					v, err := m.RecvWait(ctx)
					if err != nil {
						got = append(got, panicValue(t, "RecvWait", err))
						continue
					}
					got = append(got, v)
				}
				return got, nil
			}
		}
		first, second = future.Spawn(ex, receive(2)), future.Spawn(ex, receive(1))
	})
	ex.Drive(func() { bad.explode(errBoom) })
	ex.Drive(func() { good.Push(1, 2) })
	got1, err1 := spindletest.Await(t, first)
	got2, err2 := spindletest.Await(t, second)
	if err1 != nil || err2 != nil || len(got1) != 2 || got1[0] != errBoom || got1[1] != 2 || len(got2) != 1 || got2[0] != 1 {
		t.Errorf("first task %v %v, second %v %v; want [boom 2] and [1]", got1, err1, got2, err2)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("panic handler called %d times; the receiver carries the panic", n)
	}
}

// PollRecv returns a substream's panic as that substream's failure, once:
// the substream is dropped and the others go on. A panic whose value is
// ErrClosed is a failure too, not a quiet end.
func TestSubstreamPanicPollRecv(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	ex.Drive(func() {
		bad, good := &panicky{}, &queue[int]{}
		m := Merge[int](ex, bad, good)
		var w countWaker
		m.PollRecv(&w)
		bad.explode(ErrClosed)
		_, ok, err := m.PollRecv(&w)
		if ok || panicValue(t, "PollRecv", err) != ErrClosed {
			t.Errorf("PollRecv: %v %v, want the panic", ok, err)
		}
		if m.Len() != 1 || m.Ended() {
			t.Errorf("Len %d ended %v, want the other substream live", m.Len(), m.Ended())
		}
		m.check(t)
		good.Push(3)
		if v, ok, err := m.PollRecv(&w); !ok || v != 3 {
			t.Errorf("after the panic: %d %v %v, want 3", v, ok, err)
		}
	})
}

// All yields a substream's panic, including one with the value ErrClosed,
// and goes on.
func TestSubstreamPanicAll(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	bad, good := &panicky{}, &queue[int]{}
	var task *future.Future[[]any]
	ex.Drive(func() {
		m := Merge[int](ex, bad, good)
		task = future.Spawn(ex, func(ctx context.Context) ([]any, error) {
			var got []any
			for v, err := range m.All(ctx) {
				if err != nil {
					got = append(got, panicValue(t, "All", err))
					continue
				}
				got = append(got, v)
			}
			return got, nil
		})
	})
	ex.Drive(func() { bad.explode(ErrClosed) })
	ex.Drive(func() {
		good.Push(4)
		good.Close()
	})
	got, err := spindletest.Await(t, task)
	if err != nil || len(got) != 2 || got[0] != ErrClosed || got[1] != 4 {
		t.Errorf("All: %v %v, want [ErrClosed-panic 4]", got, err)
	}
}
