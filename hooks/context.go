package hooks

// Async-local values and context.Context: the way in (a context that
// carries values, which future.Do and future.CallContext bind for the loop
// code they run) and the way out (a context that carries the values of the
// loop code that makes it, and a task's own context, for code that takes a
// ctx: log/slog, a client called from future.Go).

import (
	"context"

	"github.com/spindle-rt/spindle/internal/frame"
)

// WithValue returns a copy of ctx that carries v for s, on top of the
// async-local values ctx carries already. It may be called from any
// goroutine: it is how a handler hands values to the loop. Loop code run for
// the context (by future.Do, future.CallContext or RunContext), and every
// continuation it registers, sees v in s.Get:
//
//	ctx = requestID.WithValue(r.Context(), id) // in a middleware
//	future.Do(ctx, ex, fn)                      // fn sees id
func (s *Storage[T]) WithValue(ctx context.Context, v T) context.Context {
	if ctx == nil {
		panic("hooks: Storage.WithValue with nil context")
	}
	var fr *frame.Frame
	var loop string
	if c := frame.FromContext(ctx); c != nil {
		fr, loop = c.Frame, c.Loop
	}
	return frame.NewContext(ctx, fr.With(s, v), loop)
}

// FromContext returns the value ctx carries for s and true, or the zero
// value and false. It may be called from any goroutine.
func (s *Storage[T]) FromContext(ctx context.Context) (T, bool) {
	if c := frame.FromContext(ctx); c != nil {
		if v, ok := frame.Find(c.Frame, s); ok {
			t, _ := v.(T)
			return t, true
		}
	}
	var zero T
	return zero, false
}

// NewContext returns a copy of ctx that carries the async-local values
// current on ex's loop, and ex's name: loop code hands it to code that
// takes a context (a goroutine of its own, a client, slog.InfoContext),
// which reads the values with Storage.FromContext. NewContext must be
// called by code that holds the loop; it panics elsewhere.
func NewContext(ctx context.Context, ex Loop) context.Context {
	if ctx == nil {
		panic("hooks: NewContext with nil context")
	}
	h := mustHold(ex, "NewContext")
	return frame.NewContext(ctx, h.Cur, h.Name)
}

// RunContext calls fn with the async-local values that ctx carries in
// place of the current ones, and restores the current frame when fn
// returns (or panics): every continuation registered while fn runs sees
// them. A ctx that carries none runs fn under the empty frame. RunContext
// must be called by code that holds the loop; it panics elsewhere.
func RunContext(ctx context.Context, ex Loop, fn func()) {
	if fn == nil {
		panic("hooks: RunContext with nil func")
	}
	if ctx == nil {
		panic("hooks: RunContext with nil context")
	}
	h := mustHold(ex, "RunContext")
	var fr *frame.Frame
	if c := frame.FromContext(ctx); c != nil {
		fr = c.Frame
	}
	h.Run(fr, fn)
}
