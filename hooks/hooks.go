package hooks

// ID identifies an asynchronous resource (a future, a spawned task, a
// timer) for the hooks. IDs are assigned while hooks are registered; a
// resource created while none are registered has ID 0.
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
// asynchronous resource bound to it. Any field may be nil. All of them run
// on the loop.
type Hooks struct {
	// Init is called when a resource is created. trigger is the resource that
	// caused it: for a future derived with Then it is the future it hangs
	// on; otherwise the resource whose continuation was running
	// (Executor.CurrentID), or 0 at top level.
	Init func(id ID, kind Kind, trigger ID)
	// Before is called just before a continuation that resolves resource id
	// runs, and around each slice of a spawned task between suspensions.
	Before func(id ID)
	// After is called just after that continuation returns (or panics).
	After func(id ID)
	// Resolve is called when resource id is completed.
	Resolve func(id ID)
	// Destroy is called, on the loop, after resource id has been garbage
	// collected. Resources are tracked for it only while a Destroy hook is
	// registered.
	Destroy func(id ID)
}
