package loop_test

import (
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// countFlusher counts the batch boundaries it is told about and what the
// loop had run by then.
type countFlusher struct {
	ex    *executor.Executor
	calls int
	seen  []uint64 // TasksRun at each call
}

func (f *countFlusher) Flush() {
	if !f.ex.OnLoop() {
		panic("Flush off the loop")
	}
	f.calls++
	f.seen = append(f.seen, f.ex.Stats().TasksRun)
}

// A flusher runs on the loop after every batch of tasks: a burst of 300
// posts (batches of 128) is seen at each boundary, and an idle loop calls
// it once more before it returns.
func TestFlusherRunsAtEveryBatchBoundary(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	f := &countFlusher{ex: ex}
	lp(ex).AddFlusher(f)
	ex.Drive(func() {
		for range 300 {
			ex.Post(func() {})
		}
	})
	want := []uint64{128, 256, 300}
	if len(f.seen) < len(want) {
		t.Fatalf("flushes at %v, want at least %v", f.seen, want)
	}
	for i, w := range want {
		if f.seen[i] != w {
			t.Fatalf("flushes at %v, want %v first", f.seen, want)
		}
	}
}

func TestAddFlusherNil(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	spindletest.MustPanic(t, "executor:", "nil Flusher", func() { lp(ex).AddFlusher(nil) })
}
