package netio

// A connection's state, shared by every backend; its receive, write and
// close paths are in conn_recv.go, conn_write.go and conn_close.go.
//
// Invariants:
//   - everything below "loop-owned" is read and written only by the
//     goroutine that holds the connection's loop; calls from elsewhere
//     (Recv, Close) reach it through the loop's inbox, as runnables that
//     fail their future with executor.ErrClosed if the loop closes first;
//   - bytes are read from the socket only by receive, which runs only for
//     a receive that is pending (a queued Recv, a PollRecv, a TryRecv), so
//     an owner that stops receiving leaves the bytes in the kernel and the
//     peer is held back by TCP flow control;
//   - rbuf[:held] are bytes read but not yet delivered (their Recv was
//     cancelled); otherwise the bytes in rbuf are those the last receive
//     returned, and the next receive may overwrite them;
//   - written counts the bytes Write accepted and taken the bytes the kernel
//     has taken, so Buffered is written-taken; each flush waiter waits for
//     taken to reach the written of its Flush, and waiters are queued in
//     that order;
//   - rerr, once set, is the error of every later receive (io.EOF, the
//     socket's error, net.ErrClosed after Close, executor.ErrClosed after
//     the executor closed); werr likewise for writes and flushes;
//   - released is set once, when the socket is closed; from then on no
//     receive, write or flush is pending and the connection holds no
//     buffer.

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// Conn is a TCP or Unix connection served by one executor's loop. Make one
// with Listener.Accept or Dial. Its receives and write completions are
// events of that loop. Recv, Close and the address and executor getters
// may be called from any goroutine; the other methods are loop-only (a
// callback or task body of the executor) and panic elsewhere.
//
// A Conn is a merge.Stream[[]byte] and a future.Poller[[]byte] through
// PollRecv, so merge.Merge and future.Next receive from it.
type Conn struct {
	connIO // what a backend may read and write (backend_conn.go)

	// loop-owned
	recvq    []*future.Promise[[]byte]
	pollw    executor.Waker
	rerr     error
	linger   time.Duration
	owner    *connSet // the Server's connections on this loop, if a Server serves c
	held     int32
	oidx     int32
	limit    int32       // the output limit; <= 0: none
	closeReq atomic.Bool // Close was asked from off the loop
	flags    connFlag
	addrs    bool // the addresses are in ext (set at creation, then read-only); else inline in sk
	dirty    bool
	released bool
	rtimeout bool // the read deadline has passed (deadline.go)
	wtimeout bool // the write deadline has passed
	idle     bool // an idle timeout is set: receives and writes record the time

	connSock // the backend's part, and only there (backend_conn.go)
}

// connFlag is one of a connection's loop-owned flags, kept in one field
// (Conn.flags) so that an idle connection is smaller.
type connFlag uint16

const (
	fPumping  connFlag = 1 << iota // a pump runnable is queued
	fClosing                       // Close has begun: output is being sent, then the socket closes
	fLingerIn                      // Close has sent the output and shut the write side: input is discarded until EOF
	fGone                          // the peer left while nobody received: the socket is freed once the output has left
	fRecvd                         // a receive has returned bytes
	fWShut                         // CloseWrite has been asked
	fWShutOK                       // the write side has been shut
	fPartial                       // a Reader holds the start of a token (reader.go)
	fDrain                         // a Server is shutting down: a receive that would wait fails (server.go)
	fLayer                         // a layer (TLS) is over the bytes: ext.ly holds it (layer.go)
)

// is reports whether flag f is set. Loop only, as are set, unset and put.
func (c *Conn) is(f connFlag) bool { return c.flags&f != 0 }

func (c *Conn) set(f connFlag) { c.flags |= f }

func (c *Conn) unset(f connFlag) { c.flags &^= f }

// put sets f when on is true, else clears it.
func (c *Conn) put(f connFlag, on bool) {
	if on {
		c.flags |= f
	} else {
		c.flags &^= f
	}
}

// connExt holds the state of a connection that is flushed, lingers or is
// being dialled: kept apart so an idle connection is smaller.
type connExt struct {
	connAddrs // when c.addrs (backend_conn.go)
	flushq    []flushWait
	lingerT   *executor.Timer
	done      *future.Promise[error] // Done's, made on first use
	dl        *deadlines             // read, write and idle deadlines, once one is set

	// The output limit's stall: since when the output has been over the
	// limit with the socket full, and how much the kernel had taken then.
	stallAt    time.Duration // on the loop's clock; 0: no stall
	stallTaken uint64

	ly *layerRef // the layer over the bytes, when fLayer is set (layer.go)

	sf *fileOut // a SendFile under way (sendfile.go)
}

// x returns c's extension, making it on first use.
func (c *Conn) x() *connExt {
	if c.ext == nil {
		c.ext = &connExt{}
	}
	return c.ext
}

// flushq returns the pending flushes.
func (c *Conn) flushq() []flushWait {
	if c.ext == nil {
		return nil
	}
	return c.ext.flushq
}

type flushWait struct {
	target uint64
	p      *future.Promise[struct{}]
}

// interrupt closes the connection at once when the executor closes: what
// is pending fails with executor.ErrClosed.
func (c *Conn) interrupt() { c.interruptWith(executor.ErrClosed) }

func (c *Conn) check(op string) {
	if c == nil {
		panic("netio: " + op + " on nil *Conn")
	}
}

// mustLoop panics unless the caller holds c's loop.
func (c *Conn) mustLoop(op string) {
	if c == nil {
		panic("netio: " + op + " on nil *Conn")
	}
	if !c.r.lp.OnLoop() {
		panic("netio: Conn." + op + " called from a goroutine that does not hold the connection's loop; use Submit")
	}
}

// Executor returns the executor whose loop serves c.
func (c *Conn) Executor() *executor.Executor { c.check("Executor"); return c.exe() }

func (c *Conn) exe() *executor.Executor { return (*executor.Executor)(c.r.lp) }

// onLoop reports whether the caller holds c's loop.
func (c *Conn) onLoop() bool { return c.r.lp.OnLoop() }

// submit runs fn on c's loop (loop.Submit).
func (c *Conn) submit(fn func()) error { return c.r.lp.Submit(fn) }

// getBuf takes an output-sized buffer from c's loop's pool (a Reader's
// carry buffer); putBuf gives it back. Loop only.
func (c *Conn) getBuf() []byte { return c.r.getW() }

func (c *Conn) putBuf(b []byte) { c.r.putW(b) }

// ownBy records that set (a Server's connections on c's loop) serves c, at
// index i of its connections; ownBy(nil, -1) that none does. Loop only.
func (c *Conn) ownBy(set *connSet, i int) { c.owner, c.oidx = set, int32(i) }

// ownIndex is c's index in its owner's connections.
func (c *Conn) ownIndex() int { return int(c.oidx) }

// LocalAddr returns the local address of c.
func (c *Conn) LocalAddr() net.Addr {
	c.check("LocalAddr")
	if c.addrs {
		return c.ext.laddr
	}
	return c.r.be.addr(c, false)
}

// RemoteAddr returns the address of c's peer.
func (c *Conn) RemoteAddr() net.Addr {
	c.check("RemoteAddr")
	if c.addrs {
		return c.ext.raddr
	}
	return c.r.be.addr(c, true)
}

// String describes c for logs: its addresses.
func (c *Conn) String() string {
	return "netio.Conn(" + addrString(c.LocalAddr()) + "<->" + addrString(c.RemoteAddr()) + ")"
}

func addrString(a net.Addr) string {
	if a == nil {
		return "?"
	}
	return a.Network() + ":" + a.String()
}
