package channel_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// The zero Chan is bound to no executor: its methods panic with a message
// that starts with "channel: " instead of a nil dereference.
func TestZeroValuesPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(c *channel.Chan[int])
	}{
		{"Send", func(c *channel.Chan[int]) { c.Send(1) }},
		{"Recv", func(c *channel.Chan[int]) { c.Recv() }},
		{"TrySend", func(c *channel.Chan[int]) { c.TrySend(1) }},
		{"TryRecv", func(c *channel.Chan[int]) { c.TryRecv() }},
		{"PollRecv", func(c *channel.Chan[int]) { _, _, _ = c.PollRecv(nil) }},
		{"SendWait", func(c *channel.Chan[int]) { _ = c.SendWait(context.Background(), 1) }},
		{"RecvWait", func(c *channel.Chan[int]) { _, _ = c.RecvWait(context.Background()) }},
		{"Close", func(c *channel.Chan[int]) { c.Close() }},
		{"Len", func(c *channel.Chan[int]) { c.Len() }},
		{"Executor", func(c *channel.Chan[int]) { c.Executor() }},
		{"RecvCase", func(c *channel.Chan[int]) { c.RecvCase() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spindletest.MustPanic(t, "channel: ", "not made by New", func() { tc.fn(new(channel.Chan[int])) })
		})
	}
}
