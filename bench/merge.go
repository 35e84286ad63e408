package main

// BenchmarkMerge: merging N streams (futures-concurrency's merge benchmark).
//
// N streams; a driver sends one item at a time to a stream chosen by a fixed
// pseudo-random order (math/rand, seed 42, precomputed), and the merged
// stream receives it before the next send, so each item costs exactly one
// wake of one substream. Figures are per item.
//
//   - spindle: merge.Merge over N channels of capacity 1 (channel.New,
//     TrySend), received with PollRecv by a spawned task (which would
//     suspend if an item were not there at once).
//   - poll_all: the same driver and channels, merged by pollAll below,
//     which polls every substream on each wake (the O(N) design perfect
//     waking replaces).
//   - reflect_select: reflect.Select over N Go channels of capacity 1.
//   - goroutine_fanin: N goroutines forwarding N Go channels of capacity 1
//     into one unbuffered channel.

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/merge"
)

func init() {
	for _, n := range []int{10, 100, 1000} {
		g := fmt.Sprintf("n=%d/", n)
		base := g + "goroutine_fanin"
		register(
			benchCase{Group: "Merge", Name: g + "spindle", Unit: "item", Baseline: base, Fn: func(b *testing.B) { mergeDriven(b, n, false) }},
			benchCase{Group: "Merge", Name: g + "poll_all", Unit: "item", Baseline: base, Fn: func(b *testing.B) { mergeDriven(b, n, true) }},
			benchCase{Group: "Merge", Name: g + "reflect_select", Unit: "item", Baseline: base, Fn: func(b *testing.B) { mergeReflectSelect(b, n) }},
			benchCase{Group: "Merge", Name: base, Unit: "item", Fn: func(b *testing.B) { mergeGoroutineFanin(b, n) }},
		)
	}
}

// mergeOrderLen is the length of the precomputed send order (a power of
// two; item i goes to stream order[i&(mergeOrderLen-1)]).
const mergeOrderLen = 1 << 16

// mergeOrder returns the fixed pseudo-random order in which the driver
// picks the stream for each item.
func mergeOrder(n int) []int {
	r := rand.New(rand.NewSource(42))
	order := make([]int, mergeOrderLen)
	for i := range order {
		order[i] = r.Intn(n)
	}
	return order
}

// mergeDriven runs the spindle case, or the poll_all case when pollEvery is
// set, on a stepped executor: a spawned task sends each item and receives
// it from the merged stream before the next.
func mergeDriven(b *testing.B, n int, pollEvery bool) {
	ex := executor.New()
	defer ex.Close()
	order := mergeOrder(n)
	srcs := make([]*channel.Chan[int], n)
	subs := make([]merge.Stream[int], n)
	for i := range srcs {
		srcs[i] = channel.New[int](ex, 1)
		subs[i] = srcs[i]
	}
	f := future.Spawn(ex, func(ctx context.Context) (int, error) {
		var merged future.Poller[int] // converted once: Next takes it without an interface conversion per item
		if pollEvery {
			merged = newPollAll(subs)
		} else {
			merged = merge.Merge(ex, subs...)
		}
		// Warm: one item through every channel, so their buffers have grown.
		for k, c := range srcs {
			if !c.TrySend(-1) {
				return 0, fmt.Errorf("warm-up: TrySend on channel %d failed", k)
			}
			if v, err := future.Next(ctx, merged); err != nil || v != -1 {
				return 0, fmt.Errorf("warm-up: received %d, %v", v, err)
			}
		}
		m := startMeter(b)
		for i := range b.N {
			if !srcs[order[i&(mergeOrderLen-1)]].TrySend(i) {
				return i, fmt.Errorf("item %d: TrySend on a full stream", i)
			}
			v, err := future.Next(ctx, merged)
			if err != nil || v != i {
				return i, fmt.Errorf("item %d: received %d, %v", i, v, err)
			}
		}
		m.Stop(b, "item", float64(b.N), -1)
		return b.N, nil
	})
	ex.RunUntilIdle()
	if r, ok := f.Peek(); !ok || r.Err != nil {
		b.Fatalf("driver: done=%v err=%v", ok, r.Err)
	}
}

// pollAll is the merge that perfect waking replaces: one waker shared by
// every substream, and on each wake a poll of every substream (from a
// rotating start, for fairness) until one yields an item.
type pollAll struct {
	subs   []merge.Stream[int]
	live   int
	next   int
	parent executor.Waker
	w      pollAllWaker
}

type pollAllWaker struct{ p *pollAll }

// Wake wakes the consumer. Loop only (the benchmark wakes on the loop).
func (w *pollAllWaker) Wake() {
	if p := w.p.parent; p != nil {
		w.p.parent = nil
		p.Wake()
	}
}

func newPollAll(subs []merge.Stream[int]) *pollAll {
	p := &pollAll{subs: append([]merge.Stream[int](nil), subs...), live: len(subs)}
	p.w.p = p
	return p
}

// PollRecv polls the substreams in turn until one yields an item.
func (p *pollAll) PollRecv(w executor.Waker) (int, bool, error) {
	p.parent = nil
	n := len(p.subs)
	for range n {
		i := p.next
		if p.next++; p.next == n {
			p.next = 0
		}
		s := p.subs[i]
		if s == nil {
			continue
		}
		v, ok, err := s.PollRecv(&p.w)
		if ok {
			return v, true, nil
		}
		if err != nil {
			p.subs[i] = nil
			p.live--
		}
	}
	if p.live == 0 {
		return 0, false, merge.ErrClosed
	}
	p.parent = w
	return 0, false, nil
}

// mergeReflectSelect: send on one of N Go channels, then reflect.Select
// over all N.
func mergeReflectSelect(b *testing.B, n int) {
	order := mergeOrder(n)
	chans := make([]chan int, n)
	cases := make([]reflect.SelectCase, n)
	for i := range chans {
		chans[i] = make(chan int, 1)
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(chans[i])}
	}
	m := startMeter(b)
	for i := range b.N {
		chans[order[i&(mergeOrderLen-1)]] <- i
		_, v, ok := reflect.Select(cases)
		if !ok || int(v.Int()) != i {
			b.Fatalf("item %d: received %v (ok=%v)", i, v, ok)
		}
	}
	m.Stop(b, "item", float64(b.N), -1)
}

// mergeGoroutineFanin: N goroutines each forward one Go channel into a
// shared unbuffered channel the driver receives from.
func mergeGoroutineFanin(b *testing.B, n int) {
	order := mergeOrder(n)
	ins := make([]chan int, n)
	out := make(chan int)
	var wg sync.WaitGroup
	for i := range ins {
		ins[i] = make(chan int, 1)
		wg.Add(1)
		go func(in <-chan int) {
			defer wg.Done()
			for v := range in {
				out <- v
			}
		}(ins[i])
	}
	m := startMeter(b)
	for i := range b.N {
		ins[order[i&(mergeOrderLen-1)]] <- i
		if v := <-out; v != i {
			b.Fatalf("item %d: received %d", i, v)
		}
	}
	m.Stop(b, "item", float64(b.N), -1)
	for _, in := range ins {
		close(in)
	}
	wg.Wait()
}
