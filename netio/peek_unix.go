//go:build unix && (!linux || purego)

package netio

import "syscall"

// peeker is how the portable backend's reader goroutine peeks at a socket:
// its raw connection, and the callback made once per connection so that
// peeking allocates nothing.
type peeker struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool
	end  bool
	err  error
	init bool
	buf  [1]byte
}

// watchEnd waits until the socket is readable and reports whether the
// peer has left with nothing unread (its EOF, perr nil) or the socket
// failed (perr set). It reports false when bytes wait, and when the
// socket cannot be peeked at or has been closed. Reader goroutine only.
func (s *sock) watchEnd() bool {
	p := &s.pk
	if !p.init {
		p.init = true
		if sc, ok := s.nc.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				p.rc = rc
				p.fn = func(fd uintptr) bool {
					for {
						n, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
						switch {
						case err == syscall.EINTR:
							continue
						case err == syscall.EAGAIN:
							return false // wait until readable
						case err != nil:
							p.end, p.err = true, err
						default:
							p.end, p.err = n == 0, nil
						}
						return true
					}
				}
			}
		}
	}
	if p.rc == nil {
		return false
	}
	p.end, p.err = false, nil
	if err := p.rc.Read(p.fn); err != nil {
		return false // closed
	}
	s.perr = p.err
	return p.end
}
