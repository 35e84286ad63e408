package channel_test

import (
	"context"
	"fmt"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// A producer task and a consumer task pass items through a rendezvous
// channel, waiting in place: no future is allocated per item.
func Example() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	c := channel.New[string](ex, 0)
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		defer c.Close() // the consumer's range ends once it has everything
		for _, s := range []string{"one", "two", "three"} {
			if err := c.SendWait(ctx, s); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	consumer := future.Spawn(ex, func(ctx context.Context) (int, error) {
		n := 0
		for s := range c.All(ctx) {
			fmt.Println("got", s)
			n++
		}
		return n, nil
	})
	n, err := consumer.Await(context.Background())
	fmt.Println(n, err)
	// Output:
	// got one
	// got two
	// got three
	// 3 <nil>
}

// In callbacks, Send and Recv return futures. An operation that can
// complete at once returns a completed future.
func ExampleChan_Recv() {
	ex := executor.New()
	defer ex.Close()

	c := channel.New[int](ex, 1)
	ex.Submit(func() {
		r := c.Recv() // nothing buffered yet: pending
		future.Then(r, func(v int) (struct{}, error) {
			fmt.Println("received", v)
			return struct{}{}, nil
		})
		s := c.Send(42) // a receiver waits: completes at once
		fmt.Println("send ready:", s.Ready())
		fmt.Println("immediate:", c.Send(7).Ready(), c.Len())
	})
	ex.RunUntilIdle() // drive the loop on this goroutine
	// Output:
	// send ready: true
	// immediate: true 1
	// received 42
}

// Close keeps buffered items receivable; receives fail with ErrClosed once
// the channel is drained.
func ExampleChan_Close() {
	ex := executor.New()
	defer ex.Close()

	c := channel.New[int](ex, 4)
	ex.Submit(func() {
		c.TrySend(1)
		c.TrySend(2)
		c.Close()
		fmt.Println(c.TrySend(3))
		for {
			v, ok := c.TryRecv()
			if !ok {
				break
			}
			fmt.Println(v)
		}
		_, err := c.Recv().Await(context.Background()) // completed: does not wait
		fmt.Println(err)
	})
	ex.RunUntilIdle()
	// Output:
	// false
	// 1
	// 2
	// channel: closed
}

// A task waits for whichever of two channels is ready first; exactly one
// case happens.
func ExampleSelect() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	jobs := channel.New[string](ex, 0)
	quit := channel.New[struct{}](ex, 0)
	worker := future.Spawn(ex, func(ctx context.Context) (int, error) {
		done := 0
		job, stop := jobs.RecvCase(), quit.RecvCase()
		for {
			i, err := channel.Select(ctx, job, stop)
			if err != nil {
				return done, err
			}
			if i == 1 {
				return done, nil
			}
			fmt.Println("job", job.Value())
			done++
		}
	})
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		for _, j := range []string{"a", "b"} {
			if err := jobs.SendWait(ctx, j); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, quit.SendWait(ctx, struct{}{})
	})
	fmt.Println(worker.Await(context.Background()))
	// Output:
	// job a
	// job b
	// 2 <nil>
}

// SelectFuture is the select for callbacks; cancelling its future
// withdraws every case.
func ExampleSelectFuture() {
	ex := executor.New()
	defer ex.Close()

	a := channel.New[int](ex, 0)
	b := channel.New[int](ex, 0)
	ex.Submit(func() {
		ra, rb := a.RecvCase(), b.RecvCase()
		sel := channel.SelectFuture(ra, rb)
		future.Then(sel, func(i int) (struct{}, error) {
			fmt.Println("case", i, "got", rb.Value())
			return struct{}{}, nil
		})
		fmt.Println(b.TrySend(5), a.TrySend(6)) // the select takes only one

		late := channel.SelectFuture(a.RecvCase())
		late.Cancel()
		fmt.Println(a.TrySend(7)) // a cancelled select receives nothing
	})
	ex.RunUntilIdle()
	// Output:
	// true false
	// false
	// case 1 got 5
}

type printWaker struct{}

func (printWaker) Wake() { fmt.Println("woken") }

// PollRecv is the poll form of a receive: nothing there registers the
// waker, which the channel wakes once an item can be received.
func ExampleChan_PollRecv() {
	ex := executor.New()
	defer ex.Close()

	c := channel.New[string](ex, 1)
	ex.Submit(func() {
		_, ok, err := c.PollRecv(printWaker{})
		fmt.Println(ok, err)
		c.TrySend("hi")
		v, ok, err := c.PollRecv(printWaker{})
		fmt.Println(v, ok, err)
	})
	ex.RunUntilIdle()
	// Output:
	// false <nil>
	// woken
	// hi true <nil>
}
