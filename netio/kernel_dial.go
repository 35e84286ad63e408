//go:build linux && !purego

package netio

// The kernel's dialling (epoll and io_uring): a non-blocking connect
// whose end the backend watches (armDial: epoll's EPOLLOUT edge, the
// ring's one-shot poll); connected reads SO_ERROR. A connection being
// dialled is not seen by its user until then (kernel_sock.go).

import (
	"context"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
)

// dial connects without blocking: connect returns EINPROGRESS and the
// backend hears when it ends (SO_ERROR). A host name is resolved off
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
	c, cerr := newKernConn(r, fd, &cfg, nil, netAddr(network, sa))
	if cerr != nil {
		p.Reject(cerr)
		return
	}
	if network == "unix" {
		c.ext.laddr = &net.UnixAddr{Net: "unix"}
	}
	watchDial(ctx, r, c, p, inProgress)
}

// watchDial makes c the connection being dialled for p: it ends now when
// the connect did, else when the backend hears of its end, ctx ends or
// c closes.
func watchDial(ctx context.Context, r *reactor, c *Conn, p *future.Promise[*Conn], inProgress bool) {
	kb := r.be.(kernBackend)
	k := kb.kern()
	if k.dials == nil {
		k.dials = make(map[*Conn]*dialState)
	}
	d := &dialState{p: p}
	k.dials[c] = d
	c.sk.kf |= kDial
	if !inProgress {
		k.connected(c)
		return
	}
	kb.armDial(c)
	if ctx.Done() != nil {
		d.stop = context.AfterFunc(ctx, func() {
			toLoop(r.lp, func() {
				if k.dials[c] == d {
					c.abort(ctx.Err())
				}
			}, func() {})
		})
	}
}

// connected ends a connect: SO_ERROR says how it went.
func (k *kernel) connected(c *Conn) {
	s := &c.sk
	serr, err := unix.GetsockoptInt(int(s.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && serr != 0 {
		err = unix.Errno(serr)
	}
	if err != nil {
		ra := c.ext.raddr
		c.abort(&net.OpError{Op: "dial", Net: ra.Network(), Addr: ra, Err: os.NewSyscallError("connect", err)})
		return
	}
	d := k.dials[c]
	delete(k.dials, c)
	s.kf &^= kDial
	if d.stop != nil {
		d.stop()
	}
	if x := c.ext; x.laddr == nil {
		lsa, _ := unix.Getsockname(int(s.fd))
		x.laddr = netAddr(x.raddr.Network(), lsa)
	}
	if !d.p.Resolve(c) {
		c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
	}
}
