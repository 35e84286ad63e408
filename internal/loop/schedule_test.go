package loop_test

import (
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// probeItem reports on which goroutine it ran, or that it was dropped.
type probeItem struct {
	ex      *executor.Executor
	ran     chan bool // Run: whether it ran on the loop
	dropped chan struct{}
}

func newProbeItem(ex *executor.Executor) *probeItem {
	return &probeItem{ex: ex, ran: make(chan bool, 1), dropped: make(chan struct{}, 1)}
}

func (p *probeItem) Run()  { p.ran <- p.ex.OnLoop() }
func (p *probeItem) Drop() { p.dropped <- struct{}{} }

// Schedule and ScheduleOffLoop, from a goroutine that does not hold the
// loop: the item runs on the loop while the executor is open, and once it
// has closed they return ErrClosed and drop the item.
func TestScheduleFromOffTheLoop(t *testing.T) {
	cases := []struct {
		name     string
		schedule func(l *loop.Loop, r loop.Runnable) error
	}{
		{"Schedule", func(l *loop.Loop, r loop.Runnable) error { return l.Schedule(r, nil, 0) }},
		{"ScheduleOffLoop", func(l *loop.Loop, r loop.Runnable) error { return l.ScheduleOffLoop(r, nil, 0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			p := newProbeItem(ex)
			if err := c.schedule(lp(ex), p); err != nil {
				t.Fatalf("open executor: %v", err)
			}
			if !spindletest.Recv(t, p.ran) {
				t.Fatal("the item ran off the loop")
			}
			ex.Close()
			p = newProbeItem(ex)
			if err := c.schedule(lp(ex), p); !errors.Is(err, executor.ErrClosed) {
				t.Fatalf("closed executor: err = %v, want ErrClosed", err)
			}
			spindletest.Recv(t, p.dropped)
			select {
			case <-p.ran:
				t.Fatal("an item scheduled after Close ran")
			default:
			}
			spindletest.MustPanic(t, "executor:", "nil Runnable", func() { c.schedule(lp(ex), nil) })
		})
	}
}
