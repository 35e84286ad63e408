package frame

// Frames in a context.Context, and the loop a goroutine holds.
//
// A context carries at most one frame (the newest wins, as with
// context.WithValue), with the name of the loop it was taken from, if any.
// A frame is immutable, so a context may carry it to any goroutine.
//
// The registry lists the loops that have been made: weak pointers to their
// Holders, under registry.mu, so it holds no loop alive. Collected loops
// are pruned by HeldLoop, and by Register whenever the list has doubled
// since the last prune, so its length stays within twice the live loops
// (and 64).

import (
	"context"
	"sync"
	"weak"
)

// ContextKey is the context key under which a context carries a *Carried.
type ContextKey struct{}

// Carried is the frame a context carries, and the name of the loop it was
// taken from ("" when it was made off any loop).
type Carried struct {
	Frame *Frame
	Loop  string
}

// NewContext returns a copy of ctx that carries fr, taken from the loop
// named loop.
func NewContext(ctx context.Context, fr *Frame, loop string) context.Context {
	return context.WithValue(ctx, ContextKey{}, &Carried{Frame: fr, Loop: loop})
}

// FromContext returns what ctx carries, or nil.
func FromContext(ctx context.Context) *Carried {
	c, _ := ctx.Value(ContextKey{}).(*Carried)
	return c
}

var registry struct {
	mu    sync.Mutex
	loops []weak.Pointer[Holder]
	limit int // prune when loops reaches it
}

// Register adds the loop whose Holder is h to the loops that HeldLoop
// looks through.
func Register(h *Holder) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if len(registry.loops) >= registry.limit {
		prune(nil)
		registry.limit = max(64, 2*len(registry.loops))
	}
	registry.loops = append(registry.loops, weak.Make(h))
}

// prune drops the collected loops from the registry and returns the first
// live one for which held reports true (held may be nil). registry.mu is
// held.
func prune(held func(*Holder) bool) *Holder {
	live := registry.loops[:0]
	var found *Holder
	for _, p := range registry.loops {
		h := p.Value()
		if h == nil {
			continue // collected
		}
		live = append(live, p)
		if found == nil && held != nil && held(h) {
			found = h
		}
	}
	clear(registry.loops[len(live):])
	registry.loops = live
	return found
}

// HeldLoop returns the Holder of the loop that the calling goroutine holds,
// or nil. It looks through every registered loop: it is for logging, not
// for hot paths.
func HeldLoop() *Holder {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return prune((*Holder).OnLoop)
}
