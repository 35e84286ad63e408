package merge_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/merge"
)

// A task ranges over the merge of two channels: items come in the order
// their channels became ready, and the range ends once both are closed and
// drained.
func ExampleMerge() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	got, err := future.Spawn(ex, func(ctx context.Context) ([]string, error) {
		a := channel.New[string](ex, 4)
		b := channel.New[string](ex, 4)
		m := merge.Merge[string](ex, a, b)

		a.TrySend("a1")
		b.TrySend("b1")
		a.TrySend("a2")
		a.Close()
		b.Close()

		var got []string
		for v, err := range m.All(ctx) {
			if err != nil {
				return got, err
			}
			got = append(got, v)
		}
		return got, nil
	}).Await(context.Background())
	fmt.Println(got, err)
	// Output: [a1 b1 a2] <nil>
}

// Recv gives callbacks a future per item; once every stream has ended it
// fails with channel.ErrClosed.
func ExampleMerged_Recv() {
	ex := executor.New()
	defer ex.Close()

	ex.Submit(func() {
		jobs := channel.New[int](ex, 1)
		m := merge.Merge[int](ex, jobs)
		for range 2 {
			m.Recv().OnComplete(func(v int, err error) {
				fmt.Println("received", v, "closed:", errors.Is(err, channel.ErrClosed))
			})
		}
		jobs.Send(7) // wakes the merge, which serves the first Recv
		jobs.Close() // the buffered 7 stays receivable
	})
	ex.RunUntilIdle()
	// Output:
	// received 7 closed: false
	// received 0 closed: true
}

// A merge made by New is a group that grows: it waits while it has no
// stream, takes streams as they arrive, and ends once sealed and drained.
func ExampleNew() {
	ex := executor.New()
	defer ex.Close()

	ex.Submit(func() {
		m := merge.New[string](ex)
		var recv func()
		recv = func() {
			m.Recv().OnComplete(func(v string, err error) {
				if err != nil {
					fmt.Println("end:", err)
					return
				}
				fmt.Println(v)
				recv()
			})
		}
		recv() // waits: the group is empty but open

		for _, name := range []string{"conn1", "conn2"} {
			c := channel.New[string](ex, 1)
			m.Add(c)
			c.TrySend("hello from " + name)
			c.Close()
		}
		m.Seal() // no more streams: end once these are drained
	})
	ex.RunUntilIdle()
	// Output:
	// hello from conn1
	// hello from conn2
	// end: channel: closed
}

// A handle removes its stream from a running merge; the merge then never
// polls it again.
func ExampleHandle_Remove() {
	ex := executor.New()
	defer ex.Close()

	ex.Submit(func() {
		fast, noisy := channel.New[string](ex, 4), channel.New[string](ex, 4)
		m := merge.New[string](ex)
		m.Add(fast)
		h := m.Add(noisy)

		noisy.TrySend("noise")
		h.Remove()
		fast.TrySend("signal")

		v, ok, err := m.PollRecv(nil)
		fmt.Println(v, ok, err, m.Len())
	})
	ex.RunUntilIdle()
	// Output: signal true <nil> 1
}

type printWaker struct{}

func (printWaker) Wake() { fmt.Println("  woken") }

// PollRecv is the poll form, for stream combinators: the merge polls only
// the substreams that woke, and wakes its consumer once per transition from
// nothing ready to something ready.
func ExampleMerged_PollRecv() {
	ex := executor.New()
	defer ex.Close()

	ex.Submit(func() {
		chans := make([]*channel.Chan[int], 1000)
		streams := make([]merge.Stream[int], len(chans))
		for i := range chans {
			chans[i] = channel.New[int](ex, 1)
			streams[i] = chans[i]
		}
		m := merge.Merge(ex, streams...)

		var w printWaker
		_, ok, _ := m.PollRecv(w) // polls all 1000 once, to register their wakers
		fmt.Println("ready:", ok)

		fmt.Println("send to 7 and 912")
		chans[7].TrySend(70)   // nothing was ready: the consumer is woken
		chans[912].TrySend(91) // something is ready already: no wake
		for {
			v, ok, _ := m.PollRecv(w) // polls only 7 and 912
			if !ok {
				break
			}
			fmt.Println("got", v)
		}
	})
	ex.RunUntilIdle()
	// Output:
	// ready: false
	// send to 7 and 912
	//   woken
	// got 70
	// got 91
}
