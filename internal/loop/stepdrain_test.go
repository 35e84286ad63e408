package loop_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// stillClock is a loop clock that does not move.
type stillClock struct{}

func (stillClock) Now() int64 { return 0 }

// owing is a Drainer that owes work while owed is set.
type owing struct {
	owed  bool
	asked int
}

func (d *owing) Drained() bool { d.asked++; return d.owed }

// stepped returns an executor whose loop the test steps, as a simulation
// does, with d among its drainers.
func stepped(t *testing.T, d loop.Drainer) (*executor.Executor, *loop.Loop) {
	ex := executor.New()
	t.Cleanup(func() { ex.Close() })
	lp := (*loop.Loop)(ex)
	lp.SetClock(stillClock{}, nil)
	ex.Drive(func() { lp.AddDrainer(d) })
	return ex, lp
}

// A stepped loop drains in steps: a Step whose drainers still owe work
// returns with the loop open (a running loop would sleep there, waiting
// for what only the driver moves), and the Step that finds nothing owed
// finishes it.
func TestStepDrains(t *testing.T) {
	d := &owing{owed: true}
	ex, lp := stepped(t, d)
	ex.Submit(func() { ex.Shutdown(context.Background()) }) // from the loop: begins the drain
	for i := range 3 {
		lp.Step()
		if ex.Closed() {
			t.Fatalf("step %d: the loop finished while its drainer owed work", i)
		}
	}
	if d.asked < 3 {
		t.Errorf("the drainer was asked %d times in 3 steps", d.asked)
	}
	d.owed = false
	lp.Step()
	if !ex.Closed() {
		t.Fatal("the step that found nothing owed did not finish the loop")
	}
}

// Shutdown called off the driver of a stepped loop cannot wait for what
// its drainers are owed (only the driver moves it): it finishes the
// loop instead of waiting for ever.
func TestStepShutdownOffDriver(t *testing.T) {
	d := &owing{owed: true}
	ex, _ := stepped(t, d)
	if err := ex.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !ex.Closed() || d.asked == 0 {
		t.Fatalf("after Shutdown: closed %v, drainer asked %d times", ex.Closed(), d.asked)
	}
}
