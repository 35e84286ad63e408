package future_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Go runs blocking work on a goroutine of its own; the task that awaits it
// suspends, and the loop serves other work meanwhile.
func ExampleGo() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	lookup := func(ctx context.Context, key string) (string, error) {
		// A blocking call: a database driver, a file, a cgo library.
		return "value of " + key, nil
	}
	row := future.Spawn(ex, func(ctx context.Context) (string, error) {
		return future.Go(ex, func(ctx context.Context) (string, error) { return lookup(ctx, "a") }).Await(ctx)
	})
	fmt.Println(row.Await(context.Background()))
	// Output: value of a <nil>
}

// Timeout bounds the wait for a future without cancelling it; its error
// matches context.DeadlineExceeded.
func ExampleTimeout() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	never := future.NewPromise[int](ex).Future()
	_, err := future.Timeout(never, 10*time.Millisecond).Await(context.Background())
	fmt.Println(errors.Is(err, context.DeadlineExceeded), never.Ready())
	// Output: true false
}

// A Group runs tasks with a bound on how many run at once and waits for
// them all; the first error cancels the others and is Wait's.
func ExampleGroup() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	results := make([]int, 5) // written by the tasks, on the loop
	g := future.NewGroup(context.Background(), ex)
	g.SetLimit(2)
	for i := range results {
		g.Go(func(ctx context.Context) error {
			if _, err := future.Sleep(ex, time.Millisecond).Await(ctx); err != nil {
				return err
			}
			results[i] = i * i
			return nil
		})
	}
	err := g.Wait(context.Background())
	fmt.Println(results, err)
	// Output: [0 1 4 9 16] <nil>
}

// WithTimeout gives up on work whose time is up and cancels it: the Go
// function's ctx ends, so it stops instead of running on unseen.
func ExampleWithTimeout() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	stopped := make(chan error, 1)
	slow := future.Go(ex, func(ctx context.Context) (string, error) {
		<-ctx.Done() // a call that takes longer than anyone waits
		stopped <- ctx.Err()
		return "", ctx.Err()
	})
	_, err := future.WithTimeout(slow, 10*time.Millisecond).Await(context.Background())
	fmt.Println(errors.Is(err, context.DeadlineExceeded), <-stopped)
	// Output: true context canceled
}

// GoContext runs blocking work under the caller's context: its values and
// deadline reach the function, and the future fails as soon as it ends.
func ExampleGoContext() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	type requestID struct{}
	ctx := context.WithValue(context.Background(), requestID{}, "req-42")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	f := future.GoContext(ctx, ex, func(ctx context.Context) (string, error) {
		id := ctx.Value(requestID{}).(string)
		<-ctx.Done() // the deadline ends it
		return id, ctx.Err()
	})
	_, err := f.Await(context.Background())
	fmt.Println(err)
	// Output: context deadline exceeded
}

// SpawnErr starts a task that has only an error to give.
func ExampleSpawnErr() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()

	var log []string // loop-owned
	done := future.SpawnErr(ex, func(ctx context.Context) error {
		if _, err := future.Sleep(ex, time.Millisecond).Await(ctx); err != nil {
			return err
		}
		log = append(log, "flushed")
		return nil
	})
	_, err := done.Await(context.Background())
	fmt.Println(log, err)
	// Output: [flushed] <nil>
}
