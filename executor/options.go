package executor

import (
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Option configures an Executor in New.
type Option interface {
	apply(*loop.Config)
}

type optionFunc func(*loop.Config)

func (f optionFunc) apply(c *loop.Config) { f(c) }

// WithName names the executor in logs and panics.
func WithName(name string) Option {
	return optionFunc(func(c *loop.Config) { c.Name = name })
}

// WithPanicHandler sets the function that receives a panic raised on the loop
// that has no future to carry it (a Post or Submit callback, a timer, an
// OnComplete callback, a hook). It runs on the loop. The default logs the
// value and stack with log/slog.
func WithPanicHandler(fn func(v any)) Option {
	if fn == nil {
		panic("executor: WithPanicHandler with nil func")
	}
	return optionFunc(func(c *loop.Config) { c.PanicHandler = fn })
}

// WithHooks registers h from the start, as AddHooks would.
func WithHooks(h hooks.Hooks) Option {
	return optionFunc(func(c *loop.Config) { c.Hooks = append(c.Hooks, h) })
}

// Allocation says how the objects behind futures (promises, Then and
// Transform links, Call results) are allocated.
type Allocation uint8

const (
	// AllocHeap allocates each object on its own: memory goes back to the
	// garbage collector as soon as the object is unreachable.
	AllocHeap = Allocation(loop.AllocHeap)
	// AllocSlab carves objects created on the loop out of chunks of about
	// 13 KiB (at least 16 objects), so a chunk's objects cost one allocation;
	// a chunk stays alive while any object in it is reachable. Objects created off the loop, and all objects while a
	// Destroy hook is registered (so that Destroy stays prompt), still come
	// from the heap.
	AllocSlab = Allocation(loop.AllocSlab)
)

// String names the strategy.
func (a Allocation) String() string { return loop.Allocation(a).String() }

// DefaultAllocation is the strategy of an executor made without
// WithAllocation. Slabs won on every future-heavy benchmark (faster per Then
// link, gather and immediate channel operation, and about 1/60 of the
// allocations; see docs/benchmarks.md); choose AllocHeap where a few
// long-lived futures among many short-lived ones would pin whole chunks.
const DefaultAllocation = AllocSlab

// WithAllocation chooses how futures bound to the executor are allocated
// (DefaultAllocation when not given).
func WithAllocation(a Allocation) Option {
	if a != AllocHeap && a != AllocSlab {
		panic("executor: WithAllocation with unknown strategy")
	}
	return optionFunc(func(c *loop.Config) { c.Alloc = loop.Allocation(a) })
}
