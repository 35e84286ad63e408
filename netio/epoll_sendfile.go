//go:build linux && !purego

package netio

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/future"
)

// zeroCopy reports whether c's SendFile goes by sendfile(2): a plain
// socket of the epoll backend (the ring's sends and TLS's records take
// the copy path).
func (c *Conn) zeroCopy() bool {
	_, ep := c.r.be.(*epollBackend)
	return ep && c.tlsOf() == nil
}

// startZeroCopy starts sf once the output written before it has been
// taken.
func (c *Conn) startZeroCopy(sf *fileOut) *future.Future[struct{}] {
	sf.zc, sf.fd = true, int(sf.f.Fd())
	if c.out != nil {
		c.r.be.flushOut(c) // the output before the file goes first, now
	}
	if c.werr != nil {
		c.ext.sf = nil
		return future.Failed[struct{}](c.exe(), c.werr)
	}
	if c.written == c.taken {
		return c.beginZeroCopy(sf)
	}
	// The socket is full: the file follows once it has taken the rest.
	p := future.NewPromise[struct{}](c.exe())
	c.Flush().OnComplete(func(_ struct{}, err error) {
		if err != nil {
			c.ext.sf = nil
			p.Reject(err)
			return
		}
		c.beginZeroCopy(sf).OnComplete(func(_ struct{}, err error) { p.Complete(struct{}{}, err) })
	})
	return p.Future()
}

// beginZeroCopy counts the file's bytes as written and hands the first
// of them to the kernel.
func (c *Conn) beginZeroCopy(sf *fileOut) *future.Future[struct{}] {
	sf.started = true
	c.written += uint64(sf.left)
	f := c.Flush()
	if c.sk.ep.f&eWready != 0 {
		c.sendFileOut()
	}
	return f
}

// sendFileOut hands the kernel what the socket takes of the file, and
// the rest at the next EPOLLOUT edge.
func (c *Conn) sendFileOut() {
	sf, s := c.ext.sf, &c.sk
	for s.ep.f&eWready != 0 && sf.left > 0 {
		k, err := unix.Sendfile(int(s.fd), sf.fd, &sf.off, int(min(sf.left, 1<<30)))
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.ep.f &^= eWready
			return
		case err != nil:
			c.ext.sf = nil
			c.abort(sysOpError(c, "sendfile", err))
			return
		case k == 0:
			c.ext.sf = nil
			c.abort(io.ErrUnexpectedEOF) // the file is shorter than promised
			return
		}
		sf.left -= int64(k)
		if sf.left == 0 {
			c.ext.sf = nil
			c.took(k)
			c.keepFileOut(sf) // after took, whose callbacks may start another send
			return
		}
		c.took(k)
	}
}
