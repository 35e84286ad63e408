package frame

// Frame is an immutable set of async-local values: the context that
// continuations carry. A nil *Frame is the empty frame.
//
// A frame is a persistent list of bindings, newest first; binding a key makes
// a new frame that shares the older ones (copy on write), so capturing the
// current frame is copying one pointer and a frame never changes once made.
//
// A key is bound at most once in a frame: rebinding a key drops its older
// binding from the new frame (the bindings above it are copied, in one
// allocation), so a frame holds one binding per distinct key however often
// its keys are rebound, and an old value is not kept alive by the frames
// that replaced it. Keys must be comparable, as for context.WithValue; a
// *Storage is the key of its own values.
type Frame struct {
	parent *Frame
	key    any
	value  any
}

// With returns a frame that binds key to value on top of f, replacing the
// binding of key in f if there is one. f itself does not change.
func (f *Frame) With(key, value any) *Frame {
	depth := 0
	old := f
	for ; old != nil; old = old.parent {
		if old.key == key {
			break
		}
		depth++
	}
	if old == nil {
		return &Frame{parent: f, key: key, value: value}
	}
	// Copy the depth bindings above the old one onto its parent, under the
	// new binding: one allocation for all of them.
	nodes := make([]Frame, depth+1)
	nodes[0] = Frame{key: key, value: value}
	prev := &nodes[0]
	for g, i := f, 1; g != old; g, i = g.parent, i+1 {
		nodes[i] = Frame{key: g.key, value: g.value}
		prev.parent = &nodes[i]
		prev = &nodes[i]
	}
	prev.parent = old.parent
	return &nodes[0]
}

// Lookup returns the value bound to key in f.
func (f *Frame) Lookup(key any) (any, bool) {
	for ; f != nil; f = f.parent {
		if f.key == key {
			return f.value, true
		}
	}
	return nil, false
}

// Len returns the number of bindings in f (0 for the empty frame).
func (f *Frame) Len() int {
	n := 0
	for ; f != nil; f = f.parent {
		n++
	}
	return n
}

// PanicObserverKey is the key under which a frame binds the observer of
// its continuations' panics (hooks.ObservePanics; the loop tells it,
// loop.Loop.ObservePanic).
type PanicObserverKey struct{}

// Find returns the value bound to key k in f, comparing keys as values of
// type K (a type word and a pointer for a pointer K) rather than as
// interfaces, which needs no runtime call.
func Find[K comparable](f *Frame, k K) (any, bool) {
	for ; f != nil; f = f.parent {
		if fk, ok := f.key.(K); ok && fk == k {
			return f.value, true
		}
	}
	return nil, false
}
