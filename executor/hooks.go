package executor

// Hook dispatch.
//
// Registered hooks are published as an immutable snapshot (hookSet) through
// an atomic pointer: AddHooks and its remove func build a new snapshot under
// mu and store it; the loop loads the pointer once per batch and, when it is
// nil (no hooks), pays one predictable branch per task. A snapshot lists only
// the non-nil callbacks of each kind, so a registration with Init alone
// costs nothing at Before and After.
//
// Resource ids come from one atomic counter and are assigned only while a
// snapshot exists. Destroy tracking (runtime.AddCleanup on the resource) is
// set up by the resource's creator only while the snapshot has a Destroy
// callback; the cleanup hands the id to the loop, which calls Destroy.

import (
	"sync"
	"sync/atomic"

	"github.com/spindle-rt/spindle/hooks"
)

type hookState struct {
	mu     sync.Mutex
	regs   []*hooks.Hooks
	snap   atomic.Pointer[hookSet]
	nextID atomic.Uint64
}

type hookSet struct {
	init    []func(hooks.ID, hooks.Kind, hooks.ID)
	before  []func(hooks.ID)
	after   []func(hooks.ID)
	resolve []func(hooks.ID)
	destroy []func(hooks.ID)
}

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

// rebuild publishes a snapshot of regs (nil when empty). Called under mu.
func (h *hookState) rebuild() {
	if len(h.regs) == 0 {
		h.snap.Store(nil)
		return
	}
	s := &hookSet{}
	for _, r := range h.regs {
		if r.Init != nil {
			s.init = append(s.init, r.Init)
		}
		if r.Before != nil {
			s.before = append(s.before, r.Before)
		}
		if r.After != nil {
			s.after = append(s.after, r.After)
		}
		if r.Resolve != nil {
			s.resolve = append(s.resolve, r.Resolve)
		}
		if r.Destroy != nil {
			s.destroy = append(s.destroy, r.Destroy)
		}
	}
	h.snap.Store(s)
}

// AddHooks registers h with the executor and returns a func that removes it
// again (idempotent). Both may be called from any goroutine; the loop sees
// the change from its next batch on. Resources created while no hooks are
// registered have id 0 and are never reported.
func (e *Executor) AddHooks(h hooks.Hooks) (remove func()) {
	reg := e.hooks.add(h)
	var once sync.Once
	return func() { once.Do(func() { e.hooks.remove(reg) }) }
}

// HooksEnabled reports whether any hooks are registered: resources created
// now get ids.
func (e *Executor) HooksEnabled() bool { return e.hooks.snap.Load() != nil }

// DestroyHooked reports whether a Destroy hook is registered: resources
// created now should be tracked for it (see TrackDestroy).
func (e *Executor) DestroyHooked() bool {
	s := e.hooks.snap.Load()
	return s != nil && len(s.destroy) > 0
}

// NewResource assigns an id to a new resource of the given kind and reports
// it to the Init hooks, or returns 0 at once when no hooks are registered.
// trigger is the resource that caused it; pass 0 to use CurrentID. From a
// goroutine that does not hold the loop the trigger is 0 and Init runs later
// on the loop.
func (e *Executor) NewResource(kind hooks.Kind, trigger hooks.ID) hooks.ID {
	if e.hooks.snap.Load() == nil {
		return 0
	}
	return e.hooks.newResource(e, kind, trigger)
}

func (h *hookState) newID(e *Executor, kind hooks.Kind) hooks.ID {
	if h.snap.Load() == nil {
		return 0
	}
	return h.newResource(e, kind, 0)
}

func (h *hookState) newResource(e *Executor, kind hooks.Kind, trigger hooks.ID) hooks.ID {
	id := hooks.ID(h.nextID.Add(1))
	if e.OnLoop() {
		if trigger == 0 {
			trigger = e.curID
		}
		if s := h.snap.Load(); s != nil {
			for _, fn := range s.init {
				e.callHook(func() { fn(id, kind, trigger) })
			}
		}
		return id
	}
	_ = e.submit(item{r: funcRunnable(func() {
		if s := h.snap.Load(); s != nil {
			for _, fn := range s.init {
				e.callHook(func() { fn(id, kind, trigger) })
			}
		}
	})}, phaseDraining)
	return id
}

// ResolveHook reports that resource id completed. It runs the Resolve hooks
// on the loop (at once when the caller holds it, else queued).
func (e *Executor) ResolveHook(id hooks.ID) {
	if id == 0 {
		return
	}
	s := e.hooks.snap.Load()
	if s == nil || len(s.resolve) == 0 {
		return
	}
	if e.OnLoop() {
		s.each(e, s.resolve, id)
		return
	}
	_ = e.submit(item{r: funcRunnable(func() {
		if s := e.hooks.snap.Load(); s != nil {
			s.each(e, s.resolve, id)
		}
	})}, phaseDraining)
}

// ReportDestroy hands the id of a garbage-collected resource to the loop,
// which calls the Destroy hooks. It may be called from any goroutine (it is
// meant for runtime.AddCleanup functions).
func (e *Executor) ReportDestroy(id hooks.ID) {
	_ = e.submit(item{r: funcRunnable(func() {
		if s := e.hooks.snap.Load(); s != nil {
			s.each(e, s.destroy, id)
		}
	})}, phaseDraining)
}

func (s *hookSet) runBefore(e *Executor, id hooks.ID) { s.each(e, s.before, id) }
func (s *hookSet) runAfter(e *Executor, id hooks.ID)  { s.each(e, s.after, id) }

func (s *hookSet) each(e *Executor, fns []func(hooks.ID), id hooks.ID) {
	for _, fn := range fns {
		e.callHook(func() { fn(id) })
	}
}

// callHook runs one hook; a panic in it goes to the panic handler and does
// not disturb the continuation it wraps.
func (e *Executor) callHook(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			e.handlePanic(v, nil)
		}
	}()
	fn()
}
