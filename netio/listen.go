package netio

// Listeners.
//
// Invariants:
//   - mu guards closed and the listening socket's close: Close (any
//     goroutine) closes the socket under mu, and the loop accepts on it only
//     under mu after checking closed, so an accept never runs on a closed
//     (or reused) descriptor and the address is free when Close returns;
//   - acceptq, stash and the reactor are loop-owned. Pending accepts are
//     served in order; once the listener is closed they fail with
//     net.ErrClosed, and with executor.ErrClosed when the executor closes
//     (the listener's close watch);
//   - stash holds a connection accepted for an Accept that was cancelled
//     meanwhile, for the next Accept.

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Listener is a TCP or Unix listening socket bound to one executor: its
// accepts are events of that loop and the connections it accepts belong to
// the same executor. Make one with Listen.
type Listener struct {
	listenIO // what a backend may read and write (backend_conn.go)
	ex       *executor.Executor
	watch    loop.CloseWatch

	// loop-owned
	acceptq []*future.Promise[*Conn]
	stash   *Conn
	done    bool  // pending accepts have been failed for good
	doneErr error // what they failed with

	be backend   // what serves the listener (backend.go): the reactor's once l.r is set
	tl listenTLS // the handshakes of a TLS listener (tls.go)
}

// Listen opens a listening socket on address and binds it to ex: accepts,
// and everything about the connections accepted, run on ex's loop. network
// is "tcp", "tcp4", "tcp6" or "unix"; address is as for net.Listen (port 0
// picks a free port; Addr says which). It may be called from any goroutine.
// The listener is closed by Close or when ex closes.
func Listen(ex *executor.Executor, network, address string, opts ...ListenOption) (*Listener, error) {
	if ex == nil {
		return nil, errors.New("netio: Listen with nil executor")
	}
	cfg := defaultListenConfig()
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("netio: Listen with nil ListenOption")
		}
		o.apply(&cfg)
	}
	if err := checkNetwork("listen", network, address); err != nil {
		return nil, err
	}
	if err := cfg.checkTLS(network, address); err != nil {
		return nil, err
	}
	if cfg.reusePort && network == "unix" {
		return nil, fmt.Errorf("netio: listen unix %s: WithReusePort applies to TCP only", address)
	}
	lp := (*loop.Loop)(ex)
	if lp.Closing() {
		return nil, fmt.Errorf("netio: listen %s %s: %w", network, address, executor.ErrClosed)
	}
	l := &Listener{listenIO: listenIO{lp: lp, cfg: cfg}, ex: ex, be: backendOf(lp)}
	addr, err := l.be.listen(l, network, address)
	if err != nil {
		return nil, fmt.Errorf("netio: %w", err)
	}
	l.addr = addr
	if !lp.Watch(&l.watch, (*listenWatch)(l)) {
		l.mu.Lock()
		l.closed = true
		_ = l.be.closeListener(l)
		l.mu.Unlock()
		return nil, fmt.Errorf("netio: listen %s %s: %w", network, address, executor.ErrClosed)
	}
	return l, nil
}

// checkNetwork validates network and address for op.
func checkNetwork(op, network, address string) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return fmt.Errorf("netio: %s %s %s: unsupported network (want tcp, tcp4, tcp6 or unix)", op, network, address)
	}
	if address == "" && (network == "unix" || op == "dial") {
		return fmt.Errorf("netio: %s %s: empty address", op, network)
	}
	return nil
}

// listenWatch is how a listener hears that its executor closes.
type listenWatch Listener

// Interrupt closes the listener when the executor closes; pending accepts
// fail with executor.ErrClosed.
func (w *listenWatch) Interrupt(error) {
	l := (*Listener)(w)
	l.closeSocket()
	l.finish(executor.ErrClosed)
}

// Addr returns the address the listener listens on.
func (l *Listener) Addr() net.Addr {
	if l == nil {
		panic("netio: Addr on nil *Listener")
	}
	return l.addr
}

// Executor returns the executor the listener belongs to.
func (l *Listener) Executor() *executor.Executor {
	if l == nil {
		panic("netio: Executor on nil *Listener")
	}
	return l.ex
}

// Accept returns a future of the next connection. Accepts are served in
// the order they were asked for; the future fails with net.ErrClosed once
// l is closed and with executor.ErrClosed once its executor is. Any
// goroutine.
func (l *Listener) Accept() *future.Future[*Conn] {
	if l == nil {
		panic("netio: Accept on nil *Listener")
	}
	return onLoopFuture(l.lp, l.acceptOn)
}

