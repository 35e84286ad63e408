package hooks_test

import (
	"context"
	"fmt"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
)

// Each request binds its own id; the callbacks of both requests run
// interleaved on one loop, and each sees its own id.
func ExampleStorage() {
	ex := executor.New()
	defer ex.Close()
	requestID := hooks.NewStorage[string]()

	handle := func(id string, p *future.Promise[int]) {
		requestID.Run(ex, id, func() {
			future.Then(p.Future(), func(v int) (int, error) {
				got, _ := requestID.Get(ex)
				fmt.Println(got, "got", v)
				return v, nil
			})
		})
	}
	ex.Submit(func() {
		a, b := future.NewPromise[int](ex), future.NewPromise[int](ex)
		handle("req-a", a)
		handle("req-b", b)
		b.Resolve(2) // resolved in the other order, from outside both requests
		a.Resolve(1)
		_, ok := requestID.Get(ex)
		fmt.Println("outside any request:", ok)
	})
	ex.RunUntilIdle()
	// Output:
	// outside any request: false
	// req-b got 2
	// req-a got 1
}

// Bind fixes the context of a plain callback that other code calls later.
func ExampleBind() {
	ex := executor.New()
	defer ex.Close()
	user := hooks.NewStorage[string]()

	var listeners []func()
	ex.Submit(func() {
		user.Run(ex, "alice", func() {
			listeners = append(listeners, hooks.Bind(ex, func() {
				u, _ := user.Get(ex)
				fmt.Println("bound listener sees", u)
			}))
			listeners = append(listeners, func() {
				u, _ := user.Get(ex)
				fmt.Println("plain listener sees", u)
			})
		})
		user.Run(ex, "bob", func() { // bob emits
			for _, l := range listeners {
				l()
			}
		})
	})
	ex.RunUntilIdle()
	// Output:
	// bound listener sees alice
	// plain listener sees bob
}

// Hooks trace a chain: the Then-derived future is triggered by its parent,
// and its callback runs between Before and After with its own id current.
func ExampleHooks() {
	ex := executor.New()
	defer ex.Close()
	ex.AddHooks(hooks.Hooks{
		Init: func(id hooks.ID, kind hooks.Kind, trigger hooks.ID) {
			fmt.Printf("init %d %v trigger %d\n", id, kind, trigger)
		},
		Before:  func(id hooks.ID) { fmt.Println("before", id) },
		After:   func(id hooks.ID) { fmt.Println("after", id) },
		Resolve: func(id hooks.ID) { fmt.Println("resolve", id) },
	})

	p := future.NewPromise[int](ex)
	f := future.Then(p.Future(), func(v int) (int, error) {
		fmt.Println("callback, current id", ex.CurrentID())
		return v + 1, nil
	})
	p.Resolve(1)
	ex.RunUntilIdle()
	v, _ := f.Await(context.Background())
	fmt.Println("result", v)
	// Output:
	// init 1 future trigger 0
	// init 2 future trigger 1
	// resolve 1
	// before 2
	// callback, current id 2
	// resolve 2
	// after 2
	// result 2
}
