package shard_test

import (
	"context"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// A group's Stats adds its shards' figures up, and takes the worst delay.
func TestGroupStatsSumsShards(t *testing.T) {
	g := shard.New(3, executor.WithName("sum"))
	g.Start()
	for i := range g.Len() {
		for range 10 * (i + 1) { // different work on each shard
			if _, err := spindletest.Await(t, shard.Call(g, i, func() (int, error) { return i, nil })); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := spindletest.Await(t, future.Spawn(g.Shard(1), func(ctx context.Context) (int, error) {
		_, err := future.Sleep(g.Shard(1), 0).Await(ctx)
		return 0, err
	})); err != nil {
		t.Fatal(err)
	}
	_ = g.Close() // the figures stand still from here on
	var want executor.Stats
	for i := range g.Len() {
		st := g.Shard(i).Stats()
		if st.TasksRun < uint64(10*(i+1)) {
			t.Fatalf("shard %d ran %d tasks, want at least %d", i, st.TasksRun, 10*(i+1))
		}
		want.TasksRun += st.TasksRun
		want.Queued += st.Queued
		want.Timers += st.Timers
		want.Suspended += st.Suspended
		want.Busy += st.Busy
		want.Idle += st.Idle
		want.Stalls += st.Stalls
		want.Delay.P50 = max(want.Delay.P50, st.Delay.P50)
		want.Delay.P99 = max(want.Delay.P99, st.Delay.P99)
		want.Delay.Max = max(want.Delay.Max, st.Delay.Max)
		want.Delay.Samples += st.Delay.Samples
		want.Delay.Window = max(want.Delay.Window, st.Delay.Window)
	}
	if got := g.Stats(); got != want {
		t.Fatalf("group Stats %+v, want %+v", got, want)
	}
	if want.Busy <= 0 {
		t.Error("the shards ran but report no busy time")
	}
}
