//go:build linux && !purego

package netio

// The kernel's sockets on Linux, shared by the epoll and io_uring
// backends: a connection's part (sock), the table of registered sockets,
// the dials in progress, and the socket calls both make the same way.
//
// Invariants (loop-owned):
//   - a registered socket has a slot, named by index and generation; a
//     slot's generation changes whenever it is freed, so an event or a
//     completion read for a socket closed since (its slot perhaps taken
//     again) is dropped;
//   - out[woff:] is a connection's output not yet taken; out is nil while
//     nothing is buffered; woff stays below 1<<31: a write hands at most
//     maxWrite bytes, and out is compacted once woff passes half of it or
//     maxWrite (taken);
//   - a connection being dialled has kDial set and its dial in dials; it
//     is not yet seen by its user: the end of its connect (SO_ERROR)
//     resolves or fails the Dial's promise, and a close fails it.

import (
	"context"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// sock is the backend's part of a connection (Conn.sk): the kernel's
// socket with epoll's or io_uring's fields, or a simulated socket (sim).
type sock struct {
	fd     int32
	slot   int32
	woff   int32     // out[woff:] is not yet taken
	ur     uringSock // io_uring's part (uring_conn.go)
	la, ra inAddr    // TCP addresses, kept inline: LocalAddr and RemoteAddr build them
	kf     uint8     // kLocal4, kRemote4, kDial
	ep     epollSock // epoll's part (epoll_conn.go)
	sim    *simConn  // the simulated backend's part (sim_backend.go)
}

// Bits of sock.kf.
const (
	kLocal4  = 1 << iota // la is an IPv4 address
	kRemote4             // ra is
	kDial                // a connect is in progress (kernel.dials)
)

// maxWrite bounds what one write or send hands the kernel.
const maxWrite = 1 << 30

// kernBackend is a backend over the kernel's sockets: epoll or io_uring.
type kernBackend interface {
	backend
	kern() *kernel
	// newSock sets the backend's fields of a new connection's sock.
	newSock(s *sock)
	// register gives fd a slot, serving h (a *Conn, a *Listener, or a
	// test's handler), and starts watching it.
	register(fd int, h any) (int32, error)
	// unregister frees slot i (now, or once its operations completed).
	unregister(i int32)
	// armDial watches the end of c's connect.
	armDial(c *Conn)
}

// kernel is the per-loop state epoll and io_uring share.
type kernel struct {
	slots []slot
	free  []int32
	dials map[*Conn]*dialState
}

type slot struct {
	gen uint32
	fd  int32 // the socket
	h   any   // *Conn, *Listener, or a test's handler; nil once unregistered
}

// dialState is a connect in progress.
type dialState struct {
	p    *future.Promise[*Conn] // the Dial this connection ends
	stop func() bool            // stops watching the Dial's ctx
}

func (k *kernel) kern() *kernel { return k }

// take gives fd a slot for h.
func (k *kernel) take(fd int, h any) int32 {
	var i int32
	if n := len(k.free); n > 0 {
		i = k.free[n-1]
		k.free = k.free[:n-1]
	} else {
		k.slots = append(k.slots, slot{})
		i = int32(len(k.slots) - 1)
	}
	k.slots[i].h = h
	k.slots[i].fd = int32(fd)
	return i
}

// release frees slot i for a new socket; when every socket is gone after
// a burst the table is given back (and release reports so).
func (k *kernel) release(i int32) (gone bool) {
	k.slots[i].h = nil
	k.slots[i].gen++
	k.free = append(k.free, i)
	if len(k.free) == len(k.slots) && cap(k.slots) > 1024 {
		k.slots, k.free = nil, nil
		return true
	}
	return false
}

// conns returns the connections in the table.
func (k *kernel) conns(*reactor) []*Conn {
	var cs []*Conn
	for _, s := range k.slots {
		if c, ok := s.h.(*Conn); ok {
			cs = append(cs, c)
		}
	}
	return cs
}

// newKernConn attaches the connected (or connecting) socket fd to r.
// Loop only. On failure fd is closed.
func newKernConn(r *reactor, fd int, cfg *listenConfig, laddr, raddr net.Addr) (*Conn, error) {
	kb := r.be.(kernBackend)
	c := newConnOf(laddr, raddr)
	c.sk = sock{fd: int32(fd), slot: -1}
	kb.newSock(&c.sk)
	if !c.attach(r, cfg) {
		unix.Close(fd)
		return nil, executor.ErrClosed
	}
	i, err := kb.register(fd, c)
	if err != nil {
		c.abort(err)
		return nil, err
	}
	c.sk.slot = i
	return c, nil
}

// pending is the output a write hands the kernel: out[woff:], at most
// maxWrite bytes.
func (s *sock) pending(out []byte) []byte {
	return out[s.woff:min(len(out), int(s.woff)+maxWrite)]
}

// taken records that the kernel took n bytes of c's output: the output
// leaves (its buffer goes back to the pool once it has all gone, or is
// compacted), and c hears of it. It reports whether output is left.
func (s *sock) taken(c *Conn, n int) (left bool) {
	s.woff += int32(n)
	if int(s.woff) == len(c.out) {
		c.r.putW(c.out)
		c.out, s.woff = nil, 0
	} else if int(s.woff) >= len(c.out)/2 || s.woff >= maxWrite {
		k := copy(c.out, c.out[s.woff:])
		c.out, s.woff = c.out[:k], 0
	}
	c.took(n)
	return c.out != nil
}

// dropOut gives c's output buffer back (keep: an operation in flight
// still reads it, so it is left to the garbage collector).
func (s *sock) dropOut(c *Conn, keep bool) {
	if c.out != nil {
		if !keep {
			c.r.putW(c.out)
		}
		c.out, s.woff = nil, 0
	}
}

// sysOpError is the error of a failed call on c's socket.
func sysOpError(c *Conn, op string, err error) error {
	la, ra := c.LocalAddr(), c.RemoteAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: ra, Err: os.NewSyscallError(op, err)}
}

