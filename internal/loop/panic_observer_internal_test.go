package loop

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/internal/frame"
)

// observer records the panics ObservePanic tells it of; fail makes it
// panic in turn.
type observer struct {
	name string
	log  *[]string
	fail bool
}

func (o observer) ObservePanic(v any) {
	*o.log = append(*o.log, fmt.Sprintf("%s saw %v", o.name, v))
	if o.fail {
		panic(o.name)
	}
}

// TestObservePanic: a panic of a continuation is reported first (to its
// catcher or the panic handler), then told to the PanicObserver of the
// innermost frame that binds one; a frame without one, or a continuation
// that returns, tells nobody; an observer's own panic goes to the panic
// handler.
func TestObservePanic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		frame   func(log *[]string) *frame.Frame
		catch   bool
		fail    bool // the continuation panics
		want    []string
		handler []string
	}{
		{name: "observed", fail: true,
			frame: func(log *[]string) *frame.Frame {
				return (*frame.Frame)(nil).With(PanicObserverKey, observer{"o", log, false})
			},
			want:    []string{"run", "o saw run"},
			handler: []string{"run"}},
		{name: "caught, observed", fail: true, catch: true,
			frame: func(log *[]string) *frame.Frame {
				return (*frame.Frame)(nil).With(PanicObserverKey, observer{"o", log, false})
			},
			want: []string{"run", "caught run", "o saw run"}},
		{name: "innermost", fail: true,
			frame: func(log *[]string) *frame.Frame {
				return (*frame.Frame)(nil).With(PanicObserverKey, observer{"outer", log, false}).With("k", 1).With(PanicObserverKey, observer{"inner", log, false})
			},
			want:    []string{"run", "inner saw run"},
			handler: []string{"run"}},
		{name: "observer panics", fail: true,
			frame: func(log *[]string) *frame.Frame {
				return (*frame.Frame)(nil).With(PanicObserverKey, observer{"o", log, true})
			},
			want:    []string{"run", "o saw run"},
			handler: []string{"run", "o"}},
		{name: "no observer", fail: true,
			frame:   func(log *[]string) *frame.Frame { return (*frame.Frame)(nil).With("k", 1) },
			want:    []string{"run"},
			handler: []string{"run"}},
		{name: "no panic",
			frame: func(log *[]string) *frame.Frame {
				return (*frame.Frame)(nil).With(PanicObserverKey, observer{"o", log, false})
			},
			want: []string{"run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log, handled []string
			e := New(Config{PanicHandler: func(v any) { handled = append(handled, fmt.Sprint(v)) }})
			defer e.Close()
			var r Runnable = logRun{log: &log, fail: tc.fail}
			if tc.catch {
				r = catchRun{logRun{log: &log, fail: tc.fail}}
			}
			fr := tc.frame(&log)
			e.Submit(func() {
				prev := e.Cur
				e.Cur = fr // as runBatch makes an item's frame current
				runLikeLoop(e, item{r: r, fr: fr})
				e.Cur = prev
			})
			e.RunUntilIdle()
			if !slices.Equal(log, tc.want) {
				t.Errorf("calls %v, want %v", log, tc.want)
			}
			if !slices.Equal(handled, tc.handler) {
				t.Errorf("panic handler got %v, want %v", handled, tc.handler)
			}
		})
	}
}
