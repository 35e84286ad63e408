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
//     dialP;
//   - Wake writes the eventfd under mu and shut closes the fds under mu,
//     so a late Wake (Close from another goroutine after the loop closed)

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
	ring   *uring              // the io_uring that serves the loop instead (uring_linux.go), or nil
	rs     []ringSlot          // on the ring: what each slot has in flight (uring_conn_linux.go)
	dying  map[uint64]struct{} // on the ring: test handlers' polls removed whose last completion is not yet seen
}

type slot struct {
	gen uint32
	fd  int32 // the socket, to arm its poll again on the ring
	h   handler
}

// handler is a socket the reactor dispatches events to.
type handler interface {
	event(ev uint32)
}

func (r *reactor) initPoller() error {
	p := &r.poller
	if wantUring() {
		err := p.initUring()
		if err == nil {
			return nil
		}
		uringRefused(err) // epoll serves the loop
	}
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
	return nil
}

// backendName names what serves the loop: its io_uring, or epoll.
func (r *reactor) backendName() string {
	if r.poller.ring != nil {
		return "io_uring"
	}
	return "epoll"
}

// loopIO is what the loop waits in: epoll_wait.
func (r *reactor) loopIO() loop.IO { return r }

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
		if p.ring != nil {
			p.ringShut()
			p.ring.close()
		} else {
			unix.Close(p.epfd)
		}
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
	if p.ring != nil {
		p.waitUring(timeout)
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
	if p.ring != nil {
		p.dispatchUring()
		return
	}
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
	p.slots[i].fd = int32(fd)
	if p.ring != nil {
		p.ringRegister(i, fd, h)
		return i, nil
	}
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
	if p.ring != nil {
		p.ringUnregister(i)
		return
	}
	p.freeSlot(i)
}
