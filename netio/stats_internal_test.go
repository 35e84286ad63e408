package netio

import (
	"context"
	"net"
	"runtime"
	"testing"

	"github.com/spindle-rt/spindle/executor"
)

// registered counts the executors whose counts the registry holds.
func registered() int {
	n := 0
	registry.Range(func(any, any) bool { n++; return true })
	return n
}

// TestStatsForgetCollectedExecutors: the registry keeps the counts of a
// closed executor for as long as someone can ask for them, and no longer:
// once the executors are garbage, their entries go.
func TestStatsForgetCollectedExecutors(t *testing.T) {
	const n = 20
	before := registered()
	func() {
		exs := make([]*executor.Executor, n)
		for i := range exs {
			exs[i] = executor.New()
			exs[i].Start()
			l, err := Listen(exs[i], "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			// On the loop: the reactor and its counts are made.
			if _, err := l.Accept().Await(context.Background()); err != nil {
				t.Fatal(err)
			}
			nc.Close()
			l.Close()
			exs[i].Close()
		}
		if got := registered(); got < before+n {
			t.Fatalf("%d executors registered with %d closed ones alive, want at least %d", got, n, before+n)
		}
		runtime.KeepAlive(exs)
	}()
	for range 100 {
		if registered() <= before {
			return
		}
		runtime.GC()
		runtime.Gosched()
	}
	t.Fatalf("%d executors registered after the %d closed ones became garbage, want at most %d", registered(), n, before)
}
