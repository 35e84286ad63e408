//go:build linux && !purego

package netio

// The Linux backend's listening sockets: bind, listen and accept on a
// non-blocking socket registered with the poller (poller_epoll.go).

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

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
	ring    *ringAccept // the accept on the ring (uring_conn_linux.go), once one was asked for
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
	if l.r.ring != nil {
		return l.ringAcceptNow()
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
		return l.accepted(fd, rsa)
	}
}

// accepted makes the connection of fd, accepted from rsa.
func (l *Listener) accepted(fd int, rsa unix.Sockaddr) (*Conn, error, bool) {
	s := &l.ls
	if s.family != unix.AF_UNIX {
		tcpOptions(fd)
	}
	var c *Conn
	var err error
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
	if s.ring != nil {
		l.ringCloseListener()
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