func (l *Listener) acceptOn(p *future.Promise[*Conn]) {
	if l.done {
		p.Reject(l.doneErr)
		return
	}
	if l.isClosed() {
		l.finish(net.ErrClosed)
		p.Reject(l.doneErr)
		return
	}
	if l.r == nil {
		r, err := reactorOf(l.lp)
		if err != nil {
			p.Reject(err)
			return
		}
		l.r = r
		l.mu.Lock()
		l.be = r.be // closeListener reads it under mu
		l.mu.Unlock()
		if r.draining {
			l.closeSocket()
			l.finish(executor.ErrClosed)
			p.Reject(l.doneErr)
			return
		}
		if r.listeners == nil {
			r.listeners = make(map[*Listener]struct{})
		}
		r.listeners[l] = struct{}{}
	}
	l.acceptq = append(sweep(l.acceptq), p)
	if len(l.acceptq) == 1 {
		l.pump()
	}
}

// pump serves pending accepts with the connections that are there.
func (l *Listener) pump() {
	for len(l.acceptq) > 0 {
		c := l.stash
		l.stash = nil
		if c == nil {
			var err error
			var ok bool
			c, err, ok = l.acceptNext()
			if !ok {
				return
			}
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					inc(&l.r.stats.acceptErrors)
				}
				l.popAccept().Reject(fmt.Errorf("netio: accept: %w", err))
				continue
			}
			if c == nil {
				continue // the executor closed under it
			}
			inc(&l.r.stats.accepted)
		}
		for c != nil && len(l.acceptq) > 0 {
			if l.popAccept().Resolve(c) {
				c = nil
			}
		}
		l.stash = c
	}
}

func (l *Listener) popAccept() *future.Promise[*Conn] {
	p := l.acceptq[0]
	copy(l.acceptq, l.acceptq[1:])
	l.acceptq[len(l.acceptq)-1] = nil
	l.acceptq = l.acceptq[:len(l.acceptq)-1]
	return p
}

// closeSocket closes the listening socket if it is open and reports
// whether it was; any goroutine. Every caller but Close finishes the
// listener at once, on the loop.
func (l *Listener) closeSocket() (closed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, nil
	}
	l.closed = true
	return true, l.be.closeListener(l)
}

// finish fails the pending accepts with err for good and lets the listener
// go. Loop only.
func (l *Listener) finish(err error) {
	if !l.done {
		l.done, l.doneErr = true, err
		l.lp.Unwatch(&l.watch)
		l.be.forget(l)
		if l.r != nil {
			delete(l.r.listeners, l)
		}
	}
	for len(l.acceptq) > 0 {
		l.popAccept().Reject(l.doneErr)
	}
	l.acceptq = nil
	if l.stash != nil {
		l.stash.abort(net.ErrClosed)
		l.stash = nil
	}
	l.finishTLS()
}

// Close closes the listener: the address is free again when it returns,
// and pending accepts fail with net.ErrClosed. Connections already
// accepted stay open. Close is idempotent and may be called from any
// goroutine.
func (l *Listener) Close() error {
	if l == nil {
		panic("netio: Close on nil *Listener")
	}
	closed, err := l.closeSocket()
	if !closed {
		return nil // closed before: that close has seen to the accepts
	}
	if l.lp.OnLoop() {
		l.finish(net.ErrClosed)
	} else {
		// If the loop closes first, the close watch fails the accepts.
		toLoop(l.lp, func() { l.finish(net.ErrClosed) }, func() {})
	}
	if err != nil {
		return fmt.Errorf("netio: close listener: %w", err)
	}
	return nil
}

// Dial connects to address on network ("tcp", "tcp4", "tcp6" or "unix")
// and returns a future of the connection, bound to ex. The connect does not
// block the loop; ctx bounds it (the future then fails with ctx's error),
// and so does the executor's closing (executor.ErrClosed). Any goroutine.
func Dial(ctx context.Context, ex *executor.Executor, network, address string) *future.Future[*Conn] {
	if ex == nil {
		panic("netio: Dial with nil executor")
	}
	if ctx == nil {
		panic("netio: Dial with nil context")
	}
	if err := checkNetwork("dial", network, address); err != nil {
		return future.Failed[*Conn](ex, err)
	}
	lp := (*loop.Loop)(ex)
	if lp.Closing() {
		return future.Failed[*Conn](ex, executor.ErrClosed)
	}
	p := future.NewPromise[*Conn](ex)
	backendOf(lp).dial(ctx, lp, network, address, p)
	return p.Future()
}
