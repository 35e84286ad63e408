package loop

import (
	"context"
	"testing"
)

// A Close (or Shutdown) that read the phase while the loop was still
// draining, and took the loop up only after the goroutine running it had
// finished closing and let go, must find the loop closed and leave it as it
// is: finishing it again would close its channels twice. The test plays
// that interleaving out step by step: the loop closes, then the late
// caller's CompareAndSwap and loop run.
func TestLateCloserFindsTheLoopClosed(t *testing.T) {
	e := New(Config{})
	e.Start()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !e.running.CompareAndSwap(false, true) {
		t.Fatal("the loop is still running after Close returned")
	}
	if err := e.loop(context.Background(), false, nil); err != nil {
		t.Fatalf("late loop: %v", err)
	}
	if e.running.Load() {
		t.Fatal("the late caller kept the loop")
	}
	select {
	case <-e.closed:
	default:
		t.Fatal("closed channel open")
	}
}
