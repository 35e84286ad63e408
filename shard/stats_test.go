package shard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	got := g.Stats()
	var tasks uint64
	var busy, idle, worst time.Duration
	samples := 0
	for i := range g.Len() {
		st := g.Shard(i).Stats()
		if st.TasksRun < uint64(10*(i+1)) {
			t.Fatalf("shard %d ran %d tasks, want at least %d", i, st.TasksRun, 10*(i+1))
		}
		tasks, busy, idle = tasks+st.TasksRun, busy+st.Busy, idle+st.Idle
		worst, samples = max(worst, st.Delay.Max), samples+st.Delay.Samples
	}
	if got.TasksRun != tasks || got.Busy != busy || got.Idle != idle || busy <= 0 {
		t.Errorf("group: %d tasks, busy %v, idle %v; the shards add up to %d, %v, %v", got.TasksRun, got.Busy, got.Idle, tasks, busy, idle)
	}
	if got.Delay.Max != worst || got.Delay.Samples != samples {
		t.Errorf("group delay: max %v of %d samples, want the worst shard's %v and %d in all", got.Delay.Max, got.Delay.Samples, worst, samples)
	}
}

// A group's Stats adds its shards' figures up: the work of every loop,
// the queues of all of them.
func ExampleGroup_Stats() {
	g := shard.New(2)
	g.Start()
	for i := range 2 {
		for range 5 {
			_, _ = shard.Call(g, i, func() (int, error) { return i, nil }).Await(context.Background())
		}
	}
	_ = g.Close() // the figures stand still
	sum := g.Shard(0).Stats().TasksRun + g.Shard(1).Stats().TasksRun
	st := g.Stats()
	fmt.Println(st.TasksRun == sum, st.TasksRun >= 10, st.Queued)
	// Output: true true 0
}
