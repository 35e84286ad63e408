//go:build linux && !purego

package netio

// The epoll backend: the loop itself waits in epoll_wait.
//
// The backend is the loop's IO (internal/loop/io.go): when the loop has
// nothing to run it sleeps in epoll_wait, whose timeout is the next timer
// and which an eventfd wakes for Submit (the loop writes it only while it
// sleeps). Sockets are non-blocking and registered edge-triggered for
// input and output once, when they are attached; a connection costs no
// goroutine.
//
// Invariants (all loop-owned except mu/closed/efd, see Wake):
//   - an epoll event names its socket by slot index and generation (the
//     event's Fd and Pad words, kernel_sock.go);
//   - Wake writes the eventfd under mu and shut closes the fds under mu,
//     so a late Wake (Close from another goroutine after the loop closed)
//     writes to no descriptor.

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/internal/loop"
)

const maxEvents = 256

const efdSlot = -1 // the event of the eventfd

// epollBackend serves a loop's sockets through epoll.
type epollBackend struct {
	kernel
	epfd   int
	efd    int
	mu     sync.Mutex
	closed bool
	one    [8]byte // 1, little-endian: what Wake writes
	buf8   [8]byte // what the eventfd's reads land in
	events []unix.EpollEvent
	nready int
}

var _ kernBackend = (*epollBackend)(nil)

// handler is a test's socket the backend dispatches events to.
type handler interface {
	event(ev uint32)
}

func (b *epollBackend) name() Backend { return BackendEpoll }

// init opens the epoll and event descriptors; the backend is the loop's
// IO.
func (b *epollBackend) init(*reactor) (loop.IO, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: efdSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(efd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	b.epfd, b.efd = epfd, efd
	b.one[0] = 1
	b.events = make([]unix.EpollEvent, maxEvents)
	return b, nil
}

// shut closes the epoll and event descriptors.
func (b *epollBackend) shut(*reactor) {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		unix.Close(b.epfd)
		unix.Close(b.efd)
	}
	b.mu.Unlock()
}

// Wake makes the loop's epoll_wait return. Any goroutine.
func (b *epollBackend) Wake() {
	b.mu.Lock()
	if !b.closed {
		unix.Write(b.efd, b.one[:])
	}
	b.mu.Unlock()
}

// Wait waits in epoll_wait for at most timeout (negative: no bound).
func (b *epollBackend) Wait(timeout time.Duration) {
	if b.closed {
		return
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	n, err := unix.EpollWait(b.epfd, b.events, ms)
	if err != nil {
		n = 0 // EINTR
	}
	b.nready = n
}

// Dispatch hands each ready socket its event.
func (b *epollBackend) Dispatch() {
	n := b.nready
	b.nready = 0
	for i := 0; i < n; i++ {
		ev := b.events[i]
		if ev.Fd == efdSlot {
			unix.Read(b.efd, b.buf8[:])
			continue
		}
		if int(ev.Fd) >= len(b.slots) {
			continue // the table was given back after its sockets closed
		}
		s := &b.slots[ev.Fd]
		if s.gen != uint32(ev.Pad) || s.h == nil {
			continue // stale: the socket closed since the wait
		}
		switch h := s.h.(type) {
		case *Conn:
			b.event(h, ev.Events)
		case *Listener:
			h.ls.rready = true
			h.acceptable()
		case handler:
			h.event(ev.Events)
		}
	}
}

// register adds fd to the epoll set, edge-triggered, for h.
func (b *epollBackend) register(fd int, h any) (int32, error) {
	i := b.take(fd, h)
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET,
		Fd:     i,
		Pad:    int32(b.slots[i].gen),
	}
	if err := unix.EpollCtl(b.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		b.release(i)
		return 0, os.NewSyscallError("epoll_ctl", err)
	}
	return i, nil
}

// unregister frees slot i (the descriptor is closed by its owner, which
// takes it out of the epoll set).
func (b *epollBackend) unregister(i int32) { b.release(i) }
