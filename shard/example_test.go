package shard_test

import (
	"context"
	"fmt"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/shard"
)

// A group of two shards. A goroutine calls shard 1; a task on shard 0
// calls shard 1 and awaits the answer there, without a lock: names is
// shard 1's state and only shard 1's loop touches it.
func Example() {
	g := shard.New(2)
	g.Start()
	defer g.Close()

	var names []string // owned by shard 1
	add := func(name string) func() (int, error) {
		return func() (int, error) {
			names = append(names, name)
			return len(names), nil
		}
	}

	n, err := shard.Call(g, 1, add("from a goroutine")).Await(context.Background())
	fmt.Println(n, err)

	task := future.Spawn(g.Shard(0), func(ctx context.Context) (string, error) {
		n, err := shard.Call(g, 1, add("from shard 0")).Await(ctx) // suspends the task on shard 0
		here, _ := g.Current()
		return fmt.Sprintf("%d names, answer awaited on shard %d", n, here), err
	})
	fmt.Println(task.Await(context.Background()))
	// Output:
	// 1 <nil>
	// 2 names, answer awaited on shard 0 <nil>
}

// hits is a per-shard counter.
type hits struct{ n int }

// A sharded service: one counter per shard, each made on its own shard.
// Increments go to the owner of their key; MapReduce sums the counters.
func ExampleSharded() {
	g := shard.New(3)
	g.Start()
	defer g.Close()
	counters := shard.NewSharded(g, func(int) *hits { return new(hits) })

	incr := func(h *hits, by int) (int, error) { h.n += by; return h.n, nil }
	var fs []*future.Future[int]
	for key := range uint64(30) {
		fs = append(fs, shard.InvokeWith(counters, g.Of(key), 1, incr))
	}
	for _, f := range fs {
		if _, err := f.Await(context.Background()); err != nil {
			fmt.Println(err)
		}
	}
	total, err := shard.MapReduce(counters,
		func(h *hits) (int, error) { return h.n, nil },
		0, func(sum, n int) int { return sum + n },
	).Await(context.Background())
	fmt.Println(total, err)
	// Output: 30 <nil>
}

// Of gives every key one owner, the same for every group of as many
// shards, and spreads keys evenly.
func ExampleGroup_Of() {
	a, b := shard.New(4), shard.New(4)
	defer a.Close()
	defer b.Close()
	perShard := make([]int, a.Len())
	for key := range uint64(40_000) {
		if a.Of(key) != b.Of(key) {
			fmt.Println("unstable owner for", key)
		}
		perShard[a.Of(key)]++
	}
	for _, n := range perShard {
		fmt.Println(n > 9_500 && n < 10_500)
	}
	// Output:
	// true
	// true
	// true
	// true
}
