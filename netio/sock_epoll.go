//go:build linux && !purego

package netio

// The Linux backend: the loop itself waits in epoll_wait.
//
// The reactor is the loop's IO (internal/loop/io.go): when the loop has
// nothing to run it sleeps in epoll_wait, whose timeout is the next timer
// and which an eventfd wakes for Submit (the loop writes it only while it
// sleeps). Sockets are non-blocking and registered edge-triggered for
// input and output once, when they are attached; a connection costs no
// goroutine.
//
// Invariants (all loop-owned except mu/closed/efd, see Wake):
//   - an epoll event names its socket by slot index and generation (the
//     event's Fd and Pad words); a slot's generation changes whenever it is
//     freed, so an event read before its socket was closed, for a slot
//     taken meanwhile, is recognised as stale and dropped. The table is
//     given back when a burst of sockets has all closed; an event for a
//     slot past its end is stale too (at worst an event reaches a socket
//     that reused the slot, which costs it one read that finds nothing);
//   - rready is false only after a read found the socket empty (EAGAIN, or
//     a read shorter than the buffer while no end was signalled: a FIN or
//     reset that came with the bytes raises no further edge); every byte
//     that arrives later raises an edge that sets it again, so a receive
//     that finds rready false may skip the read system call, and gives its
//     buffer back;
//   - wready is false only after a write could not take everything; the
//     next EPOLLOUT edge sets it and hands the rest to the kernel;
//   - out[woff:] is the output not yet taken; out is nil while nothing is
//     buffered, so an idle connection holds no buffer;
//   - a connection being dialled (dialP set) is not yet seen by its user:
//     its EPOLLOUT edge ends the connect (SO_ERROR), resolving or failing
//     dialP;
//   - Wake writes the eventfd under mu and shut closes the fds under mu,
//     so a late Wake (Close from another goroutine after the loop closed)
//     never writes to a descriptor that was closed and reused.

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

const maxEvents = 256

const efdSlot = -1 // the event of the eventfd

// poller is the reactor's epoll state.
type poller struct {
	epfd   int
	efd    int
	mu     sync.Mutex
	closed bool
	one    [8]byte // 1, little-endian: what Wake writes
	buf8   [8]byte // what the eventfd's reads land in
	events []unix.EpollEvent
	nready int
	slots  []slot
	free   []int32
}

type slot struct {
	gen uint32
	h   handler
}

// handler is a socket the reactor dispatches events to.
type handler interface {
	event(ev uint32)
}

func (r *reactor) initPoller() error {
	p := &r.poller
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: efdSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(efd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	p.epfd, p.efd = epfd, efd
	p.one[0] = 1
	p.events = make([]unix.EpollEvent, maxEvents)
	r.lp.SetIO(r)
	return nil
}

// allConns returns the connections in the socket table.
func (r *reactor) allConns() []*Conn {
	var cs []*Conn
	for _, s := range r.poller.slots {
		if c, ok := s.h.(*Conn); ok {
			cs = append(cs, c)
		}
	}
	return cs
}

// shutPoller closes the epoll and event descriptors.
func (r *reactor) shutPoller() { r.poller.shut() }

func (p *poller) shut() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		unix.Close(p.epfd)
		unix.Close(p.efd)
	}
	p.mu.Unlock()
}

// Wake makes the loop's epoll_wait return. Any goroutine.
func (r *reactor) Wake() {
	p := &r.poller
	p.mu.Lock()
	if !p.closed {
		unix.Write(p.efd, p.one[:])
	}
	p.mu.Unlock()
}

// Wait waits in epoll_wait for at most timeout (negative: no bound).
func (r *reactor) Wait(timeout time.Duration) {
	p := &r.poller
	if p.closed {
		return
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	n, err := unix.EpollWait(p.epfd, p.events, ms)
	if err != nil {
		n = 0 // EINTR
	}
	p.nready = n
}

// Dispatch hands each ready socket its event.
func (r *reactor) Dispatch() {
	p := &r.poller
	n := p.nready
	p.nready = 0
	for i := 0; i < n; i++ {
		ev := p.events[i]
		if ev.Fd == efdSlot {
			unix.Read(p.efd, p.buf8[:])
			continue
		}
		if int(ev.Fd) >= len(p.slots) {
			continue // the table was given back after its sockets closed
		}
		s := &p.slots[ev.Fd]
		if s.gen != uint32(ev.Pad) || s.h == nil {
			continue // stale: the socket closed since the wait
		}
		s.h.event(ev.Events)
	}
}

// register adds fd to the epoll set, edge-triggered, for h.
func (r *reactor) register(fd int, h handler) (int32, error) {
	p := &r.poller
	var i int32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		p.slots = append(p.slots, slot{})
		i = int32(len(p.slots) - 1)
	}
	p.slots[i].h = h
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET,
		Fd:     i,
		Pad:    int32(p.slots[i].gen),
	}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		r.unregister(i)
		return 0, os.NewSyscallError("epoll_ctl", err)
	}
	return i, nil
}

