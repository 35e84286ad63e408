package executor_test

import (
	"fmt"
	"strings"
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

// Now is the loop's clock, the one its timers run on: loop code measures
// with it rather than with time.Now, so that under package sim the same
// code runs on the simulation's fake time.
func ExampleExecutor_Now() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	elapsed := make(chan time.Duration)
	ex.Submit(func() {
		start := ex.Now()
		ex.AfterFunc(10*time.Millisecond, func() { elapsed <- ex.Now().Sub(start) })
	})
	fmt.Println("the timer fired at least 10ms later on the loop's clock:", <-elapsed >= 10*time.Millisecond)
	// Output:
	// the timer fired at least 10ms later on the loop's clock: true
}

// A stall handler hears of a task that holds the loop too long while the
// task still runs, with the stack of the code holding it.
func ExampleWithStallHandler() {
	stalled := make(chan executor.Stall, 1)
	ex := executor.New(executor.WithName("example"),
		executor.WithStallHandler(20*time.Millisecond, func(s executor.Stall) { stalled <- s }))
	ex.Start()
	ex.Submit(func() { slowCallback(ex) })
	s := <-stalled
	ex.Close()
	fmt.Printf("loop %q stalled for at least 20ms: %v\n", s.Executor, s.Duration >= 20*time.Millisecond)
	fmt.Println("the stack shows slowCallback:", strings.Contains(string(s.Stack), "slowCallback"))
	fmt.Println("stalls:", ex.Stats().Stalls)
	// Output:
	// loop "example" stalled for at least 20ms: true
	// the stack shows slowCallback: true
	// stalls: 1
}

// slowCallback holds the loop until a stall has been reported.
func slowCallback(ex *executor.Executor) {
	for ex.Stats().Stalls == 0 {
	}
}
