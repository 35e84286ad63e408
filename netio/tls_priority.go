package netio

// The priority at which TLS handshakes compute, and the CPU they may take:
// process-wide, unlike the pool (tls_pool.go), which each executor owns.
//
// Why these two are the process's and not an executor's:
//   - the CPU slots bound how many handshakes compute at once to one less
//     than GOMAXPROCS, so that the loops keep a core while many handshakes
//     run. GOMAXPROCS, and the Ps the loops' goroutines need, are the
//     process's: slots per executor would multiply the bound by the number
//     of executors (a server of 8 shards would let 8*(GOMAXPROCS-1)
//     handshakes compute on GOMAXPROCS Ps) and give the loops no core;
//   - the priority is that of the threads the handshakes compute on, and a
//     thread at the idle priority yields to every loop of the process (and
//     of the machine), not only to its executor's, so it is a choice about
//     the process's threads; SetHandshakePriority says so in its contract.
//     Whether a lowered thread can be raised again is a fact about the
//     process too (RLIMIT_NICE, CAP_SYS_NICE): once one could not, none is
//     lowered any more (noRaise).
//
// Invariants: slots holds one token per handshake computing; a handshake
// goroutine holds at most one, and none while it waits for its peer; a
// thread is lowered only while its goroutine holds a token.

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// HandshakePriority is the scheduling priority at which the process's TLS
// handshakes compute (SetHandshakePriority).
type HandshakePriority int32

const (
	// HandshakePriorityNormal, the default, makes handshakes compute at
	// the process's own priority, like the rest of the process: the
	// operating system shares the CPU between them and the loops' threads.
	HandshakePriorityNormal HandshakePriority = iota
	// HandshakePriorityIdle makes a handshake compute on a thread of the
	// lowest priority (on Linux, the SCHED_IDLE policy), so that the
	// threads of the loops, and every other thread of normal priority on
	// the machine, take the CPU first: the loops' latency does not move
	// while handshakes compute beside them, but handshakes only get the
	// CPU nobody else wants, so on a machine kept busy they slow down (and
	// may reach their timeout). The thread gets its priority back before
	// the handshake waits for its peer. Where the process may lower a
	// thread's priority but not raise it again (an unprivileged process
	// whose RLIMIT_NICE is below 20, without CAP_SYS_NICE), the first
	// handshake that finds out ends its thread rather than hand it back
	// lowered, and handshakes compute at the normal priority from then on;
	// likewise where the system has no such policy.
	HandshakePriorityIdle
)

// String returns "normal" or "idle".
func (p HandshakePriority) String() string {
	switch p {
	case HandshakePriorityIdle:
		return "idle"
	case HandshakePriorityNormal:
		return "normal"
	}
	return fmt.Sprintf("HandshakePriority(%d)", int32(p))
}

// SetHandshakePriority sets the priority at which the process's TLS
// handshakes (those of every listener, and DialTLS's) compute from their
// next burst of computation on, and returns the previous one. Any
// goroutine. It panics on a priority that is not one of the constants.
func SetHandshakePriority(p HandshakePriority) HandshakePriority {
	if p != HandshakePriorityIdle && p != HandshakePriorityNormal {
		panic(fmt.Sprintf("netio: SetHandshakePriority(%v)", p))
	}
	return HandshakePriority(handshakeCPU.prio.Swap(int32(p)))
}

// handshakeCPU is the process's CPU for handshakes: see the top of the
// file for why it is not an executor's.
var handshakeCPU = struct {
	slots   chan struct{} // GOMAXPROCS-1 (at least one) tokens
	prio    atomic.Int32  // a HandshakePriority
	noRaise atomic.Bool   // a lowered thread could not be raised: lower none
}{slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}

// compute takes a CPU slot for the handshake goroutine, and under
// HandshakePriorityIdle lowers its thread. The handshake goroutine only.
func (t *tlsState) compute() {
	p := &handshakeCPU
	p.slots <- struct{}{}
	if HandshakePriority(p.prio.Load()) == HandshakePriorityIdle && !p.noRaise.Load() && !t.stuck {
		t.low.lower()
	}
}

// uncompute gives the CPU slot back, and the thread its priority. The
// handshake goroutine only.
func (t *tlsState) uncompute() {
	if t.low.held() {
		if !t.low.raise() {
			t.stuck = true
			handshakeCPU.noRaise.Store(true)
		}
	}
	<-handshakeCPU.slots
}
