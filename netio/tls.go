package netio

// TLS over netio connections: crypto/tls driven by the loop.
//
// A TLS connection is a Conn whose extension holds a tlsState: a
// crypto/tls Conn over an in-memory transport (the tlsState itself is that
// net.Conn). It lives in two phases.
//
// The handshake runs on a goroutine of the handshake pool (crypto/tls keeps
// a handshake's state on its stack, and its handshake errors are sticky, so
// it cannot be resumed on the loop). The goroutine's transport Read blocks
// on hin; when hin is empty it asks the loop (Submit of pull) to receive
// from the socket, and the loop copies what it read into hin. Its Write
// appends to hout and asks the loop (push) to write it to the socket. The
// connection is not seen by its user while this goes on: Accept and DialTLS
// deliver it once the handshake is done, and a handshake that fails or times
// out closes its connection only.
//
// Once established, everything runs on the loop, and the connection holds
// no goroutine: a receive calls tls.Conn.Read, whose transport Read copies
// from in (the ciphertext the socket gave, kept in the connection's read
// buffer) and reports errWouldBlock, a temporary net.Error, when in is
// empty. crypto/tls does not make a temporary error sticky and keeps a
// partial record in its own buffer, so the next receive resumes it. Writes
// append plaintext to pout; at the batch boundary (or Flush, or Close) it
// is sealed with tls.Conn.Write, whose transport Write appends the records
// to the connection's output buffer.
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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// DefaultHandshakeTimeout bounds a TLS handshake, from the accept (or the
// connect) to its end, unless WithHandshakeTimeout says otherwise.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultMaxHandshakes is how many TLS handshakes a listener runs at once
// unless WithMaxHandshakes says otherwise: past it the listener stops
// accepting (connections wait in the kernel's backlog) until one ends.
const DefaultMaxHandshakes = 1024

// ErrHandshakeTimeout fails a TLS connection whose handshake did not end in
// its handshake timeout.
var ErrHandshakeTimeout = errors.New("netio: TLS handshake timed out")

// errTruncated ends the receives of a TLS connection whose peer closed the
// socket without a close_notify alert.
var errTruncated = fmt.Errorf("netio: TLS connection ended without close_notify: %w", io.ErrUnexpectedEOF)

// tlsOptions is the TLS part of a listener's configuration.
type tlsOptions struct {
	tlsSet        bool // WithTLS was given
	tlsConfig     *tls.Config
	hsTimeout     time.Duration
	maxHandshakes int
	hsOpts        bool // WithHandshakeTimeout or WithMaxHandshakes was given
}

// WithTLS makes the listener serve TLS with cfg: each connection it
// accepts is handshaken off the loop and delivered by Accept once the
// handshake is done; its receives return plaintext and its writes are
// sealed into records, on the loop. cfg must have a certificate
// (Certificates, GetCertificate or GetConfigForClient) and must not be
// modified once the listener uses it; GetCertificate and
// GetConfigForClient run on the handshake goroutines, so certificates can
// be reloaded without restarting the listener.
func WithTLS(cfg *tls.Config) ListenOption {
	return optionFunc(func(c *listenConfig) { c.tlsSet, c.tlsConfig = true, cfg })
}

// WithHandshakeTimeout bounds each TLS handshake of a listener made with
// WithTLS (default DefaultHandshakeTimeout): a connection whose handshake
// has not ended d after it was accepted is closed. d <= 0 means the
// default.
func WithHandshakeTimeout(d time.Duration) ListenOption {
	return optionFunc(func(c *listenConfig) { c.hsTimeout, c.hsOpts = d, true })
}

// WithMaxHandshakes bounds how many TLS handshakes a listener made with
// WithTLS runs at once (default DefaultMaxHandshakes). n <= 0 means the
// default.
func WithMaxHandshakes(n int) ListenOption {
	return optionFunc(func(c *listenConfig) { c.maxHandshakes, c.hsOpts = n, true })
}

// ListenTLS is Listen with WithTLS(cfg).
func ListenTLS(ex *executor.Executor, network, address string, cfg *tls.Config, opts ...ListenOption) (*Listener, error) {
	opts = append(opts[:len(opts):len(opts)], WithTLS(cfg))
	return Listen(ex, network, address, opts...)
}

