package netio

// The backend contract, its other side: what of the shared code a backend
// may use (backend.go states the backend's side, the interface). A
// backend's files (doc.go names them) reach the shared code only through
// what is defined here, the types Conn, Listener, reactor and
// listenConfig, the exported API and the exported errors and constants;
// the shared files reach a backend only through the backend interface and
// the state types below. contract_internal_test.go checks both.
//
// Rules, besides backend.go's:
//   - connIO, listenIO, reactorIO and connAddrs are the fields a backend
//     reads and writes, embedded in Conn, Listener, reactor and connExt;
//     every one of them is loop-owned but for listenIO's mu, closed, lp,
//     addr and cfg (see there);
//   - the methods below run on the loop unless their comment says
//     otherwise; a backend calls readable, acceptable, took, leave and
//     abort from its own completions, never from inside a shared call
//     that is running on c (readNow, flushOut), except took and abort in
//     flushOut and abort in readNow;
//   - they are small on purpose: the hot ones (took, readable, receiving,
//     getR, putR, the field reads) are inlined or one call.

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Buffers of the reactor's pools.
const (
	readBufSize = 16 << 10 // bytes one receive can return
	poolMax     = 64       // free buffers of each kind a loop keeps
)

// connIO is what of a connection a backend reads and writes (embedded in
// Conn). Loop-owned.
type connIO struct {
	r       *reactor // its loop is r.lp; set by attach, then read-only
	rbuf    []byte   // the read buffer: readNow takes it from getR and fills it, or gives it back (putR) when it finds nothing
	out     []byte   // the output: flushOut hands it to the socket, compacts it, and gives it back (putW) once drained
	werr    error    // the write error: once set, the backend sends nothing more (a dial that fails sets it before abort)
	written uint64   // the bytes Write accepted; a zero-copy file counts here once started
	taken   uint64   // the bytes the socket took: moved only by took
	ext     *connExt // addresses (connAddrs) and a SendFile under way; nil for most connections
}

// connSock is the backend's state of a connection (embedded in Conn):
// sk, defined by the build's backend files (kernel_sock.go's for epoll,
// io_uring and the simulation on Linux, portable_sock.go's elsewhere).
// Shared code never reads it.
type connSock struct {
	sk sock
}

// connAddrs are a connection's addresses when it keeps them itself
// (c.addrs: set by newConnOf or by a dial before the connection is
// shared, then read-only).
type connAddrs struct {
	laddr net.Addr
	raddr net.Addr
}

// listenIO is what of a listener a backend reads and writes (embedded in
// Listener). lp, addr and cfg are set before the listener is shared, then
// read-only; mu guards closed, which Close sets on any goroutine; r is
// loop-owned, set at the first accept; ls is the backend's state.
type listenIO struct {
	lp     *loop.Loop
	addr   net.Addr
	cfg    listenConfig
	mu     sync.Mutex
	closed bool
	r      *reactor
	ls     lsock // the backend's part (listen, acceptNow, closeListener, forget)
}

// reactorIO is what of a loop's reactor a backend reads (embedded in
// reactor): its loop and the backend serving it, both read-only once the
// reactor is made.
type reactorIO struct {
	lp *loop.Loop
	be backend
}

// released reports whether c's socket has been closed (closeSock ran, or
// runs now): the backend then does nothing more for c.
func (c *Conn) isReleased() bool { return c.released }

// isDirty reports whether c waits in the reactor's list for the flush at
// the end of the loop's batch (markDirty).
func (c *Conn) isDirty() bool { return c.dirty }

// reusesPort reports whether l was asked to share its port
// (WithReusePort). Any goroutine.
func (l *Listener) reusesPort() bool { return l.cfg.reusePort }

// closeNow closes, at once, every connection of the reactor and every
// listener accepting on its loop: the executor closes and the backend
// hears it before the reactor's own watch does (io_uring's ring).
func (r *reactor) closeNow() {
	(*reactorWatch)(r).Interrupt(executor.ErrClosed)
	for l := range r.listeners {
		l.closeSocket()
		l.finish(executor.ErrClosed)
	}
}

// A SendFile by zero copy (backend.sendFile): sendfile.go keeps its state
// (fileOut); the backend that sends it moves it only through these.

