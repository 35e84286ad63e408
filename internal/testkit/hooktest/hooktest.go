// Package hooktest records the hook calls of an executor for the tests of
// the packages that report them (executor, future).
package hooktest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/hooks"
)

// Recorder logs hook calls as strings ("init 3 future 1", "before 3", ...)
// and counts those made by a goroutine that does not hold the loop.
type Recorder struct {
	ex      *executor.Executor
	mu      sync.Mutex
	ev      []string
	offLoop int
}

// New returns a recorder for ex's hooks.
func New(ex *executor.Executor) *Recorder { return &Recorder{ex: ex} }

// Add logs an event of the test's own.
func (r *Recorder) Add(format string, args ...any) {
	r.mu.Lock()
	r.ev = append(r.ev, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Hook logs a hook call and notes whether it ran off the loop.
func (r *Recorder) Hook(format string, args ...any) {
	if !r.ex.OnLoop() {
		r.mu.Lock()
		r.offLoop++
		r.mu.Unlock()
	}
	r.Add(format, args...)
}

// Hooks returns Init, Before, After and Resolve hooks that log to r. (No
// Destroy: registering one changes how resources are allocated and tracked.)
func (r *Recorder) Hooks() hooks.Hooks {
	return hooks.Hooks{
		Init: func(id hooks.ID, kind hooks.Kind, trigger hooks.ID) {
			r.Hook("init %d %v %d", id, kind, trigger)
		},
		Before:  func(id hooks.ID) { r.Hook("before %d", id) },
		After:   func(id hooks.ID) { r.Hook("after %d", id) },
		Resolve: func(id hooks.ID) { r.Hook("resolve %d", id) },
	}
}

// HooksWithDestroy returns Hooks plus a Destroy hook that logs to r.
func (r *Recorder) HooksWithDestroy() hooks.Hooks {
	h := r.Hooks()
	h.Destroy = func(id hooks.ID) { r.Hook("destroy %d", id) }
	return h
}

// Events returns the events logged so far.
func (r *Recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ev)
}

// OffLoop returns how many hook calls ran off the loop.
func (r *Recorder) OffLoop() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.offLoop
}

// Check fails t unless the events are exactly want and every hook ran on
// the loop.
func (r *Recorder) Check(t testing.TB, want ...string) {
	t.Helper()
	if got := r.Events(); !slices.Equal(got, want) {
		t.Fatalf("hook calls:\n got  %s\n want %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if n := r.OffLoop(); n != 0 {
		t.Fatalf("%d hook calls ran on a goroutine that does not hold the loop", n)
	}
}

// Reset forgets the events logged so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.ev = nil
	r.mu.Unlock()
}
