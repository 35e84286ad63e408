package hooks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// observer logs the panics it is told of.
type observer struct {
	name string
	log  *[]string
}

func (o observer) ObservePanic(v any) { *o.log = append(*o.log, fmt.Sprintf("%s saw %v", o.name, v)) }

// TestObservePanics: the continuations registered while a binding lasts
// (and what they register) tell its observer of their panics, the
// innermost observer only; End, the end of the Run it was made in, and
// the end of the callback end it; a task body carries it across its
// suspensions.
func TestObservePanics(t *testing.T) {
	type env struct {
		ex  *executor.Executor
		log *[]string
	}
	boom := func(name string) func() { return func() { panic(name) } }
	for _, tc := range []struct {
		name string
		run  func(e env)
		want []string
	}{
		{"timer and what it registers", func(e env) {
			w := hooks.ObservePanics(e.ex, observer{"o", e.log})
			e.ex.AfterFunc(0, func() { e.ex.Post(boom("nested")) })
			w.End()
		}, []string{"o saw nested"}},
		{"after End", func(e env) {
			w := hooks.ObservePanics(e.ex, observer{"o", e.log})
			w.End()
			e.ex.Post(boom("after"))
		}, nil},
		{"innermost", func(e env) {
			outer := hooks.ObservePanics(e.ex, observer{"outer", e.log})
			inner := hooks.ObservePanics(e.ex, observer{"inner", e.log})
			e.ex.Post(boom("a"))
			inner.End()
			e.ex.Post(boom("b"))
			outer.End()
		}, []string{"inner saw a", "outer saw b"}},
		{"ended by the Run it was made in", func(e env) {
			s := hooks.NewStorage[int]()
			var w hooks.PanicWatch
			s.Run(e.ex, 1, func() { w = hooks.ObservePanics(e.ex, observer{"o", e.log}) })
			e.ex.Post(boom("outside"))
			w.End() // ended already: the current frame stays
			e.ex.Post(boom("still outside"))
		}, nil},
		{"ended with the callback", func(e env) {
			hooks.ObservePanics(e.ex, observer{"o", e.log})
			e.ex.Post(func() { e.ex.Post(boom("next callback")) }) // carries o
		}, []string{"o saw next callback"}},
		{"task across suspensions", func(e env) {
			future.Spawn(e.ex, func(ctx context.Context) (struct{}, error) {
				w := hooks.ObservePanics(e.ex, observer{"o", e.log})
				future.Sleep(e.ex, 0).Await(ctx)
				e.ex.Post(boom("in task"))
				w.End()
				return struct{}{}, nil
			})
		}, []string{"o saw in task"}},
		{"zero PanicWatch", func(e env) {
			var w hooks.PanicWatch
			w.End()
			e.ex.Post(boom("plain"))
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log, handled []string
			ex := executor.New(executor.WithPanicHandler(func(v any) { handled = append(handled, fmt.Sprint(v)) }))
			defer ex.Close()
			ex.Submit(func() { tc.run(env{ex, &log}) })
			ex.RunUntilIdle()
			if !slices.Equal(log, tc.want) {
				t.Errorf("observers were told %q, want %q", log, tc.want)
			}
			if len(handled) == 0 {
				t.Errorf("no panic reached the panic handler")
			}
		})
	}
}

func TestObservePanicsMisuse(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	spindletest.MustPanic(t, "hooks: ", "does not hold the loop", func() { hooks.ObservePanics(ex, observer{}) })
	ex.Submit(func() {
		spindletest.MustPanic(t, "hooks: ", "nil PanicObserver", func() { hooks.ObservePanics(ex, nil) })
	})
	var w hooks.PanicWatch
	ex.Submit(func() { w = hooks.ObservePanics(ex, observer{}) })
	ex.RunUntilIdle()
	spindletest.MustPanic(t, "hooks: ", "does not hold the loop", w.End)
}
