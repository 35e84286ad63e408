package loop

// Loop-local values: a short table of per-loop state that packages built on
// the loop keep there (the slabs of package future, for instance).

import "unsafe"

// localEntry is one loop-local value.
type localEntry struct {
	key, val any
}

// Local returns the loop-local value stored under key by SetLocal, or nil.
// Packages built on the executor keep per-loop state there (the allocators
// of package future, for instance). Loop only. Keys are compared with ==;
// use a value of an unexported type. The table is a short slice: it is
// meant for a handful of keys.
func (e *Loop) Local(key any) any {
	k := (*eface)(unsafe.Pointer(&key))
	for i := range e.locals {
		// The same type and the same data word (a pointer key, the usual
		// kind) is a match without the runtime's comparison call, which
		// was a good part of what a slab allocation cost.
		if l := (*eface)(unsafe.Pointer(&e.locals[i].key)); l.typ == k.typ && (l.data == k.data || e.locals[i].key == key) {
			return e.locals[i].val
		}
	}
	return nil
}

// eface is the layout of an interface value with methods or without.
type eface struct {
	typ, data unsafe.Pointer
}

// SetLocal stores val under key for Local. Loop only.
func (e *Loop) SetLocal(key, val any) {
	for i := range e.locals {
		if e.locals[i].key == key {
			e.locals[i].val = val
			return
		}
	}
	e.locals = append(e.locals, localEntry{key, val})
}
