package merge

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// BenchmarkReceive measures the ways of receiving from a merge of n
// capacity-1 channels, one item at a time (sent to a channel picked by a
// fixed pseudo-random order, received before the next is sent):
//
//   - PollRecv: the driver polls the merge itself (bench's Merge/spindle);
//   - All, RecvWait: a consumer task waits in place, the driver is another
//     task that yields until the item has been received;
//   - Recv: the consumer task awaits a future per item.
func BenchmarkReceive(b *testing.B) {
	for _, n := range []int{10, 1000} {
		for _, mode := range []string{"PollRecv", "All", "RecvWait", "Recv"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) { benchReceive(b, n, mode) })
		}
	}
}

func benchReceive(b *testing.B, n int, mode string) {
	ex := executor.New()
	defer ex.Close()
	r := rand.New(rand.NewSource(42))
	order := make([]int, 1<<16)
	for i := range order {
		order[i] = r.Intn(n)
	}
	chans := make([]*channel.Chan[int], n)
	ss := make([]Stream[int], n)
	for i := range chans {
		chans[i] = channel.New[int](ex, 1)
		ss[i] = chans[i]
	}
	var m *Merged[int]
	got := 0
	consume := func(ctx context.Context) (int, error) {
		switch mode {
		case "All":
			for _, err := range m.All(ctx) {
				if err != nil {
					return got, err
				}
				got++
			}
		case "RecvWait":
			for {
				if _, err := m.RecvWait(ctx); err != nil {
					return got, nil
				}
				got++
			}
		case "Recv":
			for {
				if _, err := m.Recv().Await(ctx); err != nil {
					return got, nil
				}
				got++
			}
		}
		return got, nil
	}
	drive := func(ctx context.Context) (int, error) {
		fib := (*loop.Loop)(ex).CurrentFiber()
		if mode == "PollRecv" {
			m.PollRecv(fib)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			chans[order[i&(len(order)-1)]].TrySend(i)
			if mode == "PollRecv" {
				for {
					if _, ok, err := m.PollRecv(fib); ok || err != nil {
						break
					}
					fib.Suspend()
				}
				continue
			}
			for got <= i {
				if err := future.Yield(ctx); err != nil {
					return i, err
				}
			}
		}
		b.StopTimer()
		for _, c := range chans {
			c.Close()
		}
		return b.N, nil
	}
	if err := ex.Submit(func() {
		m = Merge(ex, ss...)
		if mode != "PollRecv" {
			future.Spawn(ex, consume)
		}
		future.Spawn(ex, drive)
	}); err != nil {
		b.Fatal(err)
	}
	ex.RunUntilIdle()
}
