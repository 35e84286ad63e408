package future

import (
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Hook bookkeeping for the resources package future creates.

// newID gives a new resource its hook id (0 when no hooks are registered)
// and, only while a Destroy hook is registered, tracks obj for it. w is
// what the caller knows of where it runs (see newObjHere).
func newID[P any](ex *loop.Loop, kind hooks.Kind, trigger hooks.ID, obj *P, w where) hooks.ID {
	if w.known {
		return track(ex, ex.NewResourceOnLoop(kind, trigger, w.onLoop), obj)
	}
	return track(ex, ex.NewResource(kind, trigger), obj)
}

// track sets obj up for the Destroy hooks of resource id while a Destroy
// hook is registered (loop.TrackDestroy: no closure per resource,
// unlike runtime.AddCleanup with ex.ReportDestroy), and returns id.
func track[P any](ex *loop.Loop, id hooks.ID, obj *P) hooks.ID {
	if id != 0 && ex.DestroyHooked() {
		loop.TrackDestroy(ex, obj, id)
	}
	return id
}
