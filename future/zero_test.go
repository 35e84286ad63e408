package future_test

import (
	"context"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// The zero Future and the zero Promise are bound to no executor: their
// methods panic with a message that starts with "future: " instead of a
// nil dereference, and Cancel and Resolve do not succeed silently.
func TestZeroValuesPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(f *future.Future[int], p *future.Promise[int])
	}{
		{"Await", func(f *future.Future[int], _ *future.Promise[int]) { _, _ = f.Await(context.Background()) }},
		{"Cancel", func(f *future.Future[int], _ *future.Promise[int]) { f.Cancel() }},
		{"Then", func(f *future.Future[int], _ *future.Promise[int]) {
			future.Then(f, func(v int) (int, error) { return v, nil })
		}},
		{"Transform", func(f *future.Future[int], _ *future.Promise[int]) {
			future.Transform(f, func(v int, err error) (int, error) { return v, err })
		}},
		{"OnComplete", func(f *future.Future[int], _ *future.Promise[int]) { f.OnComplete(func(int, error) {}) }},
		{"Timeout", func(f *future.Future[int], _ *future.Promise[int]) { future.Timeout(f, time.Second) }},
		{"All", func(f *future.Future[int], _ *future.Promise[int]) { future.All(f) }},
		{"Resolve", func(_ *future.Future[int], p *future.Promise[int]) { p.Resolve(1) }},
		{"Reject", func(_ *future.Future[int], p *future.Promise[int]) { p.Reject(context.Canceled) }},
		{"Complete", func(_ *future.Future[int], p *future.Promise[int]) { p.Complete(1, nil) }},
		{"OnCancel", func(_ *future.Future[int], p *future.Promise[int]) { p.OnCancel(func() {}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spindletest.MustPanic(t, "future: ", "not made by this package", func() {
				tc.fn(new(future.Future[int]), new(future.Promise[int]))
			})
		})
	}
	var f future.Future[int]
	if f.Ready() {
		t.Fatal("zero Future is Ready")
	}
	if _, ok := f.Peek(); ok {
		t.Fatal("zero Future has a result")
	}
}
