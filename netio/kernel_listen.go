//go:build linux && !purego

package netio

// The kernel's listening sockets (epoll and io_uring): bind and listen on
// a non-blocking socket, registered with the backend at the first accept;
// what an accept returned made a connection.

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// lsock is the backend's part of a listener (Listener.ls).
type lsock struct {
	local   inAddr // the listening address (TCP)
	local4  bool   // it is an IPv4 one
	anyIP   bool   // it is unspecified: each connection asks for its own
	fd      int
	family  int
	unixp   string // the socket file of a unix listener, removed by Close
	slot    int32
	network string
	rready  bool         // epoll: an accept may find a connection (epoll_conn.go)
	ur      *ringAccept  // io_uring: its accept, once one was asked for (uring_conn.go)
	sim     *simListener // the simulated backend's part (sim_backend.go)
}

// listenSock opens l's listening socket.
func listenSock(l *Listener, network, address string) (net.Addr, error) {
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
		if l.reusesPort() {
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
		l.ls.local, l.ls.local4 = inAddrOf(lsa)
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

// acceptReady prepares an accept on the loop (under l.mu): the
// listener is open and registered with kb; done with err when not.
func acceptReady(kb kernBackend, l *Listener) (err error, done bool) {
	s := &l.ls
	if l.closed {
		return net.ErrClosed, true
	}
	if s.slot < 0 {
		i, err := kb.register(s.fd, l)
		if err != nil {
			return err, true
		}
		s.slot = i
	}
	return nil, false
}

// accepted makes the connection of fd, accepted from rsa.
func accepted(l *Listener, fd int, rsa unix.Sockaddr) (*Conn, error, bool) {
	s := &l.ls
	if s.family != unix.AF_UNIX {
		tcpOptions(fd)
	}
	var c *Conn
	var err error
	if s.family == unix.AF_UNIX {
		c, err = newKernConn(l.r, fd, &l.cfg, l.addr, netAddr(s.network, rsa))
	} else {
		c, err = newKernConn(l.r, fd, &l.cfg, nil, nil)
		if c != nil {
			setAddrs(c, rsa, s.local, s.local4)
			if s.anyIP {
				// The listener's IP is unspecified: ask which one.
				if lsa, err := unix.Getsockname(fd); err == nil {
					la, l4 := inAddrOf(lsa)
					c.sk.la = la
					c.sk.kf = c.sk.kf&^kLocal4 | b2k(l4, kLocal4)
				}
			}
		}
	}
	if err != nil {
		return nil, nil, true // closed under it
	}
	return c, nil, true
}

// setAddrs keeps c's addresses inline: the peer's rsa, and local.
func setAddrs(c *Conn, rsa unix.Sockaddr, local inAddr, local4 bool) {
	var r4 bool
	c.sk.ra, r4 = inAddrOf(rsa)
	c.sk.la = local
	c.sk.kf |= b2k(r4, kRemote4) | b2k(local4, kLocal4)
}

// b2k is bit when on is true, else 0.
func b2k(on bool, bit uint8) uint8 {
	if on {
		return bit
	}
	return 0
}

// forget frees the listener's slot once it is closed. Loop only.
func forget(kb kernBackend, l *Listener) {
	l.mu.Lock()
	if l.closed && l.ls.slot >= 0 && l.r != nil {
		kb.unregister(l.ls.slot)
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

// closeListener closes the listening socket. Called under l.mu.
func closeListener(kb kernBackend, l *Listener) error {
	s := &l.ls
	if s.slot >= 0 && l.r != nil {
		// The slot is loop-owned; a Close from elsewhere leaves it to
		// the loop, which sees the listener closed and frees it.
		if l.lp.OnLoop() {
			kb.unregister(s.slot)
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
