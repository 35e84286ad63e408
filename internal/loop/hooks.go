package loop

// Hook dispatch.
//
// Registered hooks are published as an immutable snapshot (hookSet) through
// an atomic pointer: AddHooks and its remove func build a new snapshot under
// mu and store it (nil when no callback is registered). A snapshot lists only
// the non-nil callbacks of each kind, so a registration with Init alone
// costs nothing at Before and After.
//
// Fast paths. Resource ids come from one atomic counter and are assigned
// only while a snapshot exists, so with no hooks every resource has id 0:
// creating one costs one atomic load and a branch (NewResource), completing
// one a branch on its id (the caller checks id != 0), and the loop runs a
// queued item with id 0 without looking at the hooks at all. Destroy
// tracking (TrackDestroy: runtime.AddCleanup) is set up by a resource's
// creator only while the snapshot has a Destroy callback.
//
// Where hooks run. Every hook runs on the loop. An event raised by a
// goroutine that does not hold the loop (a promise created or resolved
// there, a resource collected by the garbage collector) goes to a mailbox:
// a mutex-guarded FIFO of events (hookEvent) that the loop drains before it dispatches
// any other hook (so Init comes before the Before, Resolve and Destroy of
// the same resource) and in a drain task queued through the inbox when the
// mailbox becomes non-empty (so events are delivered, in order, before
// anything the same goroutine submits afterwards). One drain task serves a
// whole burst of events: reports from the collector do not cost a task
// each.
//
// Pairs. The loop dispatches Before and After of one continuation from the
// same snapshot (inflight), loaded just before Before: a hook removed while
// the continuation runs still gets the After of a Before it got, a hook added
// then does not get an After without a Before, and a change made on the loop
// takes effect from the next continuation on.
//
// Panics. A panicking hook neither skips the continuation it wraps nor the
// other hooks; its panic goes to the panic handler. Init and Resolve run
// inside user code (a Then, a Resolve), so each dispatch of them is guarded
// by a deferred recover. Before and After run straight from the loop
// (runHooked), unguarded: a panic reaches the loop's own recovery, which
// hands it to recoverItem, and that finishes the item's protocol (the
// other hooks, the continuation, once) on a guarded slow path. A deferred
// recover is the largest part of a hook call's cost: the guard of a single
// Init or Resolve hook holds only a flag and lives in the dispatching
// function itself (about 1 ns, against about 3 ns for the guard of
// several). BenchmarkNewResource measures a resource made and completed on
// the loop: about 5 ns with one Init hook and 6 ns with one Resolve hook
// (12 and 10.5 ns when each id cost an atomic add and each guard a call of
// its own), against 0.4 ns with no hooks.
//
// The mailbox is a list of fixed-size event blocks, recycled; the loop
// dispatches mailed events with the empty frame and CurrentID 0.

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/hooks"
)

// Loop is the loop async-local storage runs on.
var _ hooks.Loop = (*Loop)(nil)

type hookState struct {
	mu     sync.Mutex
	regs   []*hooks.Hooks
	snap   atomic.Pointer[hookSet]
	nextID atomic.Uint64
	// resolving, wrapping and destroying mirror "the snapshot has a
	// Resolve hook", "... a Before or After hook" and "... a Destroy hook",
	// so that completing a resource, running its continuation and making
	// one (DestroyHooked) check one flag inline.
	resolving  atomic.Bool
	wrapping   atomic.Bool
	destroying atomic.Bool

	// The mailbox of events raised off the loop, on cache lines of its own:
	// the collector's goroutine writes it while the loop reads the fields
	// above on every resource.
	_        [64]byte
	mbMu     sync.Mutex
	mb       blockList[hookEvent] // the events, in order; under mbMu
	mbQueued bool                 // a drain task is queued and has not started; under mbMu
	mbHas    atomic.Bool          // the mailbox is not empty; set and cleared under mbMu

	_ [64]byte

	// Loop-owned.
	idNext   hooks.ID // the next id of the loop's block
	idEnd    hooks.ID // just past the loop's block: idNext == idEnd means take a new one
	inflight *hookSet // snapshot whose Before ran for the running continuation
	stage    uint8    // which hooks runHooked is calling (stageNone, ...)
	hookAt   int      // index of the hook runHooked is calling
	draining bool     // the loop is dispatching mailbox events
}