// useZeroCopy marks sf as sent by zero copy (os.File.Fd: the file stays
// open until sf ends).
func (sf *fileOut) useZeroCopy() { sf.zc, sf.fd = true, int(sf.f.Fd()) }

// beginFile starts sf on c once the output written before it has been
// taken: written counts the file's bytes from now on.
func (c *Conn) beginFile(sf *fileOut) {
	sf.started = true
	c.written += uint64(sf.left)
}

// span returns sf's file descriptor, where its next byte is (the kernel
// moves it) and how many bytes are left.
func (sf *fileOut) span() (fd int, off *int64, left int64) { return sf.fd, &sf.off, sf.left }

// tookFile counts k more bytes of c's zero-copy file as taken by the
// socket, and reports whether that ended the SendFile: then sf goes back
// to the pool and the caller touches it no more.
func (c *Conn) tookFile(sf *fileOut, k int) (done bool) {
	sf.left -= int64(k)
	if sf.left == 0 {
		c.ext.sf = nil
		c.took(k)
		c.keepFileOut(sf) // after took, whose callbacks may start another send
		return true
	}
	c.took(k)
	return false
}

// dropFile ends c's SendFile: it failed (the caller fails c, or its
// future).
func (c *Conn) dropFile() { c.ext.sf = nil }

// zeroCopyFile returns c's zero-copy SendFile when it has bytes for the
// socket now (the output before it has left), else nil.
func (c *Conn) zeroCopyFile() *fileOut {
	if c.ext != nil && c.ext.sf != nil && c.ext.sf.started {
		return c.ext.sf
	}
	return nil
}

// newConnOf returns a connection whose addresses are laddr and raddr, or,
// when both are nil, kept inline by the backend.
func newConnOf(laddr, raddr net.Addr) *Conn {
	if laddr == nil && raddr == nil {
		return &Conn{}
	}
	c := &Conn{addrs: true}
	c.ext = &connExt{connAddrs: connAddrs{laddr: laddr, raddr: raddr}}
	return c
}

// attach finishes making a connection on its loop; the reactor closes it
// with the executor (the backend keeps it in its table of sockets). Loop
// only. It returns false (and the caller closes the socket) once the
// executor has closed.
func (c *Conn) attach(r *reactor, cfg *listenConfig) bool {
	c.r = r
	c.limit, c.linger = clampLimit(cfg.outputLimit), cfg.linger
	if r.closed {
		return false
	}
	r.conns++
	inc(&r.stats.opened)
	if cfg.idle > 0 {
		c.SetIdleTimeout(cfg.idle)
	}
	return true
}

// readable is called by the backend, on the loop, when bytes may have
// arrived since a receive found none.
func (c *Conn) readable() {
	if c.is(fLingerIn) {
		c.discardInput()
		return
	}
	if len(c.recvq) > 0 && !c.is(fPumping) {
		c.pump()
	}
	if w := c.pollw; w != nil {
		c.pollw = nil
		w.Wake()
	}
}

// receiving reports whether a receive is pending (a queued Recv, a
// PollRecv waiting): the peer's end is then delivered to it.
func (c *Conn) receiving() bool { return len(c.recvq) > 0 || c.pollw != nil }

// leave ends a connection whose peer has gone while nobody received from
// it: err (io.EOF, or the socket's error) is what receives fail with from
// now on, and the socket is freed at once when nothing is left to send
// (after the output otherwise, or at once on an error). A peer's EOF after
// bytes were received is left to the next receive instead: the peer may
// have shut only its write side and wait for a reply.
func (c *Conn) leave(err error) {
	if c.released || c.is(fClosing) || c.rerr != nil || c.held > 0 {
		return
	}
	if err == io.EOF && c.is(fRecvd) {
		return
	}
	if c.is(fLayer) {
		err = c.ext.ly.peerEnd(err)
	}
	c.rerr = err
	if err != io.EOF || c.written == c.taken {
		c.werr = net.ErrClosed // writes fail as after Close
		c.abort(err)
		return
	}
	c.set(fGone) // drained releases it
}

