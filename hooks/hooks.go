package hooks

// ID identifies an asynchronous resource (a future, a spawned task, a
// timer) for the hooks. IDs are assigned, from 1 up and unique per executor,
// only while hooks are registered with the resource's executor; a resource
// created while none are registered has ID 0 and is never reported. IDs
// increase in the order of creation: a resource created after another
// (after it in the same goroutine, or on the other side of anything that
// orders two goroutines, such as a Submit or a future's completion) has
// the larger ID. They need not be consecutive: the loop takes IDs in
// blocks, and skips the rest of a block once another goroutine has taken
// one.
type ID uint64

// Kind says what sort of resource an ID names.
type Kind uint8

// The kinds of resources spindle reports to Init.
const (
	// KindFuture is a future created by a promise, Then, Transform, Call,
	// Resolved, Failed or a combinator.
	KindFuture Kind = iota + 1
	// KindTask is a task started by future.Spawn.
	KindTask
	// KindTimer is a timer started by AfterFunc or future.Sleep.
	KindTimer
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindFuture:
		return "future"
	case KindTask:
		return "task"
	case KindTimer:
		return "timer"
	}
	return "unknown"
}

// Hooks are callbacks an executor calls at points in the life of every
// asynchronous resource bound to it (see executor.AddHooks and
// executor.WithHooks). Any field may be nil; a nil field costs nothing.
//
// All of them run on the loop, one at a time, like any callback: events of
// resources created or completed by goroutines that do not hold the loop
// are handed to the loop and reported there, in the order they happened and
// before any later event of the same resource. A hook that panics is
// reported to the executor's panic handler; the continuation it wraps still
// runs, once. Hooks should be quick: they run on the hot path of every
// resource.
type Hooks struct {
	// Init is called when a resource is created, before any other hook of
	// it. trigger is the resource that caused it: for a future derived with
	// Then or Transform it is the future it hangs on; otherwise the resource
	// whose continuation was running (executor.CurrentID), or 0 at top
	// level and for resources created by a goroutine that does not hold the
	// loop.
	Init func(id ID, kind Kind, trigger ID)
	// Before is called just before a continuation that resolves resource id
	// runs (the callback of the future Then or Transform made, a timer's
	// callback, the function of Call), before each slice of a spawned task
	// between its suspensions, and before each OnComplete callback of
	// resource id. From Before to After, executor.CurrentID returns id, so
	// resources created by the continuation have id as their trigger.
	Before func(id ID)
	// After is called just after that continuation returns (or panics).
	After func(id ID)
	// Resolve is called when resource id is completed with a value or an
	// error (or cancelled).
	Resolve func(id ID)
	// Destroy is called, on the loop, once after resource id has been
	// garbage collected. Only resources created while a Destroy hook is
	// registered are tracked for it (runtime.AddCleanup, which costs a couple
	// of allocations per resource and work for the collector); without a
	// Destroy hook nothing is tracked. It comes late, at the collector's
	// pace, and not at all for resources still alive when the executor
	// closes.
	Destroy func(id ID)
}