type hookSet struct {
	init    []func(hooks.ID, hooks.Kind, hooks.ID)
	before  []func(hooks.ID)
	after   []func(hooks.ID)
	resolve []func(hooks.ID)
	destroy []func(hooks.ID)
	wrap    bool // before or after is not empty
	// before1 and after1 are the Before and After hooks when there is one
	// of each (the common case), else nil: runHooked calls them without a
	// loop.
	before1, after1 func(hooks.ID)
}

const (
	evInit uint8 = iota
	evResolve
	evDestroy
)

// hookEvent is a hook call raised off the loop, waiting in the mailbox.
type hookEvent struct {
	op      uint8
	kind    hooks.Kind
	id      hooks.ID
	trigger hooks.ID
}

// The mailbox is a block list (blocks.go), so that a burst of events (the
// collector frees thousands of tracked resources at once) costs a store per
// event, not the regrowth and copying of one big slice. It keeps up to
// mailFreeBlocks empty blocks for the next burst.
const mailFreeBlocks = 32

func (h *hookState) add(x hooks.Hooks) *hooks.Hooks {
	reg := &x
	h.mu.Lock()
	h.regs = append(h.regs, reg)
	h.rebuild()
	h.mu.Unlock()
	return reg
}

func (h *hookState) remove(reg *hooks.Hooks) {
	h.mu.Lock()
	for i, r := range h.regs {
		if r == reg {
			h.regs = append(h.regs[:i:i], h.regs[i+1:]...)
			break
		}
	}
	h.rebuild()
	h.mu.Unlock()
}

// rebuild publishes a snapshot of regs, or nil when no callback is
// registered. Called under mu.
func (h *hookState) rebuild() {
	s := &hookSet{}
	n := 0
	for _, r := range h.regs {
		if r.Init != nil {
			s.init = append(s.init, r.Init)
			n++
		}
		if r.Before != nil {
			s.before = append(s.before, r.Before)
			n++
		}
		if r.After != nil {
			s.after = append(s.after, r.After)
			n++
		}
		if r.Resolve != nil {
			s.resolve = append(s.resolve, r.Resolve)
			n++
		}
		if r.Destroy != nil {
			s.destroy = append(s.destroy, r.Destroy)
			n++
		}
	}
	if n == 0 {
		s = nil
	} else {
		s.wrap = len(s.before) > 0 || len(s.after) > 0
		if len(s.before) == 1 && len(s.after) == 1 {
			s.before1, s.after1 = s.before[0], s.after[0]
		}
	}
	h.snap.Store(s)
	h.resolving.Store(s != nil && len(s.resolve) > 0)
	h.wrapping.Store(s != nil && s.wrap)
	h.destroying.Store(s != nil && len(s.destroy) > 0)
}

// AddHooks: see executor.Executor.AddHooks. Registering builds a new
// snapshot under the hooks' lock and publishes it (hookSet); the loop reads
// the snapshot per hook call, so a change applies from the next one.
func (e *Loop) AddHooks(h hooks.Hooks) (remove func()) {
	reg := e.hooks.add(h)
	var once sync.Once
	return func() { once.Do(func() { e.hooks.remove(reg) }) }
}

// HooksEnabled reports whether any hooks are registered: resources created
// now get ids.
func (e *Loop) HooksEnabled() bool { return e.hooks.snap.Load() != nil }

// DestroyHooked reports whether a Destroy hook is registered: resources
// created now should be tracked for it (see TrackDestroy).
func (e *Loop) DestroyHooked() bool { return e.hooks.destroying.Load() }

// NewResource assigns an id to a new resource of the given kind and reports
// it to the Init hooks, or returns 0 at once when no hooks are registered
// (one atomic load and a branch). trigger is the resource that caused it;
// pass 0 to use CurrentID. From a goroutine that does not hold the loop the
// trigger stays as given and Init runs later on the loop, before any other
// hook of the resource.
func (e *Loop) NewResource(kind hooks.Kind, trigger hooks.ID) hooks.ID {
	if e.hooks.snap.Load() == nil {
		return 0
	}
	return e.newResource(kind, trigger, false, false)
}