// checkTLS validates the TLS options of a listener and fills in their
// defaults.
func (o *tlsOptions) checkTLS(network, address string) error {
	if !o.tlsSet {
		if o.hsOpts {
			return fmt.Errorf("netio: listen %s %s: WithHandshakeTimeout or WithMaxHandshakes without WithTLS", network, address)
		}
		return nil
	}
	cfg := o.tlsConfig
	if cfg == nil {
		return fmt.Errorf("netio: listen %s %s: WithTLS with nil *tls.Config", network, address)
	}
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil {
		return fmt.Errorf("netio: listen %s %s: WithTLS: the config has no certificate (Certificates, GetCertificate or GetConfigForClient)", network, address)
	}
	if o.hsTimeout <= 0 {
		o.hsTimeout = DefaultHandshakeTimeout
	}
	if o.maxHandshakes <= 0 {
		o.maxHandshakes = DefaultMaxHandshakes
	}
	return nil
}

// DialTLS connects to address as Dial does, then runs a TLS client
// handshake with cfg off the loop, and returns a future of the connection
// once the handshake is done. If cfg.ServerName is empty it is taken from
// address (as tls.Dial does). ctx bounds the connect and the handshake, and
// so does DefaultHandshakeTimeout. Any goroutine.
func DialTLS(ctx context.Context, ex *executor.Executor, network, address string, cfg *tls.Config) *future.Future[*Conn] {
	if ex == nil {
		panic("netio: DialTLS with nil executor")
	}
	if ctx == nil {
		panic("netio: DialTLS with nil context")
	}
	if cfg == nil {
		return future.Failed[*Conn](ex, errors.New("netio: DialTLS with nil *tls.Config"))
	}
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify && network != "unix" {
		host, _, err := net.SplitHostPort(address)
		if err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	p := future.NewPromise[*Conn](ex)
	Dial(ctx, ex, network, address).OnComplete(func(c *Conn, err error) {
		if err != nil {
			p.Reject(err)
			return
		}
		t := c.startTLS(tls.Client, cfg, DefaultHandshakeTimeout)
		var stop func() bool
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				toLoop(c.r.lp, func() {
					if !t.est {
						c.abort(ctx.Err())
					}
				}, func() {})
			})
		}
		t.done = func(err error) {
			if stop != nil {
				stop()
			}
			if err != nil {
				p.Reject(err)
				return
			}
			if !p.Resolve(c) {
				c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
			}
		}
	})
	return p.Future()
}

// ConnectionState returns the state of c's TLS connection (version,
// cipher suite, the peer's certificates, the ALPN protocol, the server
// name) and true, or false for a connection without TLS. Any goroutine.
func (c *Conn) ConnectionState() (tls.ConnectionState, bool) {
	c.check("ConnectionState")
	t := c.tlsOf()
	if t == nil {
		return tls.ConnectionState{}, false
	}
	return t.tc.ConnectionState(), true
}

