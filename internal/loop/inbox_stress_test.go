package loop_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// atLeastProcs raises GOMAXPROCS to n for the test, so that goroutines
// really run beside the loop.
func atLeastProcs(t *testing.T, n int) {
	if prev := runtime.GOMAXPROCS(0); prev < n {
		runtime.GOMAXPROCS(n)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
}

// spin burns a little CPU, so that the loop's batches last long enough for
// submitters on other processors to fill the inbox meanwhile.
func spin(n int) {
	x := 0
	for i := range n {
		x += i ^ x>>3
	}
	spinSink.Store(int64(x))
}

// spinSink keeps the compiler from dropping spin's work.
var spinSink atomic.Int64

// Goroutines submit tasks, and calls awaited through futures and Do, to a
// started executor while its batches are long (every task spins a little;
// in some rounds a task of its own keeps the loop busy): the inbox is taken
// while earlier blocks are still being consumed, whether they are consumed
// in place or copied behind posted work, and every task runs exactly once
// and every call completes. A last round shuts the executor down while the
// submitters go on: what was accepted runs exactly once and the rest is
// refused.
func TestInboxSubmittersDuringLongBatches(t *testing.T) {
	atLeastProcs(t, 4)
	const submitters = 4
	perSubmitter := 3000
	rounds := 6
	if testing.Short() || spindletest.RaceEnabled {
		perSubmitter, rounds = 1500, 3
	}
	for round := range rounds + 1 {
		shutdown := round == rounds
		busy := !shutdown && round%2 == 1 // a task of the loop's own keeps posting itself
		name := fmt.Sprintf("round=%d/busy=%v/shutdown=%v", round, busy, shutdown)
		t.Run(name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()

			total := submitters * perSubmitter
			ran := make([]atomic.Int32, total)     // runs of each task
			accepted := make([]atomic.Bool, total) // Submit returned nil
			var stopBusy atomic.Bool
			if busy {
				var keep func()
				keep = func() {
					spin(200)
					if !stopBusy.Load() {
						ex.Post(keep)
					}
				}
				if err := ex.Submit(keep); err != nil {
					t.Fatal(err)
				}
			}
			var futs [submitters][]*future.Future[int]
			var doErr [submitters]error
			var wg sync.WaitGroup
			for s := range submitters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perSubmitter {
						id := s*perSubmitter + i
						run := func() {
							ran[id].Add(1)
							spin(50)
						}
						switch {
						case i%97 == 0 && !shutdown:
							// A call awaited at once: the submitter waits for
							// the loop, which is then deep in a batch.
							v, err := future.Do(context.Background(), ex, func() (int, error) { run(); return id, nil })
							if err == nil && v != id {
								err = fmt.Errorf("Do returned %d, want %d", v, id)
							}
							if err != nil && doErr[s] == nil {
								doErr[s] = err
							}
							accepted[id].Store(err == nil)
						case i%5 == 0:
							f := future.Spawn(ex, func(context.Context) (int, error) { run(); return id, nil })
							futs[s] = append(futs[s], f)
							accepted[id].Store(true) // a refused one fails its future
						default:
							accepted[id].Store(ex.Submit(run) == nil)
						}
						if i%64 == 0 {
							runtime.Gosched()
						}
					}
				}()
			}
			if shutdown {
				// Let the submitters get going, then drain while they go on.
				for ran[0].Load() == 0 && ran[perSubmitter].Load() == 0 {
					runtime.Gosched()
				}
				ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
				defer cancel()
				if err := ex.Shutdown(ctx); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			}
			wg.Wait()
			for s, err := range doErr {
				if err != nil {
					t.Errorf("submitter %d: Do: %v", s, err)
				}
			}
			// Every future completes: with its task's id, or refused.
			for s := range futs {
				for _, f := range futs[s] {
					v, err := spindletest.Await(t, f)
					switch {
					case err == nil:
						if ran[v].Load() == 0 {
							t.Fatalf("task %d: future completed, its function did not run", v)
						}
					case shutdown:
					default:
						t.Fatalf("submitter %d: future failed: %v", s, err)
					}
				}
			}
			if !shutdown {
				// A call submitted after every submission has returned runs
				// after all of them: once it has, every accepted task has.
				if _, err := future.Do(spindletest.Context(t), ex, func() (int, error) { return 0, nil }); err != nil {
					t.Fatalf("the last call: %v", err)
				}
			}
			// Shutdown returned: the drain has run everything accepted,
			// except a Spawn the closed executor failed (its future said so
			// above).
			var missing, twice []int
			for id := range ran {
				switch n := ran[id].Load(); {
				case n > 1:
					twice = append(twice, id)
				case n == 0 && accepted[id].Load() && !(shutdown && (id%perSubmitter)%5 == 0):
					missing = append(missing, id)
				}
			}
			if len(twice) > 0 {
				t.Errorf("%d tasks ran more than once, the first %v", len(twice), twice[:min(len(twice), 10)])
			}
			if len(missing) > 0 {
				t.Errorf("%d of %d accepted tasks never ran: the first %v", len(missing), total, missing[:min(len(missing), 10)])
			}
			stopBusy.Store(true)
		})
	}
}