// NewResourceOnLoop is NewResource for a caller that already knows whether
// it holds the loop: onLoop is what Current or OnLoop told the same
// goroutine. It saves NewResource that check.
func (e *Loop) NewResourceOnLoop(kind hooks.Kind, trigger hooks.ID, onLoop bool) hooks.ID {
	if e.hooks.snap.Load() == nil {
		return 0
	}
	return e.newResource(kind, trigger, true, onLoop)
}

// newID is NewResource with the trigger taken from CurrentID.
func (h *hookState) newID(e *Loop, kind hooks.Kind) hooks.ID {
	if h.snap.Load() == nil {
		return 0
	}
	return e.newResource(kind, 0, false, false)
}

// newResource assigns the id and calls the Init hooks. known says whether
// onLoop tells where the caller runs. The hooks are guarded by one deferred
// recover for all of them (cheaper than one each): after a panic the rest
// are called one by one, each guarded.
func (e *Loop) newResource(kind hooks.Kind, trigger hooks.ID, known, onLoop bool) (id hooks.ID) {
	h := &e.hooks
	if !known {
		onLoop = e.OnLoop()
	}
	if onLoop {
		id = h.idNext
		if id == h.idEnd || hooks.ID(h.nextID.Load()) != h.idEnd-1 {
			// The block is used up, or a goroutine off the loop took an
			// id after it: a new block keeps the ids in creation order.
			id = h.takeIDs()
		}
		h.idNext = id + 1
	} else {
		id = hooks.ID(h.nextID.Add(1))
	}
	s := h.snap.Load()
	if s == nil || len(s.init) == 0 {
		return id
	}
	if !onLoop {
		h.mail(e, hookEvent{op: evInit, kind: kind, id: id, trigger: trigger})
		return id
	}
	if trigger == 0 {
		trigger = e.curID
	}
	if h.mbHas.Load() {
		e.drainHooks()
	}
	if len(s.init) != 1 {
		e.initAll(s.init, id, kind, trigger)
		return id
	}
	// One hook, the common case: a guard that holds only a flag (there are
	// no others to call after a panic), in this function rather than one of
	// its own, costs about a nanosecond, against three for initAll's.
	ok := false
	defer func() {
		if !ok {
			e.panicked(recover())
		}
	}()
	s.init[0](id, kind, trigger)
	ok = true
	return id
}

// idBlock is how many ids the loop takes from the shared counter at a time.
// The loop gives out the ids of its block only while the counter still
// ends where the block does: once a goroutine off the loop has taken an
// id, the rest of the block is skipped, so an id made after another (on
// or off the loop, in the happens-before order) is always the larger.
const idBlock = 64

// takeIDs gives the loop a new block of ids and returns its first. Loop
// only.
func (h *hookState) takeIDs() hooks.ID {
	end := hooks.ID(h.nextID.Add(idBlock))
	h.idEnd = end + 1
	return end - idBlock + 1
}

// ResolveHook reports that resource id completed. It runs the Resolve hooks
// on the loop: at once when the caller holds it, else from the mailbox. It
// does nothing for id 0.
func (e *Loop) ResolveHook(id hooks.ID) {
	if id != 0 && e.hooks.resolving.Load() {
		e.resolveHook(id, false, false)
	}
}

// ResolveHookOnLoop is ResolveHook for a caller that already knows whether
// it holds the loop (see NewResourceOnLoop).
func (e *Loop) ResolveHookOnLoop(id hooks.ID, onLoop bool) {
	if id != 0 && e.hooks.resolving.Load() {
		e.resolveHook(id, true, onLoop)
	}
}

func (e *Loop) resolveHook(id hooks.ID, known, onLoop bool) {
	h := &e.hooks
	s := h.snap.Load()
	if s == nil || len(s.resolve) == 0 {
		return
	}
	if !known {
		onLoop = e.OnLoop()
	}
	if !onLoop {
		h.mail(e, hookEvent{op: evResolve, id: id})
		return
	}
	if h.mbHas.Load() {
		e.drainHooks()
	}
	if len(s.resolve) != 1 {
		e.idAll(s.resolve, id)
		return
	}
	ok := false // one hook: see newResource
	defer func() {
		if !ok {
			e.panicked(recover())
		}
	}()
	s.resolve[0](id)
	ok = true
}

