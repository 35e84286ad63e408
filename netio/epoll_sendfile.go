//go:build linux && !purego

package netio

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/future"
)

// sendFile sends sf by sendfile(2), once the output written before it
// has been taken (sendfile.go asks only for a connection without a
// layer: TLS's records take the copy path).
func (b *epollBackend) sendFile(c *Conn, sf *fileOut) (*future.Future[struct{}], bool) {
	sf.useZeroCopy()
	if c.out != nil {
		b.flushOut(c) // the output before the file goes first, now
	}
	if c.werr != nil {
		c.dropFile()
		return future.Failed[struct{}](c.Executor(), c.werr), true
	}
	if c.written == c.taken {
		return b.beginZeroCopy(c, sf), true
	}
	// The socket is full: the file follows once it has taken the rest.
	p := future.NewPromise[struct{}](c.Executor())
	c.Flush().OnComplete(func(_ struct{}, err error) {
		if err != nil {
			c.dropFile()
			p.Reject(err)
			return
		}
		b.beginZeroCopy(c, sf).OnComplete(func(_ struct{}, err error) { p.Complete(struct{}{}, err) })
	})
	return p.Future(), true
}

// beginZeroCopy counts the file's bytes as written and hands the first
// of them to the kernel.
func (b *epollBackend) beginZeroCopy(c *Conn, sf *fileOut) *future.Future[struct{}] {
	c.beginFile(sf)
	f := c.Flush()
	if c.sk.ep.f&eWready != 0 {
		sendFileOut(c, sf)
	}
	return f
}

// sendFileOut hands the kernel what the socket takes of the file, and
// the rest at the next EPOLLOUT edge.
func sendFileOut(c *Conn, sf *fileOut) {
	s := &c.sk
	for s.ep.f&eWready != 0 {
		fd, off, left := sf.span()
		if left == 0 {
			return
		}
		k, err := unix.Sendfile(int(s.fd), fd, off, int(min(left, 1<<30)))
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.ep.f &^= eWready
			return
		case err != nil:
			c.dropFile()
			c.abort(sysOpError(c, "sendfile", err))
			return
		case k == 0:
			c.dropFile()
			c.abort(io.ErrUnexpectedEOF) // the file is shorter than promised
			return
		}
		if c.tookFile(sf, k) {
			return // sf is done, and may serve another SendFile already
		}
	}
}
