package executor_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// The zero Executor and the zero Timer are not usable: every method that
// would need a loop panics with a message that starts with "executor: "
// and says what is wrong, rather than a nil dereference, a close of a nil
// channel, or work silently lost.
func TestZeroValuesPanic(t *testing.T) {
	const notMade = "not made by New"
	for _, tc := range []struct {
		name, want string
		fn         func(e *executor.Executor)
	}{
		{"Close", notMade, func(e *executor.Executor) { _ = e.Close() }},
		{"Shutdown", notMade, func(e *executor.Executor) { _ = e.Shutdown(context.Background()) }},
		{"Start", notMade, func(e *executor.Executor) { e.Start() }},
		{"Run", notMade, func(e *executor.Executor) { _ = e.Run(context.Background()) }},
		{"RunUntilIdle", notMade, func(e *executor.Executor) { e.RunUntilIdle() }},
		{"Drive", notMade, func(e *executor.Executor) { e.Drive(func() {}) }},
		{"Submit", notMade, func(e *executor.Executor) { _ = e.Submit(func() {}) }},
		{"Done", notMade, func(e *executor.Executor) { e.Done() }},
		{"Post", "does not hold the loop", func(e *executor.Executor) { e.Post(func() {}) }},
		{"AfterFunc", "does not hold the loop", func(e *executor.Executor) { e.AfterFunc(0, func() {}) }},
		{"Timer.Stop", "not made by AfterFunc", func(*executor.Executor) { new(executor.Timer).Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spindletest.MustPanic(t, "executor: ", tc.want, func() { tc.fn(new(executor.Executor)) })
		})
	}
}
