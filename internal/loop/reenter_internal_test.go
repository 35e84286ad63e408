package loop

import (
	"runtime"
	"testing"
	"time"
)

// A goroutine that looks at the phase, is held up, and claims running only
// after the loop has closed and left (a Close or Shutdown racing the
// loop's own close) runs nothing: the loop closes once. Before, it ran the
// close a second time and panicked on closing the closed channel.
func TestClaimAfterCloseRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		enter func(e *Loop) error
	}{
		{"Close", func(e *Loop) error { return e.loop(t.Context(), false, nil) }},
		{"RunUntilIdle", func(e *Loop) error { return e.loop(t.Context(), true, func() { t.Error("fn ran on a closed loop") }) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Config{})
			e.Start()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Close returns once the loop has closed; the loop's goroutine
			// leaves (clears running) just after. Close's look at the phase
			// came before the loop closed; its claim of running comes after
			// the loop has left.
			for deadline := time.Now().Add(10 * time.Second); e.running.Load(); runtime.Gosched() {
				if time.Now().After(deadline) {
					t.Fatal("the loop has not left 10 s after Close")
				}
			}
			if !e.running.CompareAndSwap(false, true) {
				t.Fatal("the loop has not left after Close")
			}
			if err := tc.enter(e); err != nil {
				t.Fatalf("entering a closed loop: %v", err)
			}
			if e.running.Load() {
				t.Error("running stays set")
			}
			select {
			case <-e.closed:
			default:
				t.Error("closed is not closed")
			}
		})
	}
}
