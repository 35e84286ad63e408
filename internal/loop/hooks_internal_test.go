package loop

// Tests of the loop's side of hook dispatch (runHooked and recoverItem),
// driven the way runBatch drives them. The TestMain of package
// executor_test (goleak) covers these tests too: both packages are linked
// into one test binary.

import (
	"fmt"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/hooks"
)

type logRun struct {
	log  *[]string
	fail bool
}

func (r logRun) Run() {
	*r.log = append(*r.log, "run")
	if r.fail {
		panic("run")
	}
}

type catchRun struct{ logRun }

func (r catchRun) CatchPanic(v any, _ []byte) { *r.log = append(*r.log, fmt.Sprint("caught ", v)) }

// runLikeLoop runs one item as runBatch does: runHooked under a recovery
// that hands a panic to recoverItem.
func runLikeLoop(e *Loop, it item) {
	defer func() {
		if v := recover(); v != nil {
			e.recoverItem(it, v, debug.Stack())
		}
	}()
	if it.id != 0 {
		e.runHooked(it.r, it.id)
	} else {
		it.r.Run()
	}
}

func TestRunHookedPanics(t *testing.T) {
	for _, tc := range []struct {
		name                                  string
		failBefore, failAfter, failRun, catch bool
		want                                  []string
		handler                               []string
	}{
		{name: "ok",
			want: []string{"b1", "b2", "run", "a1", "a2"}},
		{name: "before panics", failBefore: true,
			want: []string{"b1", "b2", "run", "a1", "a2"}, handler: []string{"b1"}},
		{name: "after panics", failAfter: true,
			want: []string{"b1", "b2", "run", "a1", "a2"}, handler: []string{"a1"}},
		{name: "both panic", failBefore: true, failAfter: true,
			want: []string{"b1", "b2", "run", "a1", "a2"}, handler: []string{"b1", "a1"}},
		{name: "run panics", failRun: true,
			want: []string{"b1", "b2", "run", "a1", "a2"}, handler: []string{"run"}},
		{name: "run panics, caught", failRun: true, catch: true,
			want: []string{"b1", "b2", "run", "caught run", "a1", "a2"}},
		{name: "before and run panic, caught", failBefore: true, failRun: true, catch: true,
			want: []string{"b1", "b2", "run", "caught run", "a1", "a2"}, handler: []string{"b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log, handled []string
			e := New(Config{PanicHandler: func(v any) { handled = append(handled, fmt.Sprint(v)) }})
			defer e.Close()
			hook := func(name string, fail bool) func(hooks.ID) {
				return func(hooks.ID) {
					log = append(log, name)
					if fail {
						panic(name)
					}
				}
			}
			e.AddHooks(hooks.Hooks{Before: hook("b1", tc.failBefore), After: hook("a1", tc.failAfter)})
			e.AddHooks(hooks.Hooks{Before: hook("b2", false), After: hook("a2", false)})
			var r Runnable = logRun{log: &log, fail: tc.failRun}
			if tc.catch {
				r = catchRun{logRun{log: &log, fail: tc.failRun}}
			}
			e.Submit(func() {
				runLikeLoop(e, item{r: r, id: 9})
				if e.hooks.stage != stageNone || e.hooks.inflight != nil {
					t.Errorf("stage %d inflight %v after the item", e.hooks.stage, e.hooks.inflight)
				}
				runLikeLoop(e, item{r: logRun{log: &log}, id: 9}) // the next item is unaffected
			})
			e.RunUntilIdle()
			want := append(slices.Clone(tc.want), "b1", "b2", "run", "a1", "a2")
			if tc.failBefore {
				tc.handler = append(tc.handler, "b1")
			}
			if tc.failAfter {
				tc.handler = append(tc.handler, "a1")
			}
			if !slices.Equal(log, want) {
				t.Errorf("calls %v, want %v", log, want)
			}
			if !slices.Equal(handled, tc.handler) {
				t.Errorf("panic handler got %v, want %v", handled, tc.handler)
			}
		})
	}
}

// Without Before or After hooks a resource's item runs plainly.
func TestRunHookedInitOnly(t *testing.T) {
	var log []string
	e := New(Config{})
	defer e.Close()
	e.AddHooks(hooks.Hooks{Init: func(hooks.ID, hooks.Kind, hooks.ID) {}})
	e.Submit(func() { runLikeLoop(e, item{r: logRun{log: &log}, id: 3}) })
	e.RunUntilIdle()
	if !slices.Equal(log, []string{"run"}) || e.hooks.inflight != nil {
		t.Fatalf("log %v", log)
	}
}
