package hooks_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
)

// request is a protocol's request as its server tracks it: told of a
// panic in the work it started, it ends itself (a server would answer
// with an error and close the connection).
type request string

func (r request) ObservePanic(v any) { fmt.Printf("%s ends with an error after: %v\n", r, v) }

// A server binds each request to the work its handler starts: a timer
// that panics later ends that request, and work started after End is not
// the request's.
func ExampleObservePanics() {
	ex := executor.New(executor.WithPanicHandler(func(v any) { fmt.Println("panic handler:", v) }))
	defer ex.Close()
	handler := func() {
		ex.AfterFunc(0, func() { panic("lost the database") })
	}
	ex.Submit(func() {
		watch := hooks.ObservePanics(ex, request("req-1"))
		handler()
		watch.End()
		ex.AfterFunc(0, func() { panic("unrelated") })
	})
	ex.RunUntilIdle()
	// Output:
	// panic handler: lost the database
	// req-1 ends with an error after: lost the database
	// panic handler: unrelated
}
