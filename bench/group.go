package main

// BenchmarkGroup: a task starts groupTasks small tasks in a group and waits
// for them all, with no limit and with a limit of 8. The baseline is
// golang.org/x/sync/errgroup doing the same from a goroutine (its Go
// blocks at the limit). Figures are per task.

import (
	"context"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/spindle-rt/spindle/future"
)

const groupTasks = 1000

func init() {
	register(
		benchCase{Group: "Group", Name: "spindle", Unit: "task", Baseline: "errgroup", Fn: func(b *testing.B) { groupSpindle(b, 0) }},
		benchCase{Group: "Group", Name: "errgroup", Unit: "task", Fn: func(b *testing.B) { groupErrgroup(b, 0) }},
		benchCase{Group: "Group", Name: "spindle_limit8", Unit: "task", Baseline: "errgroup_limit8", Fn: func(b *testing.B) { groupSpindle(b, 8) }},
		benchCase{Group: "Group", Name: "errgroup_limit8", Unit: "task", Fn: func(b *testing.B) { groupErrgroup(b, 8) }},
	)
}

// groupSpindle: a spawned task makes a future.Group (limit <= 0: none),
// gives it groupTasks tasks that each add one to a counter, and waits.
func groupSpindle(b *testing.B, limit int) {
	ex := newExecutor()
	defer ex.Close()
	n := 0
	work := func(context.Context) error { n++; return nil }
	body := func(ctx context.Context) (int, error) {
		g := future.NewGroup(ctx, ex)
		g.SetLimit(limit)
		for range groupTasks {
			g.Go(work)
		}
		return 0, g.Wait(ctx)
	}
	run := func() {
		f := future.Spawn(ex, body)
		ex.RunUntilIdle()
		if _, err := f.Await(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	run() // warm the pool of task goroutines
	n = 0
	t0 := ex.Stats().TasksRun
	m := startMeter(b)
	for range b.N {
		run()
	}
	m.Stop(b, "task", float64(b.N*groupTasks), float64(ex.Stats().TasksRun-t0))
	if n != b.N*groupTasks {
		b.Fatalf("ran %d tasks, want %d", n, b.N*groupTasks)
	}
}

// groupErrgroup: the same with errgroup.WithContext from this goroutine.
func groupErrgroup(b *testing.B, limit int) {
	var n atomic.Int64
	work := func() error { n.Add(1); return nil }
	m := startMeter(b)
	for range b.N {
		g, _ := errgroup.WithContext(context.Background())
		if limit > 0 {
			g.SetLimit(limit)
		}
		for range groupTasks {
			g.Go(work)
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	m.Stop(b, "task", float64(b.N*groupTasks), -1)
	if n.Load() != int64(b.N*groupTasks) {
		b.Fatalf("ran %d tasks, want %d", n.Load(), b.N*groupTasks)
	}
}
