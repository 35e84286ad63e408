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
	c := &e.localCache[(uintptr(k.typ)>>5)%localCacheSize]
	if c.typ == k.typ && c.data == k.data && k.typ != nil {
		return c.val
	}
	for i := range e.locals {
		// The same type and the same data word (a pointer key, the usual
		// kind) is a match without the runtime's comparison call.
		if l := (*eface)(unsafe.Pointer(&e.locals[i].key)); l.typ == k.typ && (l.data == k.data || e.locals[i].key == key) {
			if l.data == k.data {
				c.typ, c.data, c.val = k.typ, k.data, e.locals[i].val
			}
			return e.locals[i].val
		}
	}
	return nil
}

// localCacheSize is the number of entries of the loop's cache of Local.
const localCacheSize = 8

// localCached is an entry of the cache in front of the table: the key's
// type and data words and its value. Keys with the same type and data
// word are the same key; the slot is chosen by the type, so the few keys
// a loop uses most (one per slab type, typically) rarely share one.
type localCached struct {
	typ, data unsafe.Pointer
	val       any
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
			clear(e.localCache[:])
			return
		}
	}
	e.locals = append(e.locals, localEntry{key, val})
}
