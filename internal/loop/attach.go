package loop

// Attachments: a package's per-loop state registered in one call.
//
// A package that serves something on the loop (netio's reactor) keeps one
// object per loop: it is found again by key (Local), told when the
// executor closes (Watch), may be what the loop waits in (SetIO), and may
// be told at every batch boundary (AddFlusher). Attach does the four at
// once, so the package cannot register half of them.
//
// Invariants: Attach runs on the loop; it registers nothing once the
// executor has closed (the close watch is refused first), and otherwise
// registers every part it was given, in the order Local, Watch, IO,
// Flusher.

// Attachment is what Attach registers. Value is stored under Key for
// Local; the other fields may be nil (Watch then also needs OnClose).
type Attachment struct {
	Key, Value any
	Watch      *CloseWatch // told through OnClose when the executor closes
	OnClose    Interrupter
	IO         IO      // what the loop waits in from its next sleep on
	Flusher    Flusher // told at every batch boundary
}

// Attach registers a: see Attachment. Loop only. It returns false, and
// registers nothing, once the executor has closed.
func (e *Loop) Attach(a Attachment) bool {
	if !e.OnLoop() {
		panic("executor: Attach called from a goroutine that does not hold the loop")
	}
	if a.Key == nil || a.Value == nil {
		panic("executor: Attach without a key and a value")
	}
	if a.Watch != nil {
		if a.OnClose == nil {
			panic("executor: Attach with a Watch and no OnClose")
		}
		if !e.Watch(a.Watch, a.OnClose) {
			return false
		}
	}
	e.SetLocal(a.Key, a.Value)
	if a.IO != nil {
		e.SetIO(a.IO)
	}
	if a.Flusher != nil {
		e.AddFlusher(a.Flusher)
	}
	return true
}
