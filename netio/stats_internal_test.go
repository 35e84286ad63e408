package netio

import (
	"context"
	"net"
	"runtime"
	"testing"
	"weak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// registered reports how many of keys the registry holds counts for.
func registered(keys []weak.Pointer[loop.Loop]) int {
	n := 0
	for _, k := range keys {
		if _, ok := registry.Load(k); ok {
			n++
		}
	}
	return n
}

// TestStatsForgetCollectedExecutors: the registry keeps the counts of a
// closed executor for as long as someone can ask for them, and no longer:
// once the executors are garbage, their entries go. Only this test's
// executors are counted: those of earlier tests may be collected meanwhile.
func TestStatsForgetCollectedExecutors(t *testing.T) {
	const n = 20
	keys := make([]weak.Pointer[loop.Loop], n)
	func() {
		exs := make([]*executor.Executor, n)
		for i := range exs {
			exs[i] = executor.New()
			exs[i].Start()
			keys[i] = weak.Make((*loop.Loop)(exs[i]))
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
		if got := registered(keys); got != n {
			t.Fatalf("%d of %d closed executors registered while they are alive, want all", got, n)
		}
		runtime.KeepAlive(exs)
	}()
	for range 100 {
		if registered(keys) == 0 {
			return
		}
		runtime.GC()
		runtime.Gosched()
	}
	t.Fatalf("%d of %d executors registered after they became garbage, want none", registered(keys), n)
}
