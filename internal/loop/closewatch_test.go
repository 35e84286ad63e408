package loop_test

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// interrupts records the errors it is interrupted with, and whether it ran
// on the loop.
type interrupts struct {
	ex     *executor.Executor
	errs   []error
	onLoop bool
}

func (r *interrupts) Interrupt(err error) {
	r.errs = append(r.errs, err)
	r.onLoop = r.ex.OnLoop()
}

// check fails t unless r was interrupted want times (0 or 1), on the loop,
// with ErrClosed.
func (r *interrupts) check(t *testing.T, want int) {
	t.Helper()
	if len(r.errs) != want {
		t.Fatalf("interrupted %d times, want %d", len(r.errs), want)
	}
	if want > 0 && (!errors.Is(r.errs[0], executor.ErrClosed) || !r.onLoop) {
		t.Errorf("interrupted with %v, on loop %v; want ErrClosed on the loop", r.errs[0], r.onLoop)
	}
}

// A registered watch is interrupted once, on the loop, with ErrClosed when
// the executor closes; an unwatched one is not; once closing has begun,
// Watch refuses.
func TestCloseWatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unwatch bool
		want    int
	}{
		{"watched", false, 1},
		{"unwatched", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			r := &interrupts{ex: ex}
			var c loop.CloseWatch
			if !lp(ex).Watch(&c, r) {
				t.Fatal("Watch on an open executor refused")
			}
			if tc.unwatch {
				lp(ex).Unwatch(&c)
				lp(ex).Unwatch(&c) // idempotent
			}
			ex.Close()
			r.check(t, tc.want)
			var late loop.CloseWatch
			if lp(ex).Watch(&late, r) {
				t.Error("Watch after Close accepted")
			}
		})
	}
}

// Watches come and go from many goroutines while the executor closes: a
// refused watch is never interrupted, an accepted one at most once, and
// one still registered when the loop closes exactly once.
func TestCloseWatchConcurrent(t *testing.T) {
	ex := executor.New()
	ex.Start()
	const n = 64
	var (
		mu       sync.Mutex
		counts   = map[int]int{}
		accepted = map[int]bool{}
		kept     = map[int]bool{}
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c loop.CloseWatch
			ok := lp(ex).Watch(&c, interruptFunc(func(error) {
				mu.Lock()
				counts[i]++
				mu.Unlock()
			}))
			keep := ok && i%2 == 1
			if ok && !keep {
				lp(ex).Unwatch(&c)
			}
			mu.Lock()
			accepted[i], kept[i] = ok, keep
			mu.Unlock()
		}()
	}
	ex.Close()
	wg.Wait()
	for i := range n {
		bad := counts[i] > 1 || (!accepted[i] && counts[i] != 0) || (kept[i] && counts[i] != 1)
		if bad {
			t.Errorf("watch %d: interrupted %d times, accepted %v, kept %v", i, counts[i], accepted[i], kept[i])
		}
	}
}

type interruptFunc func(error)

func (f interruptFunc) Interrupt(err error) { f(err) }

// A held CloseHold is interrupted once, on the loop, with ErrClosed when the
// executor closes; one released before is not, nor is one released and
// held again many times and released last; a Hold after Close is refused.
// An Interrupt may Hold and Release.
func TestCloseHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cycles int // Hold/Release pairs before the final state
		held   bool
		want   int
	}{
		{"held", 0, true, 1},
		{"released", 0, false, 0},
		{"cycled then held", 100, true, 1},
		{"cycled then released", 100, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			r := &interrupts{ex: ex}
			var h loop.CloseHold
			var late []bool
			w := interruptFunc(func(err error) {
				r.Interrupt(err)
				late = append(late, lp(ex).Hold(&h, r))
				lp(ex).Release(&h)
			})
			ex.Drive(func() {
				for range tc.cycles {
					if !lp(ex).Hold(&h, w) {
						t.Fatal("Hold on an open executor refused")
					}
					lp(ex).Release(&h)
				}
				if !lp(ex).Hold(&h, w) {
					t.Fatal("Hold on an open executor refused")
				}
				if !tc.held {
					lp(ex).Release(&h)
					lp(ex).Release(&h) // idempotent
				}
			})
			ex.Close()
			r.check(t, tc.want)
			if slices.Contains(late, true) {
				t.Error("Hold from an Interrupt accepted")
			}
			var after loop.CloseHold
			if lp(ex).Hold(&after, r) || lp(ex).Hold(&h, r) {
				t.Error("Hold after Close accepted")
			}
			lp(ex).Release(&h) // harmless after Close
		})
	}
}

// The loop keeps alive what is held and only that: an owner reachable only
// through its Hold survives garbage collection and is interrupted at Close,
// and an owner that was held and released is collected.
func TestCloseHoldReachability(t *testing.T) {
	type owner struct {
		h   loop.CloseHold
		hit *int
	}
	ex := executor.New()
	hits := 0
	var released weak.Pointer[owner]
	ex.Drive(func() {
		kept := &owner{hit: &hits}
		lp(ex).Hold(&kept.h, interruptFunc(func(error) { *kept.hit++ }))
		gone := &owner{hit: &hits}
		lp(ex).Hold(&gone.h, interruptFunc(func(error) { *gone.hit += 100 }))
		lp(ex).Release(&gone.h)
		released = weak.Make(gone)
	})
	runtime.GC()
	runtime.GC()
	if released.Value() != nil {
		t.Error("an owner that holds nothing is kept alive by its loop")
	}
	ex.Close()
	if hits != 1 {
		t.Errorf("interrupt count %d, want 1 (the held owner only)", hits)
	}
}