// took records that the kernel took n more bytes of output.
func (c *Conn) took(n int) {
	c.taken += uint64(n)
	if c.idle && n > 0 {
		c.touch()
	}
	// Resolve runs no callback inline (they are scheduled), so the waits
	// met are resolved first and the rest moved down once: linear in the
	// flushes a take ends, however many a slow peer let pile up.
	if q := c.flushq(); len(q) > 0 && q[0].target <= c.taken {
		k := 0
		for ; k < len(q) && q[k].target <= c.taken; k++ {
			q[k].p.Resolve(struct{}{})
		}
		n := copy(q, q[k:])
		clear(q[n:])
		c.ext.flushq = q[:n]
	}
	if c.taken == c.written {
		c.drained()
	}
}

func (c *Conn) markDirty() {
	if !c.dirty {
		c.dirty = true
		c.r.dirty = append(c.r.dirty, c)
	}
}

// abort closes c at once: unsent output is dropped and everything pending
// fails with err (receives with their sticky error if they had one).
func (c *Conn) abort(err error) {
	if c.released {
		return
	}
	if c.rerr == nil {
		c.rerr = err
	}
	if c.werr == nil {
		c.werr = err
	}
	c.failRecv(c.rerr)
	c.failFlush()
	c.release()
}

// getR returns a read buffer.
func (r *reactor) getR() []byte {
	if b := pop(&r.rfree); b != nil {
		return b
	}
	return make([]byte, readBufSize)
}

// putR gives a read buffer back.
func (r *reactor) putR(b []byte) {
	if len(r.rfree) < poolMax && cap(b) == readBufSize {
		r.rfree = append(r.rfree, b[:readBufSize])
	}
}

// putW gives an output buffer back; one that grew for a burst is left to
// the garbage collector.
func (r *reactor) putW(b []byte) {
	if len(r.wfree) < poolMax && cap(b) == writeBufSize {
		r.wfree = append(r.wfree, b[:0])
	}
}

// reactorOf returns lp's reactor, making it on first use. Loop only.
func reactorOf(lp *loop.Loop) (*reactor, error) {
	if r, ok := lp.Local(reactorKey{}).(*reactor); ok {
		return r, nil
	}
	r := &reactor{reactorIO: reactorIO{lp: lp, be: loopBackendOf(lp)}, ex: (*executor.Executor)(lp), stats: &counters{}}
	if r.be.name() == BackendEpoll && lp.HasIO() {
		// The loop waits in its io_uring already (another component made
		// it, internal/uring): epoll cannot be its wait, the ring serves.
		setKind(lp, BackendURing)
		r.be = newHostBackend(BackendURing)
	}
	io, err := r.be.init(r)
	if errors.Is(err, errRefused) {
		refused(err) // epoll serves the loop instead
		setKind(lp, BackendEpoll)
		r.be = newHostBackend(BackendEpoll)
		io, err = r.be.init(r)
	}
	if err != nil {
		return nil, err
	}
	if !lp.Attach(loop.Attachment{
		Key: reactorKey{}, Value: r,
		Watch: &r.watch, OnClose: (*reactorWatch)(r),
		IO:      io,
		Flusher: r,
	}) {
		r.be.shut(r)
		return nil, executor.ErrClosed
	}
	r.stats.backend = string(r.be.name())
	register(lp, r.stats)
	lp.AddDrainer(r)
	return r, nil
}

// toLoop runs fn on lp's loop, or drop if the loop has closed or closes
// before it runs fn. Any goroutine.
func toLoop(lp *loop.Loop, fn, drop func()) {
	_ = lp.Schedule(&onLoop{fn: fn, drop: drop}, nil, 0) // Schedule drops it when refused
}

func defaultListenConfig() listenConfig {
	return listenConfig{outputLimit: DefaultOutputLimit, linger: DefaultLinger}
}

// acceptable is called by the backend, on the loop, when a connection may
// be waiting.
func (l *Listener) acceptable() {
	if l.isClosed() {
		l.finish(net.ErrClosed)
		return
	}
	l.pump()
}

// acceptAgain reports whether an accept that failed with err is tried
// again at once by the backend, neither counted nor reported (Serve's
// back-off and Stats.AcceptErrors are for the other failures): the call
// was interrupted (EINTR), or the connection it found was aborted before
// it was taken (ECONNABORTED: the kernel has dropped it, and the next one
// may be waiting). Package net's Accept, which the portable backend
// calls, keeps the same rule itself.
func acceptAgain(err error) bool {
	return errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ECONNABORTED)
}

func (l *Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}
