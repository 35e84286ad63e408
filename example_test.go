package spindle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// The README's quick start.
func Example() {
	ctx := context.Background()
	ex := executor.New(executor.WithName("app"))
	ex.Start()
	defer ex.Close()

	// Hand work to the loop from any goroutine and wait for the result.
	n, err := future.Call(ex, func() (int, error) { return 40, nil }).Await(ctx)
	if err != nil {
		panic(err)
	}

	// Chain continuations: each runs on the loop; errors skip the callbacks.
	p := future.NewPromise[int](ex)
	sum := future.Then(p.Future(), func(v int) (int, error) { return v + 2, nil })
	p.Resolve(n)

	// Or write straight-line tasks: Await suspends the task, not the loop.
	total := future.Spawn(ex, func(ctx context.Context) (int, error) {
		v, err := sum.Await(ctx)
		if err != nil {
			return 0, err
		}
		_, err = future.Sleep(ex, time.Millisecond).Await(ctx)
		return v * 2, err
	})
	fmt.Println(total.Await(ctx))
	// Output: 84 <nil>
}
