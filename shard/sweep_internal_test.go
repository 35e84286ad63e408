package shard

import (
	"errors"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// The sweep completes calls left in lanes: those that ran with their
// result, those that did not with ErrClosed. The loops are driven by hand,
// so the calls stop exactly where the test wants them.
func TestSweepReleasesCallsLeftInLanes(t *testing.T) {
	g := newGroup(2, nil)
	defer g.Close()
	var unanswered, answered []*future.Future[int]
	g.shards[0].exe.Drive(func() {
		for i := range 3 {
			answered = append(answered, Call(g, 1, func() (int, error) { return i, nil }))
		}
	})
	g.shards[1].exe.RunUntilIdle() // runs them; the replies wait in lane 1->0
	g.shards[0].exe.Drive(func() {
		for i := range 2 {
			unanswered = append(unanswered, Call(g, 1, func() (int, error) { return i, nil }))
		}
	})
	g.sweep() // neither loop runs
	for i, f := range answered {
		if v, err := f.Await(t.Context()); v != i || err != nil {
			t.Errorf("answered call %d: %d, %v", i, v, err)
		}
	}
	for i, f := range unanswered {
		if r, ok := f.Peek(); !ok || !errors.Is(r.Err, executor.ErrClosed) {
			t.Errorf("unanswered call %d: %+v, %v; want ErrClosed", i, r, ok)
		}
	}
}
