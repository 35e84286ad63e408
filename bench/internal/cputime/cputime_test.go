package cputime

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Process counts the CPU time a busy loop burns.
func TestProcessGrows(t *testing.T) {
	before, ok := Process()
	if !ok {
		t.Skip("no CPU time on this system")
	}
	x := uint64(1)
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		for range 1 << 12 {
			x = x*6364136223846793005 + 1
		}
	}
	after, _ := Process()
	if after <= before {
		t.Fatalf("CPU time went from %v to %v over 20 ms of busy loop (x=%d)", before, after, x)
	}
}
