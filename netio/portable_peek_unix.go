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

	// The loop's writes (tryWrite), apart from the reader goroutine's
	// fields above: the loop's raw connection and callback, made on its
	// first write.
	wrc   syscall.RawConn
	wfn   func(fd uintptr) bool
	wb    []byte
	wn    int
	werr  error
	winit bool
}

// tryWrite writes what the socket takes of b at once, on the loop, without
// waiting: n bytes (0 when the socket's buffer is full), or the socket's
// error. ok is false when the socket has no raw connection, and the writer
// goroutine must write. The error is the system call's, or the raw
// connection's once the socket is closed. Loop only, while no write is in flight on the
// writer goroutine (which would hold the socket's write lock).
func (s *sock) tryWrite(b []byte) (n int, err error, ok bool) {
	p := &s.pk
	if !p.winit {
		p.winit = true
		if sc, ok := s.nc.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				p.wrc = rc
				p.wfn = func(fd uintptr) bool {
					for {
						n, err := syscall.Write(int(fd), p.wb)
						switch {
						case err == syscall.EINTR:
							continue
						case err == syscall.EAGAIN:
							p.wn, p.werr = 0, nil
						case err != nil:
							p.wn, p.werr = 0, err
						default:
							p.wn, p.werr = n, nil
						}
						return true // never wait: the writer goroutine does
					}
				}
			}
		}
	}
	if p.wrc == nil {
		return 0, nil, false
	}
	p.wb = b
	err = p.wrc.Write(p.wfn)
	p.wb = nil
	if err != nil {
		return 0, err, true // closed
	}
	return p.wn, p.werr, true
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
