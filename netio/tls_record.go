package netio

// A TLS connection's state and its record path: the layer (layer.go) that
// opens the records a receive reads and seals what Write wrote, on the
// loop, once the handshake is done. tls.go has the model.
//
// Invariants:
//   - before est is set, tc, hin, hout, asked, pushing and dead are shared
//     by the handshake goroutine and the loop under mu; the loop sets est
//     in finish, which the goroutine submits as its last act, so from then
//     on everything is loop-owned;
//   - hin is filled only when it is empty and the goroutine asked for more
//     (asked), so what the loop buffers for a handshake is at most one
//     socket read;
//   - after est, in is a slice of the connection's read buffer (c.rbuf)
//     holding ciphertext crypto/tls has not read yet; the socket is read
//     again (into c.rbuf) only once in is empty;
//   - pbuf holds the plaintext of the last receive (valid until the next),
//     and goes back to the pool when a receive finds nothing; pout holds
//     plaintext written and not yet sealed, and goes back once sealed;
//   - dead, once set (the connection was released), fails every later
//     transport call of the handshake goroutine, which wakes and ends.

import (
	"crypto/tls"
	"io"
	"sync"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// tlsState is a connection's TLS state; see the top of the file.
type tlsState struct {
	c   *Conn
	lp  *loop.Loop
	tc  *tls.Conn
	ref layerRef // what c.ext.ly points at: the layer is t, and costs c no allocation

	// The flags, together so that they take one word.
	est bool // the handshake is done: everything is loop-owned
	// stuck: the handshake goroutine's thread could not be raised from
	// the idle priority; its worker ends with it. The goroutine only.
	stuck   bool
	endRead bool // established: crypto/tls has been given end
	sealing bool // established
	probe   bool // established: crypto/tls may hold a whole record: read it before the socket
	asked   bool // the handshake: the goroutine waits for a pull
	pushing bool // the handshake: a push is queued

	// established, loop-owned
	in   []byte // ciphertext not yet read by crypto/tls (in c.rbuf)
	pbuf []byte // the plaintext of the last receive
	pout []byte // plaintext written, not yet sealed
	end  error  // the socket's end (io.EOF or its error), once read
	fr   framer // where the records given to crypto/tls end

	// the handshake
	mu     sync.Mutex
	cond   sync.Cond
	hin    []byte
	hout   []byte
	dead   error // the connection was released
	hsErr  error // the goroutine's result, for finish
	timer  *executor.Timer
	done   func(error) // loop: what the handshake's end does
	pullFn func()
	pushFn func()
	endFn  func()
	low    lowered // the goroutine's thread, while lowered
}

// tlsOf returns c's TLS state, or nil. It reads c.ext and its layer,
// which a TLS connection has before it is delivered, and not the flags, so
// ConnectionState may call it from any goroutine.
func (c *Conn) tlsOf() *tlsState {
	if c.ext == nil || c.ext.ly == nil {
		return nil
	}
	t, _ := c.ext.ly.layer.(*tlsState)
	return t
}

// emit appends records to c's output. Loop only.
func (t *tlsState) emit(b []byte) {
	c := t.c
	if c.out == nil {
		c.out = c.r.getW()
	}
	c.out = append(c.out, b...)
	c.written += uint64(len(b))
	if !t.sealing {
		c.markDirty()
	}
}

// release is called when c releases its socket: a handshake in progress
// wakes and fails; the buffers go.
func (t *tlsState) release() {
	c := t.c
	t.mu.Lock()
	if t.dead == nil {
		t.dead = c.rerr
	}
	t.cond.Broadcast()
	t.mu.Unlock()
	if t.pout != nil {
		c.r.putW(t.pout)
		t.pout = nil
	}
	t.in = nil
	// pbuf may still be read by the code that closed c: left to the GC.
	t.pbuf = nil
}

// readRecord is Read once established: the ciphertext the socket gave, one
// record at a time, or errWouldBlock when there is none. Loop only.
func (t *tlsState) readRecord(p []byte) (int, error) {
	if len(t.in) > 0 {
		n := copy(p, t.in[:t.fr.limit(t.in)])
		t.fr.advance(t.in[:n])
		t.in = t.in[n:]
		return n, nil
	}
	if t.end != nil {
		t.endRead = true
		return 0, t.end
	}
	return 0, errWouldBlock
}

// open is receive for a TLS connection: the next plaintext.
func (t *tlsState) open() ([]byte, error, bool) {
	c := t.c
	for {
		if len(t.in) == 0 && t.end == nil && !t.probe {
			// crypto/tls holds no whole record (it is given one record at
			// a time and has returned the last one's plaintext): read the
			// socket before asking it, which saves a call that would find
			// nothing (and allocate).
			if c.r.draining {
				t.dropPlain()
				return nil, nil, false // Shutdown: nothing more is read for a receive
			}
			rn, rerr, ok := c.r.readNow(c)
			if !ok {
				t.dropPlain()
				return c.wouldWait()
			}
			switch {
			case rn > 0:
				t.in = c.rbuf[:rn]
				c.set(fRecvd) // a later end is the TLS layer's to read (leave)
			case rerr != nil:
				t.end = rerr
			default:
				t.end = io.EOF
			}
		}
		t.probe = false
		if t.pbuf == nil {
			t.pbuf = c.r.getR()
		}
		n, err := t.tc.Read(t.pbuf)
		if n > 0 {
			if err != nil {
				c.rerr = t.mapErr(err)
			}
			return t.pbuf[:n], nil, true
		}
		if err == errWouldBlock || err == nil {
			continue // a partial record, or one without data: read on
		}
		c.rerr = t.mapErr(err)
		c.r.putR(t.pbuf)
		t.pbuf = nil
		return nil, c.rerr, true
	}
}

// framer follows the record boundaries of the ciphertext given to
// crypto/tls, so that it is given one record at a time: it then holds no
// whole record once a Read has returned, and the socket can be read
// without asking it first.
type framer struct {
	hdr  [5]byte // the header of the current record, hn bytes of it so far
	hn   int
	left int // bytes of its body not yet given
}

// limit returns how many bytes of in belong to the current record.
func (f *framer) limit(in []byte) int {
	if f.hn < len(f.hdr) {
		h := min(len(f.hdr)-f.hn, len(in))
		if f.hn+h < len(f.hdr) {
			return h
		}
		var hdr [5]byte
		copy(hdr[:], f.hdr[:f.hn])
		copy(hdr[f.hn:], in[:h])
		return h + min(int(hdr[3])<<8|int(hdr[4]), len(in)-h)
	}
	return min(f.left, len(in))
}

// advance notes that b, within the current record, was given.
func (f *framer) advance(b []byte) {
	if f.hn < len(f.hdr) {
		h := copy(f.hdr[f.hn:], b)
		f.hn += h
		b = b[h:]
		if f.hn < len(f.hdr) {
			return
		}
		f.left = int(f.hdr[3])<<8 | int(f.hdr[4])
	}
	f.left -= len(b)
	if f.left == 0 {
		f.hn = 0
	}
}

// mapErr names the end of a TLS connection: a peer that closed the socket
// without close_notify truncated the stream.
func (t *tlsState) mapErr(err error) error {
	if err == io.EOF && t.endRead && t.end == io.EOF {
		return errTruncated
	}
	return err
}

// dropPlain gives the plaintext buffer back when a receive finds nothing.
func (t *tlsState) dropPlain() {
	if t.pbuf != nil {
		t.c.r.putR(t.pbuf)
		t.pbuf = nil
	}
}

// last is the buffer of the plaintext the last open returned.
func (t *tlsState) last() []byte { return t.pbuf }

// pending is the plaintext written and not yet sealed.
func (t *tlsState) pending() *[]byte { return &t.pout }

// buffered is how many bytes of plaintext wait for seal.
func (t *tlsState) buffered() int { return len(t.pout) }

// peerEnd names the end of a connection whose peer left while nobody
// received: nothing is left unread and no close_notify came before the
// end (it would have ended the receives already), so an EOF is a
// truncation.
func (t *tlsState) peerEnd(err error) error {
	if err == io.EOF {
		return errTruncated
	}
	return err
}

// seal turns the plaintext written into records in the output buffer.
func (t *tlsState) seal() {
	if len(t.pout) == 0 || !t.est {
		return
	}
	c := t.c
	t.sealing = true
	_, err := t.tc.Write(t.pout)
	t.sealing = false
	c.r.putW(t.pout)
	t.pout = nil
	if err != nil {
		c.abort(err)
	}
}

// closeNotify seals what was written and sends close_notify after it.
func (t *tlsState) closeNotify() {
	if !t.est || t.c.released {
		return
	}
	t.seal()
	if !t.c.released {
		t.sealing = true
		_ = t.tc.CloseWrite()
		t.sealing = false
		t.c.markDirty()
	}
}
