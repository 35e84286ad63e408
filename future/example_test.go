package future_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Then chains callbacks that run on the loop once the value is there; an
// error would skip them and reach the end of the chain.
func ExampleThen() {
	ex := executor.New()
	defer ex.Close()

	p := future.NewPromise[int](ex)
	doubled := future.Then(p.Future(), func(v int) (int, error) { return v * 2, nil })
	text := future.Then(doubled, func(v int) (string, error) { return fmt.Sprint("got ", v), nil })

	p.Resolve(21)
	ex.RunUntilIdle() // run the loop on this goroutine until nothing is ready

	s, err := text.Await(context.Background())
	fmt.Println(s, err)
	// Output: got 42 <nil>
}

// Spawn runs straight-line code on the loop: Await suspends the task and
// lends the loop to other work until the awaited future completes.
func ExampleSpawn() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	p := future.NewPromise[string](ex)
	consumer := future.Spawn(ex, func(ctx context.Context) (string, error) {
		msg, err := p.Future().Await(ctx) // suspends; the producer runs meanwhile
		return "consumer got " + msg, err
	})
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		if _, err := future.Sleep(ex, time.Millisecond).Await(ctx); err != nil {
			return struct{}{}, err
		}
		p.Resolve("hello")
		return struct{}{}, nil
	})

	s, err := consumer.Await(context.Background())
	fmt.Println(s, err)
	// Output: consumer got hello <nil>
}

// Call hands work to the loop from any goroutine, so state owned by the loop
// needs no lock.
func ExampleCall() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	hits := map[string]int{} // touched only on the loop
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = future.Call(ex, func() (int, error) {
				hits["/"]++
				return hits["/"], nil
			}).Await(context.Background())
		}()
	}
	wg.Wait()

	n, _ := future.Call(ex, func() (int, error) { return hits["/"], nil }).Await(context.Background())
	fmt.Println("hits:", n)
	// Output: hits: 10
}

// All gathers results in input order and fails fast with the first error.
func ExampleAll() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	square := func(n int) *future.Future[int] {
		return future.Call(ex, func() (int, error) { return n * n, nil })
	}
	vs, err := future.All(square(1), square(2), square(3)).Await(context.Background())
	fmt.Println(vs, err)

	_, err = future.All(square(4), future.Failed[int](ex, errors.New("no luck"))).Await(context.Background())
	fmt.Println(err)
	// Output:
	// [1 4 9] <nil>
	// no luck
}
