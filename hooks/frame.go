package hooks

// Frame is an immutable set of async-local values: the context that
// continuations carry. A nil *Frame is the empty frame.
//
// A frame is a persistent list of bindings, newest first; binding a key makes
// a new frame that shares the older ones (copy on write), so capturing the
// current frame is copying one pointer and a frame never changes once made.
type Frame struct {
	parent *Frame
	key    any
	value  any
}

// With returns a frame that binds key to value on top of f.
func (f *Frame) With(key, value any) *Frame {
	return &Frame{parent: f, key: key, value: value}
}

// Lookup returns the newest value bound to key in f.
func (f *Frame) Lookup(key any) (any, bool) {
	for ; f != nil; f = f.parent {
		if f.key == key {
			return f.value, true
		}
	}
	return nil, false
}