// unregister frees slot i (the descriptor is closed by its owner, which
// takes it out of the epoll set).
func (r *reactor) unregister(i int32) {
	p := &r.poller
	p.slots[i].h = nil
	p.slots[i].gen++
	p.free = append(p.free, i)
	if len(p.free) == len(p.slots) && cap(p.slots) > 1024 {
		p.slots, p.free = nil, nil // every socket gone after a burst: give the table back
	}
}

// sock is the backend's part of a connection.
type sock struct {
	woff   int
	fd     int32
	slot   int32
	la, ra inAddr // TCP addresses, kept inline: LocalAddr and RemoteAddr build them
	rready bool
	hup    bool // the peer's FIN, a reset or an error was signalled: reads go on until they say so
	wready bool
}

// inAddr is a TCP address kept inline (no allocation per connection).
type inAddr struct {
	ip   [16]byte
	port uint16
	v4   bool
}

func inAddrOf(sa unix.Sockaddr) inAddr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ia := inAddr{port: uint16(a.Port), v4: true}
		copy(ia.ip[:], a.Addr[:])
		return ia
	case *unix.SockaddrInet6:
		return inAddr{ip: a.Addr, port: uint16(a.Port)}
	}
	return inAddr{}
}

// addr builds the local or remote address kept inline.
func (s *sock) addr(remote bool) net.Addr {
	a := &s.la
	if remote {
		a = &s.ra
	}
	if a.v4 {
		return &net.TCPAddr{IP: net.IPv4(a.ip[0], a.ip[1], a.ip[2], a.ip[3]).To4(), Port: int(a.port)}
	}
	ip := make(net.IP, net.IPv6len)
	copy(ip, a.ip[:])
	return &net.TCPAddr{IP: ip, Port: int(a.port)}
}

// dialExt is the state of a connection being dialled.
type dialExt struct {
	dialP *future.Promise[*Conn] // the Dial this connection ends
	stop  func() bool            // stops watching the Dial's ctx
}

// dialP is the Dial this connection ends, if it is being dialled.
func (c *Conn) dialP() *future.Promise[*Conn] {
	if c.ext == nil {
		return nil
	}
	return c.ext.dialP
}

// newConn attaches the connected (or connecting) socket fd to r. Loop only.
// On failure fd is closed.
func newConn(r *reactor, fd int, cfg *listenConfig, laddr, raddr net.Addr) (*Conn, error) {
	c := newConnOf(laddr, raddr)
	c.sk = sock{fd: int32(fd), rready: true, wready: true, slot: -1}
	if !c.attach(r, cfg) {
		unix.Close(fd)
		return nil, executor.ErrClosed
	}
	i, err := r.register(fd, c)
	if err != nil {
		c.abort(err)
		return nil, err
	}
	c.sk.slot = i
	return c, nil
}

// event handles the socket's readiness.
func (c *Conn) event(ev uint32) {
	s := &c.sk
	if c.dialP() != nil {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			c.connected()
		}
		return
	}
	if ev&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.hup = true
	}
	if ev&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.rready = true
		c.readable()
	}
	if ev&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 && !c.released {
		s.wready = true
		if c.out != nil && !c.dirty {
			c.flushOut()
		}
	}
}

// readNow reads what the socket has into c's buffer.
func (c *Conn) readNow() (int, error, bool) {
	s := &c.sk
	if c.released {
		return 0, net.ErrClosed, true
	}
	if !s.rready {
		if c.rbuf != nil {
			c.r.putR(c.rbuf)
			c.rbuf = nil
		}
		return 0, nil, false
	}
	if c.rbuf == nil {
		c.rbuf = c.r.getR()
	}
	for {
		n, err := unix.Read(int(s.fd), c.rbuf)
		switch {
		case err == nil:
			if n == 0 {
				c.r.putR(c.rbuf)
				c.rbuf = nil
				return 0, nil, true // EOF
			}
			if n < len(c.rbuf) && !s.hup {
				// Drained: the next arrival raises an edge. Not so for an
				// end already signalled, which the next read returns.
				s.rready = false
			}
			return n, nil, true
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.rready = false
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, nil, false
		default:
			c.r.putR(c.rbuf)
			c.rbuf = nil
			return 0, c.opError("read", err), true
		}
	}
}

