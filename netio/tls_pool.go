package netio

// The handshake pool: the goroutines TLS handshakes run on. Each executor
// owns one, attached to its loop on its first handshake (handshakesOf) and
// closed with it; the CPU the handshakes take and the priority they
// compute at are the process's (tls_priority.go says why).
//
// A worker goroutine is started when a handshake is queued and fewer than
// maxWorkers run; it runs handshakes until the queue is empty, then ends,
// so an idle executor keeps none. A handshake waiting for its peer holds
// its worker but no CPU slot.
//
// Invariants:
//   - q, workers and closed are shared by the loop (queue, the close
//     watch) and the workers, under mu;
//   - a handshake is queued only on the loop, and only while the executor
//     is open; when it closes, the pool drops the handshakes not yet
//     started (their connections close with the executor, through the
//     reactor's watch) and its workers end once their handshakes have: a
//     released connection fails every call of its handshake's transport;
//   - workers counts the goroutines running work, at most maxWorkers.

import (
	"sync"

	"github.com/spindle-rt/spindle/internal/loop"
)

// maxWorkers bounds the goroutines of one executor's pool.
const maxWorkers = 1 << 14

type handshakeKey struct{}

// handshakePool is one executor's handshake pool.
type handshakePool struct {
	mu      sync.Mutex
	q       []*tlsState
	workers int
	closed  bool
	watch   loop.CloseWatch
}

// handshakesOf returns the handshake pool of lp, attaching it on first
// use, or nil once the executor has closed. Loop only.
func handshakesOf(lp *loop.Loop) *handshakePool {
	if p, ok := lp.Local(handshakeKey{}).(*handshakePool); ok {
		return p
	}
	p := &handshakePool{}
	if !lp.Attach(loop.Attachment{Key: handshakeKey{}, Value: p, Watch: &p.watch, OnClose: p}) {
		return nil
	}
	return p
}

// Interrupt closes the pool with its executor: the handshakes not yet
// started are dropped, and the workers end once the queue is empty.
func (p *handshakePool) Interrupt(error) {
	p.mu.Lock()
	p.closed = true
	p.q = nil
	p.mu.Unlock()
}

// queue queues t's handshake. Loop only.
func (p *handshakePool) queue(t *tlsState) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return // the executor has closed, and so has t's connection
	}
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

// work runs queued handshakes until the queue is empty.
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
