//go:build linux

package netio

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// schedSetAttr is unix.SchedSetAttr; tests replace it.
var schedSetAttr = unix.SchedSetAttr

// lowered is a handshake goroutine's hold on its thread while it computes
// at the idle priority: the goroutine is locked to the thread, whose
// scheduling attributes were prev (nil: not lowered).
type lowered struct {
	prev *unix.SchedAttr
}

// held reports whether the thread is lowered.
func (l *lowered) held() bool { return l.prev != nil }

// lower locks the calling goroutine to its thread and sets the thread's
// policy to SCHED_IDLE, so that every other runnable thread of the machine
// (a loop's) takes the CPU before it. It reports false, and leaves the
// thread as it was and unlocked, if the thread cannot be lowered (or is
// idle already).
func (l *lowered) lower() bool {
	runtime.LockOSThread()
	prev, err := unix.SchedGetAttr(0, 0)
	if err == nil && prev.Policy != unix.SCHED_IDLE {
		err = schedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
		if err == nil {
			prev.Size = unix.SizeofSchedAttr
			l.prev = prev
			return true
		}
	}
	runtime.UnlockOSThread()
	return false
}

// raise gives the thread back its attributes and unlocks it; l is then
// not held any more either way. If the thread cannot be raised again (an unprivileged process whose RLIMIT_NICE
// does not allow nice 0 cannot leave SCHED_IDLE), it reports false and
// the goroutine stays locked to it: the goroutine must then end without
// unlocking, which ends the thread, rather than let it run other
// goroutines at the idle priority.
func (l *lowered) raise() bool {
	prev := l.prev
	l.prev = nil
	if schedSetAttr(0, prev, 0) != nil {
		return false
	}
	runtime.UnlockOSThread()
	return true
}