func (c *Conn) opError(op string, err error) error {
	la, ra := c.LocalAddr(), c.RemoteAddr()
	return &net.OpError{Op: op, Net: la.Network(), Source: la, Addr: ra, Err: os.NewSyscallError(op, err)}
}

// flushOut hands the output to the kernel: one write for everything
// buffered, and the rest at the next EPOLLOUT edge.
func (c *Conn) flushOut() {
	s := &c.sk
	if !s.wready || c.out == nil || c.dialP() != nil {
		return
	}
	for {
		n, err := unix.Write(int(s.fd), c.out[s.woff:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.wready = false
			return
		case err != nil:
			c.abort(c.opError("write", err))
			return
		}
		s.woff += n
		if s.woff == len(c.out) {
			c.r.putW(c.out)
			c.out, s.woff = nil, 0
		} else {
			s.wready = false // the socket's buffer is full: wait for the edge
			if s.woff >= len(c.out)/2 {
				k := copy(c.out, c.out[s.woff:])
				c.out, s.woff = c.out[:k], 0
			}
		}
		c.took(n)
		return
	}
}

// lastWrite sends what the socket takes at once of the buffered output,
// before the executor's close drops the rest.
func (c *Conn) lastWrite() {
	if !c.released && c.out != nil && c.dialP() == nil {
		unix.Write(int(c.sk.fd), c.out[c.sk.woff:])
	}
}

// shutWrite shuts the write side of the socket.
func (c *Conn) shutWrite() error {
	if err := unix.Shutdown(int(c.sk.fd), unix.SHUT_WR); err != nil && err != unix.ENOTCONN {
		return c.opError("shutdown", err)
	}
	return nil
}

// closeSock closes the socket and frees its slot.
func (c *Conn) closeSock() {
	s := &c.sk
	if s.slot >= 0 {
		c.r.unregister(s.slot)
		s.slot = -1
	}
	unix.Close(int(s.fd))
	s.fd = -1
	if c.out != nil {
		c.r.putW(c.out)
		c.out, s.woff = nil, 0
	}
	if x := c.ext; x != nil {
		if p := x.dialP; p != nil {
			x.dialP = nil
			p.Reject(c.werr)
		}
		if x.stop != nil {
			x.stop()
			x.stop = nil
		}
	}
}

// lsock is the backend's part of a listener.
type lsock struct {
	local   inAddr // the listening address (TCP)
	anyIP   bool   // it is unspecified: each connection asks for its own
	fd      int
	family  int
	unixp   string // the socket file of a unix listener, removed by Close
	slot    int32
	rready  bool
	network string
}

// listenSock opens the listening socket.
func (l *Listener) listenSock(network, address string) (net.Addr, error) {
	sa, family, err := sockaddrOf("listen", network, address, true)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, opErr("listen", network, address, "socket", err)
	}
	fail := func(call string, err error) (net.Addr, error) {
		unix.Close(fd)
		return nil, opErr("listen", network, address, call, err)
	}
	if family != unix.AF_UNIX {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("setsockopt", err)
		}
		if l.cfg.reusePort {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
				return fail("setsockopt", err)
			}
		}
		if family == unix.AF_INET6 {
			v6only := 0
			if network == "tcp6" {
				v6only = 1
			}
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
				return fail("setsockopt", err)
			}
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, backlog()); err != nil {
		return fail("listen", err)
	}
	lsa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	l.ls = lsock{fd: fd, family: family, slot: -1, rready: true, network: network}
	if family == unix.AF_UNIX {
		l.ls.unixp = address
	} else {
		l.ls.local = inAddrOf(lsa)
		l.ls.anyIP = l.ls.local.ip == [16]byte{}
	}
	return netAddr(network, lsa), nil
}

var somaxconn = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	return unix.SOMAXCONN
})

func backlog() int { return somaxconn() }

// event handles the listening socket's readiness.
func (l *Listener) event(uint32) {
	l.ls.rready = true
	l.acceptable()
}

