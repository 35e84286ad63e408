package frame

import (
	"runtime"
	"testing"
)

// The registry finds the loop the caller holds, and keeps no collected
// loop: its length stays bounded however many loops come and go.
func TestRegistry(t *testing.T) {
	held := &Holder{}
	Register(held)
	if HeldLoop() != nil {
		t.Fatal("HeldLoop found a loop nobody holds")
	}
	held.Hold()
	if HeldLoop() != held {
		t.Fatal("HeldLoop did not find the held loop")
	}
	held.Release()
	for range 10000 {
		Register(&Holder{})
		if len(registry.loops)%1000 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	registry.mu.Lock()
	n := len(registry.loops)
	registry.mu.Unlock()
	if n > 2100 {
		t.Fatalf("%d loops registered after 10000 came and went", n)
	}
	runtime.KeepAlive(held)
}
