package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

// newStarted returns a started group of n shards, closed when the test ends.
func newStarted(t *testing.T, n int, opts ...executor.Option) *shard.Group {
	t.Helper()
	g := shard.New(n, opts...)
	g.Start()
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// logSvc records, on its own shard, what reached it.
type logSvc struct{ log []string }

func record(l *logSvc, s string) { l.log = append(l.log, s) }

// Sends, updates (one batch and more, to another shard and to the caller's
// own) and calls that one shard makes run in the order they were made.
func TestSendAndUpdateKeepOrder(t *testing.T) {
	g := newStarted(t, 2)
	s := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	var want [2][]string
	on(t, g, 0, func(ctx context.Context) (int, error) {
		n := 0
		step := func(to int, kind string) error {
			n++
			msg := fmt.Sprint(kind, " ", n)
			want[to] = append(want[to], msg)
			switch kind {
			case "update":
				return shard.Update(s, to, msg, record)
			case "send":
				return shard.Send(g, to, func() { record(s.Local(), msg) })
			}
			_, err := shard.Invoke(s, to, func(l *logSvc) (int, error) { record(l, msg); return 0, nil }).Await(ctx)
			return err
		}
		for round := range 3 {
			for to := range 2 {
				for range 70 + round { // more than a batch
					if err := step(to, "update"); err != nil {
						return 0, err
					}
				}
				for _, kind := range []string{"send", "update", "update", "call", "update", "send"} {
					if err := step(to, kind); err != nil {
						return 0, err
					}
				}
			}
		}
		return 0, step(1, "call") // behind everything sent to shard 1
	})
	for to := range 2 {
		got := on(t, g, to, func(context.Context) ([]string, error) { return slices.Clone(s.Local().log), nil })
		if !slices.Equal(got, want[to]) {
			t.Fatalf("shard %d got %d messages, want %d:\n got %v\nwant %v", to, len(got), len(want[to]), got, want[to])
		}
	}
}

// A panicking update goes to the destination's panic handler and the
// updates after it in its batch are still applied; a panicking Send goes
// there too.
func TestSendAndUpdatePanics(t *testing.T) {
	var panics spindletest.Panics
	g := newStarted(t, 2, executor.WithPanicHandler(panics.Handler))
	type sum struct{ n int }
	s := shard.NewSharded(g, func(int) *sum { return &sum{} })
	add := func(x *sum, v int) {
		if v < 0 {
			panic(fmt.Sprint("update ", v))
		}
		x.n += v
	}
	on(t, g, 0, func(ctx context.Context) (int, error) {
		for to := range 2 {
			for _, v := range []int{1, 2, -1, 4, -2, 8} {
				if err := shard.Update(s, to, v, add); err != nil {
					return 0, err
				}
			}
			if err := shard.Send(g, to, func() { panic("send") }); err != nil {
				return 0, err
			}
		}
		for to := range 2 { // behind the updates and sends
			if _, err := shard.Call(g, to, func() (int, error) { return 0, nil }).Await(ctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	for to := range 2 {
		n, err := spindletest.Await(t, shard.Invoke(s, to, func(x *sum) (int, error) { return x.n, nil }))
		if n != 15 || err != nil {
			t.Errorf("shard %d: sum %d (%v), want 15: the updates around the panics applied", to, n, err)
		}
	}
	handled := panics.Got()
	want := []any{"update -1", "update -2", "send"}
	if len(handled) != 6 {
		t.Fatalf("panic handler got %v, want %v for each shard", handled, want)
	}
	for _, w := range want {
		if !slices.Contains(handled, w) {
			t.Fatalf("panic handler got %v, want %v for each shard", handled, want)
		}
	}
}

// From a goroutine that is on none of the shards, Send and Update are
// Submit on the destination; once the group has closed they return
// executor.ErrClosed; a nil func panics.
func TestSendFromOutsideAndAfterClose(t *testing.T) {
	g := shard.New(2)
	g.Start()
	type box struct{ v int }
	s := shard.NewSharded(g, func(int) *box { return &box{} })
	done := make(chan int, 1)
	if err := shard.Send(g, 1, func() { done <- 1 }); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != 1 {
		t.Fatalf("Send from outside ran %d", got)
	}
	if err := shard.Update(s, 1, 5, func(b *box, v int) { b.v += v }); err != nil {
		t.Fatal(err)
	}
	if v, err := spindletest.Await(t, shard.Invoke(s, 1, func(b *box) (int, error) { return b.v, nil })); v != 5 || err != nil {
		t.Fatalf("after Update from outside: %d, %v; want 5", v, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := shard.Send(g, 0, func() {}); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	if err := shard.Update(s, 0, 1, func(*box, int) {}); !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Update after Close: %v, want ErrClosed", err)
	}
	for name, fn := range map[string]func(){
		"Send":   func() { _ = shard.Send(g, 0, nil) },
		"Update": func() { _ = shard.Update[box, int](s, 0, 1, nil) },
		"to":     func() { _ = shard.Send(g, 2, func() {}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

// An update allocates nothing once its batches circulate.
func TestUpdateAllocatesNothing(t *testing.T) {
	g := newStarted(t, 2)
	type sum struct{ n uint64 }
	s := shard.NewSharded(g, func(int) *sum { return &sum{} })
	add := func(x *sum, v uint64) { x.n += v }
	allocs := on(t, g, 0, func(ctx context.Context) (float64, error) {
		round := func() {
			for i := range 4096 {
				_ = shard.Update(s, i&1, 1, add)
			}
			_ = future.Yield(ctx) // the batch boundary: batches leave and come back
			_, _ = shard.Call(g, 1, func() (int, error) { return 0, nil }).Await(ctx)
		}
		round()
		return testing.AllocsPerRun(10, round), nil
	})
	// The round's Call costs its future; the updates cost nothing.
	if allocs > 4 {
		t.Fatalf("%.1f allocations per round of 4096 updates, want at most the Call's", allocs)
	}
}

// A batch of updates left open at the end of a loop's batch leaves with
// the batch boundary, and what the shard sends after it still gets
// published at the next boundary.
func TestOpenBatchLeavesAtBatchBoundary(t *testing.T) {
	g := newStarted(t, 2)
	type sum struct{ n int }
	s := shard.NewSharded(g, func(int) *sum { return &sum{} })
	got := make(chan int, 1)
	on(t, g, 0, func(ctx context.Context) (int, error) {
		for range 3 {
			if err := shard.Update(s, 1, 1, func(x *sum, v int) { x.n += v }); err != nil {
				return 0, err
			}
		}
		// Wait for work done off the loop: its result comes through the
		// inbox, after a batch boundary, which seals the batch.
		if _, err := future.Go(g.Shard(0), func(context.Context) (int, error) { return 0, nil }).Await(ctx); err != nil {
			return 0, err
		}
		return 0, shard.Send(g, 1, func() { got <- s.Local().n })
	})
	if n := spindletest.Recv(t, got); n != 3 {
		t.Fatalf("shard 1 had applied %d updates when the Send arrived, want 3", n)
	}
}

// An Updater's updates keep their order with everything else the shard
// sends, to another shard and to its own, while the batch it last filled
// is sealed by a Send or a call, taken over by Update of another service
// of the same type, filled up, or sent at a batch boundary.
func TestUpdaterKeepsOrderWithOtherMessages(t *testing.T) {
	g := newStarted(t, 2)
	s1 := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	s2 := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	var want1, want2 [2][]string
	on(t, g, 0, func(ctx context.Context) (int, error) {
		u := shard.NewUpdater(s1, record)
		n := 0
		kinds := []string{"updater", "updater", "update2", "updater", "send", "updater", "update1", "yield", "updater", "call"}
		for i := range 3000 {
			to := (i / 7) & 1
			kind := kinds[i%len(kinds)]
			if i%300 < 130 {
				kind = "updater" // runs of more than a batch
			}
			n++
			msg := fmt.Sprint(kind, " ", n)
			var err error
			switch kind {
			case "updater":
				want1[to] = append(want1[to], msg)
				err = u.Update(to, msg)
			case "update1":
				want1[to] = append(want1[to], msg)
				err = shard.Update(s1, to, msg, record)
			case "update2":
				want2[to] = append(want2[to], msg)
				err = shard.Update(s2, to, msg, record)
			case "send":
				want1[to] = append(want1[to], msg)
				err = shard.Send(g, to, func() { record(s1.Local(), msg) })
			case "yield":
				err = future.Yield(ctx)
			case "call":
				want1[to] = append(want1[to], msg)
				_, err = shard.Invoke(s1, to, func(l *logSvc) (int, error) { record(l, msg); return 0, nil }).Await(ctx)
			}
			if err != nil {
				return 0, err
			}
		}
		for to := range 2 {
			if _, err := shard.Call(g, to, func() (int, error) { return 0, nil }).Await(ctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	for to := range 2 {
		for i, c := range []struct {
			s    *shard.Sharded[logSvc]
			want []string
		}{{s1, want1[to]}, {s2, want2[to]}} {
			got := on(t, g, to, func(context.Context) ([]string, error) { return slices.Clone(c.s.Local().log), nil })
			if !slices.Equal(got, c.want) {
				t.Fatalf("service %d on shard %d got %d messages, want %d:\n got %v\nwant %v", i+1, to, len(got), len(c.want), got, c.want)
			}
		}
	}
}

// An Updater whose destination has closed returns ErrClosed, although the
// batch it was filling is still open.
func TestUpdaterAfterDestinationClosed(t *testing.T) {
	g := newStarted(t, 2)
	s := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	err := on(t, g, 0, func(ctx context.Context) (error, error) {
		u := shard.NewUpdater(s, record)
		if err := u.Update(1, "before"); err != nil {
			return nil, err
		}
		if err := g.Shard(1).Close(); err != nil {
			return nil, err
		}
		return u.Update(1, "after"), nil
	})
	if !errors.Is(err, executor.ErrClosed) {
		t.Fatalf("Update to a closed shard: %v, want ErrClosed", err)
	}
}

// A batch that an Updater last filled and that came back and was reused
// for another service of the same type is not the updater's any more.
func TestUpdaterBatchReusedByAnotherService(t *testing.T) {
	g := newStarted(t, 2)
	s1 := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	s2 := shard.NewSharded(g, func(int) *logSvc { return &logSvc{} })
	var want2 []string
	on(t, g, 0, func(ctx context.Context) (int, error) {
		u := shard.NewUpdater(s1, record)
		update2 := func(msg string) error {
			want2 = append(want2, msg)
			return shard.Update(s2, 1, msg, record)
		}
		if err := u.Update(1, "a"); err != nil { // batch A, for s1
			return 0, err
		}
		if err := update2("x"); err != nil { // seals A; batch B, for s2
			return 0, err
		}
		if err := shard.Send(g, 1, func() {}); err != nil { // seals B
			return 0, err
		}
		// A and B come back before the call's reply: the free list holds
		// B on top of A.
		if _, err := shard.Call(g, 1, func() (int, error) { return 0, nil }).Await(ctx); err != nil {
			return 0, err
		}
		for i := range 65 { // B for s2, filled up, then A for s2
			if err := update2(fmt.Sprint("y", i)); err != nil {
				return 0, err
			}
		}
		if err := u.Update(1, "b"); err != nil { // A is s2's now
			return 0, err
		}
		// Behind everything sent to shard 1.
		_, err := shard.Call(g, 1, func() (int, error) { return 0, nil }).Await(ctx)
		return 0, err
	})
	got1 := on(t, g, 1, func(context.Context) ([]string, error) { return slices.Clone(s1.Local().log), nil })
	got2 := on(t, g, 1, func(context.Context) ([]string, error) { return slices.Clone(s2.Local().log), nil })
	if want1 := []string{"a", "b"}; !slices.Equal(got1, want1) {
		t.Errorf("s1 got %v, want %v", got1, want1)
	}
	if !slices.Equal(got2, want2) {
		t.Errorf("s2 got %v, want %v", got2, want2)
	}
}
