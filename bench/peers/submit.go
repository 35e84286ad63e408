package peers

// Submit: b.N closures handed to a loop from a foreign goroutine (the
// benchmark's), then wait until the last has run. Per closure.

import (
	"sync"
	"testing"

	"github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/eventloop"

	"github.com/spindle-rt/spindle/executor"
)

const gojaVersion = "goja_nodejs v0.0.0-20260212111938-1f56ff5bcf14, goja v0.0.0-20260917113740-793a2a65c13b"

func init() {
	register(Group{
		Name: "Submit",
		Note: "one producer goroutine, one consumer; spindle's and goja_nodejs's queues are unbounded, " +
			"go_chan's channel holds 1,024 funcs and blocks the producer when full",
	},
		Case{Name: "spindle", Unit: "closure", Baseline: "go_chan", Kind: kindSpindle, Fn: submitSpindle},
		Case{Name: "goja_nodejs", Unit: "closure", Baseline: "go_chan", Kind: kindPeer, Version: gojaVersion, Fn: submitGoja},
		Case{Name: "go_chan", Unit: "closure", Kind: kindGo, Fn: submitGoChan},
	)
}

// submitSpindle: executor.Submit from this goroutine; the loop runs on its own.
func submitSpindle(b *testing.B) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	n := 0 // loop-owned
	done := make(chan struct{})
	fn := func() {
		n++
		if n == b.N {
			close(done)
		}
	}
	m := startMeter(b)
	for range b.N {
		if err := ex.Submit(fn); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	m.stop(b, "closure", float64(b.N))
}

// newGojaLoop returns a started goja_nodejs event loop without the console
// module; stop it with Terminate.
func newGojaLoop() *eventloop.EventLoop {
	loop := eventloop.NewEventLoop(eventloop.EnableConsole(false))
	loop.Start()
	return loop
}

// submitGoja: goja_nodejs's EventLoop.RunOnLoop from this goroutine.
func submitGoja(b *testing.B) {
	loop := newGojaLoop()
	defer loop.Terminate()
	n := 0 // loop-owned
	done := make(chan struct{})
	fn := func(*goja.Runtime) {
		n++
		if n == b.N {
			close(done)
		}
	}
	m := startMeter(b)
	for range b.N {
		if !loop.RunOnLoop(fn) {
			b.Fatal("RunOnLoop: loop terminated")
		}
	}
	<-done
	m.stop(b, "closure", float64(b.N))
}

// submitGoChan: the plain-Go way: funcs sent over a buffered channel to a
// worker goroutine that runs them.
func submitGoChan(b *testing.B) {
	work := make(chan func(), 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for fn := range work {
			fn()
		}
	}()
	n := 0 // worker-owned
	fn := func() { n++ }
	m := startMeter(b)
	for range b.N {
		work <- fn
	}
	close(work)
	wg.Wait()
	m.stop(b, "closure", float64(b.N))
	if n != b.N {
		b.Fatalf("ran %d funcs, want %d", n, b.N)
	}
}
