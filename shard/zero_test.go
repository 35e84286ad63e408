package shard_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// The zero Group has no shards: its methods panic with a message that
// starts with "shard: " instead of a nil dereference or a hang.
func TestZeroValuesPanic(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(g *shard.Group)
	}{
		{"Start", func(g *shard.Group) { g.Start() }},
		{"Close", func(g *shard.Group) { _ = g.Close() }},
		{"Shutdown", func(g *shard.Group) { _ = g.Shutdown(context.Background()) }},
		{"Len", func(g *shard.Group) { g.Len() }},
		{"Shard", func(g *shard.Group) { g.Shard(0) }},
		{"Of", func(g *shard.Group) { g.Of(1) }},
		{"Current", func(g *shard.Group) { g.Current() }},
		{"Call", func(g *shard.Group) { shard.Call(g, 0, func() (int, error) { return 0, nil }) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spindletest.MustPanic(t, "shard: ", "not made by New", func() { tc.fn(new(shard.Group)) })
		})
	}
}
