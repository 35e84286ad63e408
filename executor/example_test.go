package executor_test

import (
	"fmt"
	"time"

	"github.com/spindle-rt/spindle/executor"
)

// A stepped executor: RunUntilIdle runs the loop on the calling goroutine
// until nothing is ready.
func ExampleExecutor_Post() {
	ex := executor.New()
	defer ex.Close()
	ex.Submit(func() {
		fmt.Println("first")
		ex.Post(func() { fmt.Println("third: posted work runs after what was queued") })
	})
	ex.Submit(func() { fmt.Println("second") })
	ex.RunUntilIdle()
	// Output:
	// first
	// second
	// third: posted work runs after what was queued
}

// A loop running on its own goroutine, fed from another goroutine.
func ExampleExecutor_Submit() {
	ex := executor.New(executor.WithName("example"))
	ex.Start()
	done := make(chan struct{})
	ex.Submit(func() {
		ex.AfterFunc(time.Millisecond, func() {
			fmt.Println("timer fired on the loop:", ex.OnLoop())
			close(done)
		})
	})
	<-done
	ex.Close()
	fmt.Println("closed:", ex.Closed())
	// Output:
	// timer fired on the loop: true
	// closed: true
}