// ReportDestroy hands the id of a garbage-collected resource to the loop,
// which calls the Destroy hooks. It may be called from any goroutine (it is
// meant for runtime.AddCleanup functions; see TrackDestroy). Reports that
// arrive together are delivered by one loop task.
func (e *Loop) ReportDestroy(id hooks.ID) {
	if id == 0 {
		return
	}
	if s := e.hooks.snap.Load(); s == nil || len(s.destroy) == 0 {
		return
	}
	e.hooks.mail(e, hookEvent{op: evDestroy, id: id})
}

// TrackDestroy arranges for e's Destroy hooks to be called with id, on the
// loop, once obj has been garbage collected. Call it when creating a
// resource with a non-zero id while e.DestroyHooked() reports true; obj is
// the allocation that holds the resource (any pointer into it works) and
// must stay reachable exactly as long as the resource can be used. It costs
// what runtime.AddCleanup costs: two small allocations and work for the
// collector.
func TrackDestroy[T any](e *Loop, obj *T, id hooks.ID) {
	if id == 0 {
		return
	}
	runtime.AddCleanup(obj, reportDestroy, destroyArg{e: e, id: id})
}

type destroyArg struct {
	e  *Loop
	id hooks.ID
}

// reportDestroy is a static function, so that tracking a resource does not
// allocate a closure.
func reportDestroy(a destroyArg) { a.e.ReportDestroy(a.id) }

// mail queues ev for the loop and, if no drain task is queued, queues one.
func (h *hookState) mail(e *Loop, ev hookEvent) {
	h.mbMu.Lock()
	h.mb.push(ev)
	h.mbHas.Store(true)
	queue := !h.mbQueued
	h.mbQueued = true
	h.mbMu.Unlock()
	if !queue {
		return
	}
	if e.submit(item{r: (*hookDrain)(e)}, phaseDraining) != nil {
		// The executor has closed: nothing will run the events.
		h.mbMu.Lock()
		head, _ := h.mb.take()
		h.mb.recycle(head, mailFreeBlocks)
		h.mbHas.Store(false)
		h.mbQueued = false
		h.mbMu.Unlock()
	}
}

// hookDrain is the task that delivers the mailbox on the loop.
type hookDrain Loop

func (d *hookDrain) Run() {
	e := (*Loop)(d)
	e.hooks.mbMu.Lock()
	e.hooks.mbQueued = false
	e.hooks.mbMu.Unlock()
	e.drainHooks()
}

// drainHooks dispatches the mailbox's events in order. Loop only. A hook
// that raises hooks of its own on the loop does not dispatch the mailbox
// again from inside (that would reorder it): the outer call picks up what
// arrives meanwhile.
func (e *Loop) drainHooks() {
	h := &e.hooks
	if h.draining {
		return
	}
	h.draining = true
	// Events raised off the loop belong to no continuation: their hooks see
	// the empty frame and CurrentID 0, wherever the loop delivers them.
	fr, cur := e.Cur, e.curID
	e.Cur, e.curID = nil, 0
	for h.mbHas.Load() {
		h.mbMu.Lock()
		head, _ := h.mb.take()
		h.mbHas.Store(false)
		h.mbMu.Unlock()
		for b := head; b != nil; b = b.next {
			for _, ev := range b.items[:b.n] {
				e.dispatch(ev)
			}
		}
		h.mbMu.Lock()
		h.mb.recycle(head, mailFreeBlocks)
		h.mbMu.Unlock()
	}
	e.Cur, e.curID = fr, cur
	h.draining = false
}

// dispatch calls the hooks of one mailbox event with the current snapshot.
func (e *Loop) dispatch(ev hookEvent) {
	s := e.hooks.snap.Load()
	if s == nil {
		return
	}
	switch ev.op {
	case evInit:
		for _, fn := range s.init {
			e.callInit(fn, ev.id, ev.kind, ev.trigger)
		}
	case evResolve:
		for _, fn := range s.resolve {
			e.callID(fn, ev.id)
		}
	case evDestroy:
		for _, fn := range s.destroy {
			e.callID(fn, ev.id)
		}
	}
}

// Stages of runHooked, for recoverItem.
const (
	stageNone   uint8 = iota
	stageBefore       // calling s.before[hookAt]
	stageAfter        // calling s.after[hookAt]
)