// tlsState is a connection's TLS state; see the top of the file.
type tlsState struct {
	c   *Conn
	lp  *loop.Loop
	tc  *tls.Conn
	est bool // the handshake is done: everything is loop-owned
	// stuck: the handshake goroutine's thread could not be raised from
	// the idle priority; its worker ends with it. The goroutine only.
	stuck bool

	// established, loop-owned
	in      []byte // ciphertext not yet read by crypto/tls (in c.rbuf)
	pbuf    []byte // the plaintext of the last receive
	pout    []byte // plaintext written, not yet sealed
	end     error  // the socket's end (io.EOF or its error), once read
	endRead bool   // crypto/tls has been given end
	sealing bool
	probe   bool   // crypto/tls may hold a whole record: read it before the socket
	fr      framer // where the records given to crypto/tls end

	// the handshake
	mu      sync.Mutex
	cond    sync.Cond
	hin     []byte
	hout    []byte
	asked   bool  // the goroutine waits for a pull
	pushing bool  // a push is queued
	dead    error // the connection was released
	hsErr   error // the goroutine's result, for finish
	timer   *executor.Timer
	done    func(error) // loop: what the handshake's end does
	pullFn  func()
	pushFn  func()
	endFn   func()
	low     lowered // the goroutine's thread, while lowered
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

// startTLS makes c a TLS connection and queues its handshake. Loop only.
func (c *Conn) startTLS(mk func(net.Conn, *tls.Config) *tls.Conn, cfg *tls.Config, timeout time.Duration) *tlsState {
	t := &tlsState{c: c, lp: c.r.lp}
	t.cond.L = &t.mu
	t.pullFn, t.pushFn, t.endFn = t.pull, t.push, t.finish
	t.tc = mk(t, cfg)
	c.setLayer(t)
	t.timer = c.exe().AfterFunc(timeout, func() {
		if !t.est {
			c.abort(ErrHandshakeTimeout)
		}
	})
	handshakes.queue(t)
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

// The transport: crypto/tls's net.Conn.

// Read gives crypto/tls ciphertext: during the handshake it blocks for it;
// once established it reports errWouldBlock when there is none.
func (t *tlsState) Read(p []byte) (int, error) {
	if t.est {
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

// The hooks the connection calls.

// open is receive for a TLS connection: the next plaintext.
func (t *tlsState) open() ([]byte, error, bool) {
	c := t.c
	if c.held > 0 {
		n := c.held
		c.held = 0
		return t.pbuf[:n], nil, true
	}
	if c.rerr != nil {
		return nil, c.rerr, true
	}
	for {
		if len(t.in) == 0 && t.end == nil && !t.probe {
			// crypto/tls holds no whole record (it is given one record at
			// a time and has returned the last one's plaintext): read the
			// socket before asking it, which saves a call that would find
			// nothing (and allocate).
			rn, rerr, ok := c.r.readNow(c)
			if !ok {
				if t.pbuf != nil {
					c.r.putR(t.pbuf)
					t.pbuf = nil
				}
				return nil, nil, false
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

// The handshake pool.

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

// The listener's part.

// listenTLS is the state of a TLS listener's handshakes. Loop-owned.
type listenTLS struct {
	n       int     // handshakes in progress
	pending []*Conn // their connections
	ready   []*Conn // handshaken, for the next Accept
}

// acceptNext is acceptNow for every listener: a TLS listener accepts
// connections while fewer than its maximum handshake, starts their
// handshakes, and returns those that are done.
func (l *Listener) acceptNext() (*Conn, error, bool) {
	if l.cfg.tlsConfig == nil {
		return l.be.acceptNow(l)
	}
	s := &l.tl
	for s.n < l.cfg.maxHandshakes {
		c, err, ok := l.be.acceptNow(l)
		if !ok {
			break
		}
		if err != nil || c == nil {
			return c, err, true
		}
		l.handshake(c)
	}
	if len(s.ready) > 0 {
		c := s.ready[0]
		copy(s.ready, s.ready[1:])
		s.ready[len(s.ready)-1] = nil
		s.ready = s.ready[:len(s.ready)-1]
		return c, nil, true
	}
	return nil, nil, false
}

// handshake starts the server handshake of c, accepted by l.
func (l *Listener) handshake(c *Conn) {
	s := &l.tl
	s.n++
	s.pending = append(s.pending, c)
	t := c.startTLS(tls.Server, l.cfg.tlsConfig, l.cfg.hsTimeout)
	t.done = func(err error) {
		s.n--
		for i, p := range s.pending {
			if p == c {
				last := len(s.pending) - 1
				s.pending[i] = s.pending[last]
				s.pending[last] = nil
				s.pending = s.pending[:last]
				break
			}
		}
		if err == nil {
			if l.done {
				c.abort(net.ErrClosed)
				return
			}
			s.ready = append(s.ready, c)
		}
		if len(l.acceptq) > 0 {
			l.pump()
		}
	}
}

// finishTLS closes the connections a closed listener was handshaking or
// had not delivered.
func (l *Listener) finishTLS() {
	s := &l.tl
	for _, c := range s.pending {
		c.abort(net.ErrClosed)
	}
	for _, c := range s.ready {
		c.abort(net.ErrClosed)
	}
	s.pending, s.ready = nil, nil
}
