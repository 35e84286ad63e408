package peers

// Timers: each iteration starts 10,000 one-shot timers due 0-10 ms from now
// (evenly spread, started in a shuffled order) and waits until all have
// fired. Ranked by the CPU time of the whole process per timer: the wall
// time of an iteration is mostly the 10 ms wait, the same for everyone.

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/spindle-rt/spindle/executor"
)

const (
	timerCount = 10_000
	timerSpan  = 10 * time.Millisecond
)

// timerDelays are the delays of one iteration, in the order they are started.
var timerDelays = func() []time.Duration {
	ds := make([]time.Duration, timerCount)
	for i := range ds {
		// 7919 is prime, so i*7919 mod timerCount visits every slot once.
		ds[i] = time.Duration((i*7919)%timerCount) * timerSpan / timerCount
	}
	return ds
}()

func init() {
	register(Group{
		Name: "Timers",
		Note: "spindle and goja_nodejs run every callback on their one loop goroutine; time.AfterFunc runs each " +
			"on a goroutine of its own, spread over both cores, with callbacks that must synchronize (here an atomic counter)",
	},
		Case{Name: "spindle", Unit: "timer", Metric: "cpu-ns", Baseline: "time_afterfunc", Kind: kindSpindle, Fn: timersSpindle},
		Case{Name: "goja_nodejs", Unit: "timer", Metric: "cpu-ns", Baseline: "time_afterfunc", Kind: kindPeer, Version: gojaVersion, Fn: timersGoja},
		Case{Name: "time_afterfunc", Unit: "timer", Metric: "cpu-ns", Kind: kindGo, Fn: timersGo},
	)
}

// timersSpindle: executor.AfterFunc, called on the loop from one submitted
// closure per iteration.
func timersSpindle(b *testing.B) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	var fired int // loop-owned
	var done chan struct{}
	fire := func() {
		fired++
		if fired == timerCount {
			close(done)
		}
	}
	start := func() {
		for _, d := range timerDelays {
			ex.AfterFunc(d, fire)
		}
	}
	m := startMeter(b)
	for range b.N {
		fired, done = 0, make(chan struct{})
		if err := ex.Submit(start); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	m.stop(b, "timer", float64(b.N*timerCount))
}

// timersGoja: goja_nodejs's EventLoop.SetTimeout, called on the loop from
// one RunOnLoop closure per iteration.
func timersGoja(b *testing.B) {
	loop := newGojaLoop()
	defer loop.Terminate()
	var fired int // loop-owned
	var done chan struct{}
	fire := func(*goja.Runtime) {
		fired++
		if fired == timerCount {
			close(done)
		}
	}
	start := func(*goja.Runtime) {
		for _, d := range timerDelays {
			loop.SetTimeout(fire, d)
		}
	}
	m := startMeter(b)
	for range b.N {
		fired, done = 0, make(chan struct{})
		if !loop.RunOnLoop(start) {
			b.Fatal("RunOnLoop: loop terminated")
		}
		<-done
	}
	m.stop(b, "timer", float64(b.N*timerCount))
}

// timersGo: time.AfterFunc from this goroutine.
func timersGo(b *testing.B) {
	var fired atomic.Int64
	var done chan struct{}
	fire := func() {
		if fired.Add(1) == timerCount {
			close(done)
		}
	}
	m := startMeter(b)
	for range b.N {
		fired.Store(0)
		done = make(chan struct{})
		for _, d := range timerDelays {
			time.AfterFunc(d, fire)
		}
		<-done
	}
	m.stop(b, "timer", float64(b.N*timerCount))
}
