package semaphore_test

import (
	"context"
	"fmt"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/semaphore"
)

// A semaphore bounds how many tasks use a resource at once; the others
// suspend in Acquire and are served in order.
func Example() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	sem := semaphore.New(ex, 2)
	inUse, most := 0, 0 // touched only on the loop
	g := future.NewGroup(context.Background(), ex)
	for range 6 {
		g.Go(func(ctx context.Context) error {
			if err := sem.Acquire(ctx, 1); err != nil {
				return err
			}
			defer sem.Release(1)
			inUse++
			most = max(most, inUse)
			err := future.Yield(ctx) // holds its unit while other tasks run
			inUse--
			return err
		})
	}
	err := g.Wait(context.Background())
	fmt.Println("at most", most, "at once;", err)
	// Output: at most 2 at once; <nil>
}

// TryAcquire never waits, and fails while anyone waits: no barging.
func ExampleSemaphore_TryAcquire() {
	ex := executor.New()
	defer ex.Close()

	sem := semaphore.New(ex, 3)
	fmt.Println(sem.TryAcquire(2)) // 1 unit left
	big := future.Spawn(ex, func(ctx context.Context) (int, error) {
		return 0, sem.Acquire(ctx, 3) // waits for all 3
	})
	ex.RunUntilIdle()              // run the loop here: the task starts and waits
	fmt.Println(sem.TryAcquire(1)) // 1 unit is free, but the request for 3 waits
	sem.Release(2)
	ex.RunUntilIdle()
	_, err := big.Await(context.Background())
	fmt.Println(err)
	// Output:
	// true
	// false
	// <nil>
}
