package channel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// A receive loop that stops on channel.ErrClosed stops whether the channel
// closes or its executor does: executor.ErrClosed matches channel.ErrClosed.
// A closed channel does not match executor.ErrClosed, so the two can still
// be told apart. Before, the executor's closing came back from the same
// RecvWait as an error that matched only executor.ErrClosed.
func TestErrClosedOfChannelAndExecutor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(ex *executor.Executor, c *channel.Chan[int])
		executor bool // the error matches executor.ErrClosed as well
	}{
		{"channel closed", func(ex *executor.Executor, c *channel.Chan[int]) {
			_ = ex.Submit(c.Close)
		}, false},
		{"executor closed", func(ex *executor.Executor, _ *channel.Chan[int]) { _ = ex.Close() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			c := channel.New[int](ex, 0)
			waiting := make(chan struct{})
			got := future.Spawn(ex, func(ctx context.Context) (int, error) {
				close(waiting)
				n := 0
				for {
					if _, err := c.RecvWait(ctx); err != nil {
						if errors.Is(err, channel.ErrClosed) {
							return n, err // the loop's one way out
						}
						return -1, err
					}
					n++
				}
			})
			<-waiting
			tc.end(ex, c)
			n, err := spindletest.Await(t, got)
			if n != 0 || !errors.Is(err, channel.ErrClosed) {
				t.Fatalf("receive loop: %d, %v; want 0 and an error matching channel.ErrClosed", n, err)
			}
			if errors.Is(err, executor.ErrClosed) != tc.executor {
				t.Errorf("errors.Is(%v, executor.ErrClosed) = %v, want %v", err, !tc.executor, tc.executor)
			}
		})
	}
	if errors.Is(channel.ErrClosed, executor.ErrClosed) {
		t.Error("channel.ErrClosed matches executor.ErrClosed")
	}
	if !errors.Is(executor.ErrClosed, channel.ErrClosed) {
		t.Error("executor.ErrClosed does not match channel.ErrClosed")
	}
}
