package hooks

// A log/slog handler that puts async-local values into records.

import (
	"context"
	"log/slog"

	"github.com/spindle-rt/spindle/internal/frame"
)

// LogAttr names a storage whose value LogHandler adds to records: make one
// with Log.
type LogAttr struct {
	key  string
	find func(*frame.Frame) (any, bool)
}

// Log returns the LogAttr that adds s's value to records under key.
func Log[T any](key string, s *Storage[T]) LogAttr {
	if s == nil {
		panic("hooks: Log with nil Storage")
	}
	return LogAttr{key: key, find: func(fr *frame.Frame) (any, bool) { return frame.Find(fr, s) }}
}

// ExecutorKey is the key under which LogHandler adds the executor's name.
const ExecutorKey = "executor"

// LogHandler is a slog.Handler that adds to every record the async-local
// values of the flow that logs it, each storage given to NewLogHandler
// under its key, and the name of its executor under ExecutorKey, then
// hands the record on. The values are those of
//
//   - the loop the caller holds, if it holds one: a callback or a task body
//     logging with slog.Info, slog.InfoContext or any other call sees the
//     values that Storage.Get sees there;
//   - otherwise, the values the record's context carries: a task's ctx
//     (future.Spawn), fn's ctx in future.Go, a context made by NewContext
//     or Storage.WithValue, so slog.InfoContext(ctx, ...) off the loop sees
//     them too.
//
// A storage with no value adds nothing, and neither does a record logged
// off any loop with a context that carries none. The attributes go where
// the logger's own WithAttrs attributes go (inside its WithGroup groups).
//
// Finding the loop the caller holds looks through the live executors (a
// few ns each, under a lock), so a handler costs that much per record on
// top of the handler it wraps. Do not wrap slog.Default().Handler() and then
// install the result with slog.SetDefault: like any handler that writes
// through the log package, that loops back into itself; wrap a handler of
// your own (slog.NewTextHandler, slog.NewJSONHandler).
type LogHandler struct {
	next  slog.Handler
	attrs []LogAttr
}

// NewLogHandler returns a handler that adds the values of attrs (and the
// executor's name) to each record and hands it to next.
func NewLogHandler(next slog.Handler, attrs ...LogAttr) *LogHandler {
	if next == nil {
		panic("hooks: NewLogHandler with nil handler")
	}
	for _, a := range attrs {
		if a.find == nil {
			panic("hooks: NewLogHandler with a zero LogAttr; make it with Log")
		}
	}
	return &LogHandler{next: next, attrs: attrs}
}

// Enabled reports whether the wrapped handler handles records of level.
func (h *LogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle adds the executor's name and the storages' values to a copy of r
// and hands it to the wrapped handler.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	var fr *frame.Frame
	var name string
	if l := frame.HeldLoop(); l != nil {
		fr, name = l.Cur, l.Name
	} else if ctx != nil {
		if c := frame.FromContext(ctx); c != nil {
			fr, name = c.Frame, c.Loop
		}
	}
	if name == "" && fr == nil {
		return h.next.Handle(ctx, r)
	}
	r = r.Clone()
	if name != "" {
		r.AddAttrs(slog.String(ExecutorKey, name))
	}
	for _, a := range h.attrs {
		if v, ok := a.find(fr); ok {
			r.AddAttrs(slog.Any(a.key, v))
		}
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns a LogHandler that wraps next.WithAttrs(attrs).
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{next: h.next.WithAttrs(attrs), attrs: h.attrs}
}

// WithGroup returns a LogHandler that wraps next.WithGroup(name).
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{next: h.next.WithGroup(name), attrs: h.attrs}
}
