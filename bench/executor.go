package main

import (
	"fmt"
	"os"

	"github.com/spindle-rt/spindle/executor"
)

// allocation is the strategy every case's executor allocates futures with:
// -alloc under `go run ./bench`, the SPINDLE_BENCH_ALLOC environment variable
// ("heap" or "slab") under `go test -bench`.
var allocation = executor.DefaultAllocation

func init() {
	if v := os.Getenv("SPINDLE_BENCH_ALLOC"); v != "" {
		if err := setAllocation(v); err != nil {
			panic("bench: SPINDLE_BENCH_ALLOC: " + err.Error())
		}
	}
}

// setAllocation parses an allocation strategy's name.
func setAllocation(name string) error {
	switch name {
	case "heap":
		allocation = executor.AllocHeap
	case "slab":
		allocation = executor.AllocSlab
	default:
		return fmt.Errorf("unknown allocation %q (want heap or slab)", name)
	}
	return nil
}

// newExecutor returns an executor for a case: the options given, after the
// run's allocation strategy (so a case may still choose its own).
func newExecutor(opts ...executor.Option) *executor.Executor {
	return executor.New(append([]executor.Option{executor.WithAllocation(allocation)}, opts...)...)
}