// acceptNow accepts one connection, registering the listening socket on
// its first call.
func (l *Listener) acceptNow() (*Conn, error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.ls
	if l.closed {
		return nil, net.ErrClosed, true
	}
	if s.slot < 0 {
		i, err := l.r.register(s.fd, l)
		if err != nil {
			return nil, err, true
		}
		s.slot = i
	}
	if !s.rready {
		return nil, nil, false
	}
	for {
		fd, rsa, err := unix.Accept4(s.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue
		case err == unix.EAGAIN:
			s.rready = false
			return nil, nil, false
		case err != nil:
			return nil, os.NewSyscallError("accept4", err), true
		}
		if s.family != unix.AF_UNIX {
			tcpOptions(fd)
		}
		var c *Conn
		if s.family == unix.AF_UNIX {
			c, err = newConn(l.r, fd, &l.cfg, l.addr, netAddr(s.network, rsa))
		} else {
			c, err = newConn(l.r, fd, &l.cfg, nil, nil)
			if c != nil {
				c.sk.ra = inAddrOf(rsa)
				c.sk.la = s.local
				if s.anyIP {
					// The listener's IP is unspecified: ask which one.
					if lsa, err := unix.Getsockname(fd); err == nil {
						c.sk.la = inAddrOf(lsa)
					}
				}
			}
		}
		if err != nil {
			return nil, nil, true // closed under it
		}
		return c, nil, true
	}
}

// forget frees the listener's slot once it is closed. Loop only.
func (l *Listener) forget() {
	l.mu.Lock()
	if l.closed && l.ls.slot >= 0 && l.r != nil {
		l.r.unregister(l.ls.slot)
		l.ls.slot = -1
	}
	l.mu.Unlock()
}

// keepAlive is the TCP keep-alive idle time and probe interval, as package
// net sets them: a peer that vanished without a FIN or a reset (a
// half-open connection) is found out and its connection fails with
// ETIMEDOUT instead of holding its socket for ever.
const keepAlive = 15

// tcpOptions sets what package net sets on a TCP connection: no Nagle
// delay, and keep-alive probes.
func tcpOptions(fd int) {
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, keepAlive)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, keepAlive)
}

// closeSock closes the listening socket. Called under l.mu.
func (l *Listener) closeSock() error {
	s := &l.ls
	if s.slot >= 0 && l.r != nil {
		// The slot is loop-owned; a Close from elsewhere leaves it to
		// the loop, which sees the listener closed and frees it.
		if l.lp.OnLoop() {
			l.r.unregister(s.slot)
			s.slot = -1
		}
	}
	err := unix.Close(s.fd)
	if s.unixp != "" {
		os.Remove(s.unixp)
	}
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// sockaddrOf resolves address for network.
func sockaddrOf(op, network, address string, listen bool) (unix.Sockaddr, int, error) {
	if network == "unix" {
		return &unix.SockaddrUnix{Name: address}, unix.AF_UNIX, nil
	}
	ta, err := net.ResolveTCPAddr(network, address)
	if err != nil {
		return nil, 0, &net.OpError{Op: op, Net: network, Err: err}
	}
	ip := ta.IP
	switch {
	case network == "tcp4" || (ip != nil && ip.To4() != nil && network != "tcp6"):
		sa := &unix.SockaddrInet4{Port: ta.Port}
		if ip != nil {
			if ip.To4() == nil {
				return nil, 0, &net.OpError{Op: op, Net: network, Err: &net.AddrError{Err: "not an IPv4 address", Addr: address}}
			}
			copy(sa.Addr[:], ip.To4())
		}
		return sa, unix.AF_INET, nil
	case ip == nil && network == "tcp" && !listen:
		sa := &unix.SockaddrInet4{Port: ta.Port} // dial ":port": the local system
		copy(sa.Addr[:], net.IPv4(127, 0, 0, 1).To4())
		return sa, unix.AF_INET, nil
	case ip == nil && network == "tcp" && !ipv6ok():
		return &unix.SockaddrInet4{Port: ta.Port}, unix.AF_INET, nil
	default:
		sa := &unix.SockaddrInet6{Port: ta.Port}
		if ip != nil {
			copy(sa.Addr[:], ip.To16())
		}
		if ta.Zone != "" {
			if ifi, err := net.InterfaceByName(ta.Zone); err == nil {
				sa.ZoneId = uint32(ifi.Index)
			}
		}
		return sa, unix.AF_INET6, nil
	}
}

// ipv6ok reports whether the system can open IPv6 sockets.
var ipv6ok = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

func opErr(op, network, address, call string, err error) error {
	return &net.OpError{Op: op, Net: network, Addr: strAddr{network, address}, Err: os.NewSyscallError(call, err)}
}

type strAddr struct{ net, s string }

func (a strAddr) Network() string { return a.net }
func (a strAddr) String() string  { return a.s }

// netAddr converts a socket address.
func netAddr(network string, sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3]).To4(), Port: a.Port}
	case *unix.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, a.Addr[:])
		zone := ""
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		return &net.TCPAddr{IP: ip, Port: a.Port, Zone: zone}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: a.Name, Net: "unix"}
	}
	if network == "unix" {
		return &net.UnixAddr{Net: "unix"}
	}
	return &net.TCPAddr{}
}

