package netio

// The handshake pool: the goroutines TLS handshakes run on, and the
// priority at which they compute.

import (
	"fmt"
	"runtime"
	"sync"
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
	return HandshakePriority(handshakes.prio.Swap(int32(p)))
}

// handshakes is the process's handshake pool: a worker goroutine is
// started when a handshake is queued and fewer than maxWorkers run; it runs
// handshakes until the queue is empty, then ends, so an idle process keeps
// none. cpu bounds how many handshakes compute at once (one less than
// GOMAXPROCS, at least one), so the loops keep a core while many handshakes
// run; a handshake waiting for its peer holds its worker but no CPU slot.
// A handshake holding a CPU slot computes on a lowered thread under
// HandshakePriorityIdle (compute, uncompute).
var handshakes = newHandshakePool()

const maxWorkers = 1 << 14

type handshakePool struct {
	mu      sync.Mutex
	q       []*tlsState
	workers int
	cpu     chan struct{}
	prio    atomic.Int32 // a HandshakePriority
	noRaise atomic.Bool  // a lowered thread could not be raised: lower none
}

// compute takes a CPU slot for the handshake goroutine, and under
// HandshakePriorityIdle lowers its thread. The handshake goroutine only.
func (t *tlsState) compute() {
	p := handshakes
	p.cpu <- struct{}{}
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
			handshakes.noRaise.Store(true)
		}
	}
	<-handshakes.cpu
}

func newHandshakePool() *handshakePool {
	return &handshakePool{cpu: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
}

func (p *handshakePool) queue(t *tlsState) {
	p.mu.Lock()
	p.q = append(p.q, t)
	start := p.workers < maxWorkers
	if start {
		p.workers++
	}
	p.mu.Unlock()
	if start {
		go p.work()
	}
}

func (p *handshakePool) work() {
	for {
		p.mu.Lock()
		if len(p.q) == 0 {
			p.workers--
			p.q = nil
			p.mu.Unlock()
			return
		}
		t := p.q[0]
		p.q[0] = nil
		p.q = p.q[1:]
		p.mu.Unlock()
		t.run()
		if t.stuck {
			// The goroutine is locked to a thread left at the idle
			// priority: it ends, and so does the thread.
			p.mu.Lock()
			p.workers--
			if len(p.q) > 0 && p.workers < maxWorkers {
				p.workers++
				go p.work()
			}
			p.mu.Unlock()
			return
		}
	}
}
