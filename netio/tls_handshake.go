package netio

// A TLS connection's handshake and its transport: the handshake runs on a
// goroutine of the handshake pool (tls_pool.go) over the tlsState as its
// net.Conn, and the loop pulls its input from the socket and pushes its
// output. The invariants are tls_record.go's.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spindle-rt/spindle/executor"
)

// startTLS makes c a TLS connection and queues its handshake. Loop only.
func (c *Conn) startTLS(mk func(net.Conn, *tls.Config) *tls.Conn, cfg *tls.Config, timeout time.Duration) *tlsState {
	t := &tlsState{c: c, lp: c.r.lp}
	t.cond.L = &t.mu
	t.pullFn, t.pushFn, t.endFn = t.pull, t.push, t.finish
	t.tc = mk(t, cfg)
	t.ref.layer = t
	c.setLayer(&t.ref)
	t.timer = c.exe().AfterFunc(timeout, func() {
		if !t.est {
			c.abort(ErrHandshakeTimeout)
		}
	})
	if p := handshakesOf(t.lp); p != nil {
		p.queue(t)
	} // else the executor has closed, and c with it
	return t
}

// run is the handshake, on a goroutine of the pool.
func (t *tlsState) run() {
	t.mu.Lock()
	dead := t.dead
	t.mu.Unlock()
	err := dead
	if err == nil {
		t.compute()
		err = t.tc.Handshake()
		t.uncompute()
	}
	t.hsErr = err
	if t.lp.Submit(t.endFn) != nil {
		// The loop has closed: so has the connection.
		return
	}
}

// finish ends the handshake on the loop.
func (t *tlsState) finish() {
	c := t.c
	t.timer.Stop()
	t.timer = nil
	err := t.hsErr
	if err == nil && c.released {
		err = c.rerr
	}
	if err == nil {
		t.mu.Lock()
		t.est = true
		t.probe = true
		t.in, t.hin = t.hin, nil
		if len(t.in) == 0 {
			t.in = nil
		}
		t.mu.Unlock()
		if len(t.hout) > 0 {
			t.push()
		}
		// An established connection keeps nothing of its handshake.
		t.pullFn, t.pushFn, t.endFn = nil, nil, nil
	} else if !c.released {
		if !errors.Is(err, ErrHandshakeTimeout) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, executor.ErrClosed) {
			err = fmt.Errorf("netio: TLS handshake: %w", err)
		}
		c.closeOn() // the alert crypto/tls wrote still goes out, within the linger
	}
	if t.done != nil {
		d := t.done
		t.done = nil
		d(err)
	}
}

// pull receives for the handshake goroutine. Loop only.
func (t *tlsState) pull() {
	c := t.c
	if c.released || t.est {
		return
	}
	n, err, ok := c.r.readNow(c)
	if !ok {
		c.pollw = t // Wake pulls again
		return
	}
	t.mu.Lock()
	switch {
	case n > 0:
		t.hin = append(t.hin, c.rbuf[:n]...)
	case err != nil:
		t.dead = err
	default:
		t.dead = io.EOF
	}
	t.asked = false
	t.cond.Broadcast()
	t.mu.Unlock()
}

// Wake is the backend's sign that the socket may be readable.
func (t *tlsState) Wake() { t.pull() }

// push writes what the handshake goroutine wrote. Loop only.
func (t *tlsState) push() {
	c := t.c
	t.mu.Lock()
	b := t.hout
	t.hout = nil
	t.pushing = false
	t.mu.Unlock()
	if len(b) > 0 && !c.released {
		t.emit(b)
	}
}

// Read gives crypto/tls ciphertext: during the handshake it blocks for it;
// once established it reports errWouldBlock when there is none.
func (t *tlsState) Read(p []byte) (int, error) {
	if t.est {
		return t.readRecord(p)
	}
	return t.readHandshake(p)
}

// readHandshake is Read during the handshake: it blocks until the loop has
// pulled bytes for it. The handshake goroutine only.
func (t *tlsState) readHandshake(p []byte) (int, error) {
	t.mu.Lock()
	if len(t.hin) == 0 && t.dead == nil {
		t.uncompute() // waiting for the peer takes no CPU slot
		for len(t.hin) == 0 && t.dead == nil {
			if !t.asked {
				t.asked = true
				if t.lp.Submit(t.pullFn) != nil {
					t.dead = executor.ErrClosed
					break
				}
			}
			t.cond.Wait()
		}
		t.mu.Unlock()
		t.compute()
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	if len(t.hin) > 0 {
		n := copy(p, t.hin[:t.fr.limit(t.hin)])
		t.fr.advance(t.hin[:n])
		t.hin = t.hin[n:]
		if len(t.hin) == 0 {
			t.hin = nil
		}
		return n, nil
	}
	return 0, t.dead
}

// Write takes the records crypto/tls sealed.
func (t *tlsState) Write(p []byte) (int, error) {
	if t.est {
		if t.c.released {
			return 0, net.ErrClosed
		}
		t.emit(p)
		return len(p), nil
	}
	return t.writeHandshake(p)
}

// writeHandshake is Write during the handshake: it buffers the records
// and asks the loop to push them. The handshake goroutine only.
func (t *tlsState) writeHandshake(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead != nil {
		return 0, t.dead
	}
	t.hout = append(t.hout, p...)
	if !t.pushing {
		t.pushing = true
		if t.lp.Submit(t.pushFn) != nil {
			t.dead = executor.ErrClosed
			return 0, t.dead
		}
	}
	return len(p), nil
}

// Close is crypto/tls's close of the transport: the connection closes
// itself.
func (t *tlsState) Close() error { return nil }

func (t *tlsState) LocalAddr() net.Addr  { return t.c.LocalAddr() }
func (t *tlsState) RemoteAddr() net.Addr { return t.c.RemoteAddr() }

// The deadlines are the handshake timeout's and the loop's business.
func (t *tlsState) SetDeadline(time.Time) error      { return nil }
func (t *tlsState) SetReadDeadline(time.Time) error  { return nil }
func (t *tlsState) SetWriteDeadline(time.Time) error { return nil }

// wouldBlock is the transport's "nothing yet": a temporary net.Error,
// which crypto/tls returns without making it sticky.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "netio: no TLS input yet" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock net.Error = wouldBlock{}