// dial connects without blocking: connect returns EINPROGRESS and the
// socket's EPOLLOUT edge ends it (SO_ERROR). A host name is resolved off
// the loop first.
func dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	ex := (*executor.Executor)(lp)
	if network != "unix" {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			p.Reject(&net.OpError{Op: "dial", Net: network, Err: err})
			return
		}
		if host != "" && net.ParseIP(strings.SplitN(host, "%", 2)[0]) == nil {
			// A name: resolve it off the loop, then connect on it.
			ips := future.Go(ex, func(ctx context.Context) ([]net.IPAddr, error) {
				return net.DefaultResolver.LookupIPAddr(ctx, host)
			})
			ips.OnComplete(func(addrs []net.IPAddr, err error) {
				if err != nil {
					p.Reject(&net.OpError{Op: "dial", Net: network, Err: err})
					return
				}
				a := pickAddr(network, addrs)
				if a == nil {
					p.Reject(&net.OpError{Op: "dial", Net: network, Err: &net.AddrError{Err: "no suitable address", Addr: host}})
					return
				}
				connect(ctx, lp, network, net.JoinHostPort(a.String(), port), p)
			})
			return
		}
	}
	if lp.OnLoop() {
		connect(ctx, lp, network, address, p)
		return
	}
	toLoop(lp, func() { connect(ctx, lp, network, address, p) }, func() { p.Reject(executor.ErrClosed) })
}

func pickAddr(network string, addrs []net.IPAddr) net.IP {
	for _, a := range addrs {
		if network != "tcp6" && a.IP.To4() != nil {
			return a.IP
		}
	}
	for _, a := range addrs {
		if network != "tcp4" && a.IP.To4() == nil {
			return a.IP
		}
	}
	return nil
}

// connect starts a non-blocking connect on the loop.
func connect(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn]) {
	if err := ctx.Err(); err != nil {
		p.Reject(err)
		return
	}
	r, err := reactorOf(lp)
	if err != nil {
		p.Reject(err)
		return
	}
	sa, family, err := sockaddrOf("dial", network, address, false)
	if err != nil {
		p.Reject(err)
		return
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		p.Reject(opErr("dial", network, address, "socket", err))
		return
	}
	if family != unix.AF_UNIX {
		tcpOptions(fd)
	}
	err = unix.Connect(fd, sa)
	for err == unix.EINTR {
		err = unix.Connect(fd, sa)
	}
	inProgress := err == unix.EINPROGRESS || err == unix.EAGAIN
	if err != nil && !inProgress {
		unix.Close(fd)
		p.Reject(opErr("dial", network, address, "connect", err))
		return
	}
	cfg := defaultListenConfig()
	c, cerr := newConn(r, fd, &cfg, nil, netAddr(network, sa))
	if cerr != nil {
		p.Reject(cerr)
		return
	}
	if network == "unix" {
		c.ext.laddr = &net.UnixAddr{Net: "unix"}
	}
	c.x().dialP = p
	if !inProgress {
		c.connected()
		return
	}
	if ctx.Done() != nil {
		c.ext.stop = context.AfterFunc(ctx, func() {
			toLoop(lp, func() {
				if c.dialP() == p {
					c.abort(ctx.Err())
				}
			}, func() {})
		})
	}
}

// connected ends a connect: SO_ERROR says how it went.
func (c *Conn) connected() {
	s := &c.sk
	x := c.ext
	p := x.dialP
	serr, err := unix.GetsockoptInt(int(s.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && serr != 0 {
		err = unix.Errno(serr)
	}
	if err != nil {
		ra := c.ext.raddr
		c.abort(&net.OpError{Op: "dial", Net: ra.Network(), Addr: ra, Err: os.NewSyscallError("connect", err)})
		return
	}
	x.dialP = nil
	if x.stop != nil {
		x.stop()
		x.stop = nil
	}
	if x.laddr == nil {
		lsa, _ := unix.Getsockname(int(s.fd))
		x.laddr = netAddr(x.raddr.Network(), lsa)
	}
	s.wready = true
	if !p.Resolve(c) {
		c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
	}
}
