package sim_test

import (
	"context"
	"fmt"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// A client's operations recorded on the world's clock. Each request
// takes 10 ms to be answered; at 25 ms its server is taken to crash, and
// the request in flight then has an unknown outcome: its late reply does
// not change it. The history goes to a checker such as porcupine
// (docs/simulation.md, "Checking a history").
func ExampleHistory() {
	w := sim.New(1)
	defer w.Close()
	cli := w.Host("client").Executor()
	h := sim.NewHistory[string, string](w)
	replies := map[string]string{"SET x 1": "OK", "GET x": "1", "SET x 2": "OK"}
	future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
		for _, req := range []string{"SET x 1", "GET x", "SET x 2"} {
			i := h.Call(1, req)
			if _, err := future.Sleep(cli, 10*time.Millisecond).Await(ctx); err != nil {
				return struct{}{}, err
			}
			h.Return(i, replies[req]) // false once the crash has settled it
		}
		return struct{}{}, nil
	})
	w.RunUntil(func() bool { return w.Now() >= 25*time.Millisecond }, time.Second)
	h.Settle(func(op *sim.Op[string, string]) sim.Outcome {
		if op.Input == "GET x" {
			return sim.Failed // a read changes nothing
		}
		return sim.Unknown // a write may or may not have happened
	})
	w.RunUntil(func() bool { return false }, time.Second)
	for _, op := range h.Ops() {
		switch op.Outcome {
		case sim.Returned:
			fmt.Printf("%-8s %v..%v -> %s\n", op.Input, op.Call, op.Return, op.Output)
		case sim.Unknown:
			fmt.Printf("%-8s %v..? (unknown)\n", op.Input, op.Call)
		}
	}
	// Output:
	// SET x 1  0s..10ms -> OK
	// GET x    10ms..20ms -> 1
	// SET x 2  20ms..? (unknown)
}
