//go:build linux

package netcase

// The Linux client: every connection of the child is a raw non-blocking
// socket, registered (level-triggered, for input) in one epoll instance and
// driven from one goroutine. A round trip is one write and, usually, one
// read; epoll_wait reports many ready connections at once.

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"syscall"
	"time"
)

type driverLinux struct {
	ep     int
	fds    []int
	want   []int // bytes still expected on each connection; 0: none
	events []syscall.EpollEvent
	buf    []byte
}

func newDriver() driver {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		panic("netcase: epoll_create1: " + err.Error())
	}
	return &driverLinux{ep: ep, events: make([]syscall.EpollEvent, 256), buf: make([]byte, 64<<10)}
}

func sockaddr(addr string) (int, syscall.Sockaddr, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0, nil, err
	}
	if ap.Addr().Is4() {
		return syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
	}
	return syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, nil
}

// connect opens one connection to sa (a blocking connect, then the socket
// turns non-blocking) and registers it.
func (d *driverLinux) connect(family int, sa syscall.Sockaddr) error {
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	for {
		err = syscall.Connect(fd, sa)
		if err != syscall.EINTR {
			break
		}
	}
	if err == nil {
		err = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	}
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err == nil {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(len(d.fds))}
		err = syscall.EpollCtl(d.ep, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
	if err != nil {
		syscall.Close(fd)
		return fmt.Errorf("connect: %w", err)
	}
	d.fds = append(d.fds, fd)
	d.want = append(d.want, 0)
	return nil
}

func (d *driverLinux) dial(addr string, n int) error {
	family, sa, err := sockaddr(addr)
	if err != nil {
		return err
	}
	first := len(d.fds)
	for range n {
		if err := d.connect(family, sa); err != nil {
			return err
		}
	}
	return d.rounds(first, n, 1)
}

func (d *driverLinux) run(rounds, depth int) error {
	_, err := d.roundsTimed(0, rounds, depth, false)
	return err
}

func (d *driverLinux) timed(rounds int) ([]time.Duration, error) {
	return d.roundsTimed(0, rounds, 1, true)
}

func (d *driverLinux) rounds(first, total, depth int) error {
	_, err := d.roundsTimed(first, total, depth, false)
	return err
}

// roundsTimed makes total round trips of depth requests over the
// connections from first on: one in flight on each at a time, the next
// round on a connection as soon as its replies are in. With timing it
// returns the time of each round trip.
func (d *driverLinux) roundsTimed(first, total, depth int, timing bool) ([]time.Duration, error) {
	req := pattern(depth)
	issued, done := 0, 0
	var lat []time.Duration
	var sent []time.Time // when each connection's round trip began
	if timing {
		lat = make([]time.Duration, 0, total)
		sent = make([]time.Time, len(d.fds))
	}
	send := func(i int) error {
		if timing {
			sent[i] = time.Now()
		}
		n, err := syscall.Write(d.fds[i], req)
		if err != nil || n != len(req) {
			return fmt.Errorf("write: %d of %d bytes: %v", n, len(req), err)
		}
		d.want[i] = len(req)
		issued++
		return nil
	}
	for i := first; i < len(d.fds) && issued < total; i++ {
		if err := send(i); err != nil {
			return nil, err
		}
	}
	for done < total {
		n, err := syscall.EpollWait(d.ep, d.events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range d.events[:n] {
			i := int(ev.Fd)
			want := d.want[i]
			if want == 0 {
				// Nothing is expected: the server wrote unasked or closed.
				m, err := syscall.Read(d.fds[i], d.buf)
				return nil, fmt.Errorf("connection %d: %d unexpected bytes (err %v)", i, m, err)
			}
			m, err := syscall.Read(d.fds[i], d.buf[:want])
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read: %w", err)
			}
			if m == 0 {
				return nil, errors.New("read: the server closed the connection")
			}
			off := len(req) - want
			if !bytes.Equal(d.buf[:m], req[off:off+m]) {
				return nil, fmt.Errorf("connection %d: reply bytes %d-%d differ from the request", i, off, off+m)
			}
			d.want[i] -= m
			if d.want[i] == 0 {
				done++
				if timing {
					lat = append(lat, time.Since(sent[i]))
				}
				if issued < total {
					if err := send(i); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return lat, nil
}

func (d *driverLinux) close() {
	for _, fd := range d.fds {
		syscall.Close(fd)
	}
	d.fds = nil
	syscall.Close(d.ep)
}

// probe opens a connection to addr and makes n round trips of one request
// on it, one at a time, on a blocking socket from a thread of its own, and
// returns the time of each.
func probe(addr string, n int) ([]time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	family, sa, err := sockaddr(addr)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	for {
		err = syscall.Connect(fd, sa)
		if err != syscall.EINTR {
			break
		}
	}
	if err == nil {
		err = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	}
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	req, buf := pattern(1), make([]byte, Size)
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if m, err := syscall.Write(fd, req); err != nil || m != len(req) {
			return nil, fmt.Errorf("write: %d of %d bytes: %v", m, len(req), err)
		}
		for got := 0; got < len(req); {
			m, err := syscall.Read(fd, buf[got:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read: %w", err)
			}
			if m == 0 {
				return nil, errors.New("read: the server closed the connection")
			}
			got += m
		}
		lat = append(lat, time.Since(t0))
		if !bytes.Equal(buf, req) {
			return nil, errors.New("the reply differs from the request")
		}
	}
	return lat, nil
}