// shutWrite shuts the write side of the socket.
func (k *kernel) shutWrite(c *Conn) error {
	if err := unix.Shutdown(int(c.sk.fd), unix.SHUT_WR); err != nil && err != unix.ENOTCONN {
		return sysOpError(c, "shutdown", err)
	}
	return nil
}

// peerEnd looks at a socket whose peer has shut its side (or reset) while
// nobody receives from it: if nothing it sent is left unread, the
// connection has ended (see leave). A peek, so no byte is taken from a
// receive to come.
func peerEnd(c *Conn) {
	var b [1]byte
	for {
		n, _, err := unix.Recvfrom(int(c.sk.fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil:
			c.leave(sysOpError(c, "read", err))
		case n == 0:
			c.leave(io.EOF)
		}
		return
	}
}

// mayReset reports whether closing the socket now could make the kernel
// reset the connection and lose output: input has arrived that was not
// read, or output the kernel took has not been acknowledged by the peer.
func (k *kernel) mayReset(c *Conn) bool {
	fd := int(c.sk.fd)
	in, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil || in > 0 {
		return true
	}
	out, err := unix.IoctlGetInt(fd, unix.TIOCOUTQ)
	return err != nil || out > 0
}

// unacked returns how many bytes of output the kernel took that the peer
// has not acknowledged yet (for a Unix socket, not read yet): the
// socket's TIOCOUTQ (SIOCOUTQ).
func (k *kernel) unacked(c *Conn) int {
	if c.sk.fd < 0 {
		return 0
	}
	out, err := unix.IoctlGetInt(int(c.sk.fd), unix.TIOCOUTQ)
	if err != nil {
		return 0
	}
	return out
}

// reset sets SO_LINGER to 0, so that closing the socket resets the
// connection and drops the output the kernel holds.
func (k *kernel) reset(c *Conn) {
	if c.sk.fd >= 0 {
		_ = unix.SetsockoptLinger(int(c.sk.fd), unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	}
}

// addr builds the local or remote address kept inline.
func (k *kernel) addr(c *Conn, remote bool) net.Addr {
	s := &c.sk
	if remote {
		return s.ra.tcp(s.kf&kRemote4 != 0)
	}
	return s.la.tcp(s.kf&kLocal4 != 0)
}

// endSock ends the dial of c, being closed, if one is in progress: the
// Dial fails with c's error.
func (k *kernel) endSock(c *Conn) {
	if c.sk.kf&kDial == 0 {
		return
	}
	c.sk.kf &^= kDial
	d := k.dials[c]
	delete(k.dials, c)
	if d.stop != nil {
		d.stop()
	}
	d.p.Reject(c.werr)
}

// dial connects to address on lp's loop (kernel_dial.go).
func (k *kernel) dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	dial(ctx, lp, network, address, p)
}

// listen opens l's listening socket (kernel_listen.go).
func (k *kernel) listen(l *Listener, network, address string) (net.Addr, error) {
	return listenSock(l, network, address)
}

// newHostBackend returns a backend of this build: epoll or io_uring.
func newHostBackend(b Backend) backend {
	if b == BackendURing {
		return &uringBackend{}
	}
	return &epollBackend{}
}

// hostProtos serve Listen and Dial (hostProto).
var hostProtos = [...]backend{&epollBackend{}, &uringBackend{}}

// hostProto returns a backend of kind b that keeps no loop's state.
func hostProto(b Backend) backend {
	if b == BackendURing {
		return hostProtos[1]
	}
	return hostProtos[0]
}

// hostDefault is the backend of a host loop nobody chose one for.
const hostDefault = BackendEpoll

// hostHas reports whether this build has backend b for host loops.
func hostHas(b Backend) bool { return b == BackendEpoll || b == BackendURing }