// runHooked runs a queued item of resource id (not 0): between its Before
// and After hooks when any are registered, else plainly. Loop only; called
// by the loop under its recovery, which hands a panic to recoverItem.
//
// Before and After hooks are called without a deferred recover of their
// own (the costliest part of a hook call): the loop's recovery learns from
// stage and hookAt that a hook panicked and finishes the item's protocol on
// a guarded slow path.
func (e *Loop) runHooked(r Runnable, id hooks.ID) {
	h := &e.hooks
	s := h.snap.Load()
	if s == nil || !s.wrap {
		r.Run()
		return
	}
	if h.mbHas.Load() {
		e.drainHooks()
	}
	h.inflight = s
	if s.before1 != nil {
		// One Before and one After: the same protocol, without the loops.
		h.stage, h.hookAt = stageBefore, 0
		s.before1(id)
		h.stage = stageNone
		r.Run()
		h.stage = stageAfter
		s.after1(id)
		h.stage = stageNone
		h.inflight = nil
		return
	}
	if len(s.before) != 0 {
		h.stage = stageBefore
		for i, fn := range s.before {
			h.hookAt = i
			fn(id)
		}
		h.stage = stageNone
	}
	r.Run()
	if len(s.after) != 0 {
		h.stage = stageAfter
		for i, fn := range s.after {
			h.hookAt = i
			fn(id)
		}
		h.stage = stageNone
	}
	h.inflight = nil
}

// hooksAfter calls, each guarded, the After hooks of the snapshot whose
// Before hooks ran for the running continuation, if any.
func (e *Loop) hooksAfter(id hooks.ID) {
	s := e.hooks.inflight
	if s == nil {
		return
	}
	e.hooks.inflight = nil
	for _, fn := range s.after {
		e.callID(fn, id)
	}
}

// initAll calls the Init hooks fns in order, and idAll the hooks fns that
// take an id. One deferred call guards the whole run, and it calls recover
// only when a hook did not return, since recover and a closure call are
// most of what a guarded hook call costs: a panicking hook goes to the
// panic handler, and the hooks after it are still called, each guarded on
// its own (a hook that calls runtime.Goexit ends the goroutine as anywhere
// else).
func (e *Loop) initAll(fns []func(hooks.ID, hooks.Kind, hooks.ID), id hooks.ID, kind hooks.Kind, trigger hooks.ID) {
	i := 0
	defer func() {
		if i < len(fns) && e.panicked(recover()) {
			for _, fn := range fns[i+1:] {
				e.callInit(fn, id, kind, trigger)
			}
		}
	}()
	for ; i < len(fns); i++ {
		fns[i](id, kind, trigger)
	}
}

// idAll: see initAll.
func (e *Loop) idAll(fns []func(hooks.ID), id hooks.ID) {
	i := 0
	defer func() {
		if i < len(fns) && e.panicked(recover()) {
			for _, fn := range fns[i+1:] {
				e.callID(fn, id)
			}
		}
	}()
	for ; i < len(fns); i++ {
		fns[i](id)
	}
}

// panicked hands v, a value recovered from a hook, to the panic handler
// and reports whether there was one (nil: the hook called runtime.Goexit).
func (e *Loop) panicked(v any) bool {
	if v == nil {
		return false
	}
	e.handlePanic(v, debug.Stack())
	return true
}

// guardOne calls call(fn); a panic in it goes to the panic handler.
func guardOne[F any](e *Loop, fn F, call func(F)) {
	defer func() {
		if v := recover(); v != nil {
			e.handlePanic(v, debug.Stack())
		}
	}()
	call(fn)
}

// callID calls one hook; a panic in it goes to the panic handler.
func (e *Loop) callID(fn func(hooks.ID), id hooks.ID) {
	guardOne(e, fn, func(f func(hooks.ID)) { f(id) })
}

// callInit calls one Init hook; a panic in it goes to the panic handler.
func (e *Loop) callInit(fn func(hooks.ID, hooks.Kind, hooks.ID), id hooks.ID, kind hooks.Kind, trigger hooks.ID) {
	guardOne(e, fn, func(f func(hooks.ID, hooks.Kind, hooks.ID)) { f(id, kind, trigger) })
}
