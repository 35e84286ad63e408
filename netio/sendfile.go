package netio

// Sending a file's bytes as a connection's output.
//
// Invariants (loop-owned):
//   - ext.sf is set from SendFile until the file's bytes are all written
//     (zero copy: handed to the kernel; copy: appended to the output), or
//     the send fails; while it is set, Write and WriteString fail with
//     ErrSendFilePending, so nothing can come between the file's bytes;
//   - zero copy (epoll_sendfile.go) starts once the output written
//     before has been taken: then written grows by the file's length at
//     once, and the kernel's takes count through took, as for a Write;
//   - the copy path reads the file on the loop, a piece at a time, and
//     writes each piece as a Write would, holding at most copyAhead bytes
//     of output before it waits for the kernel to take them.

import (
	"errors"
	"io"
	"net"
	"os"

	"github.com/spindle-rt/spindle/future"
)

// ErrSendFilePending is returned by a Write while a SendFile of the
// connection is under way: its future completes first.
var ErrSendFilePending = errors.New("netio: write while SendFile is under way")

// fileOut is a SendFile under way.
type fileOut struct {
	f       *os.File
	fd      int
	off     int64
	left    int64
	p       *future.Promise[struct{}]
	buf     []byte // the copy path's piece
	zc      bool   // zero copy: the kernel reads the file (epoll_sendfile.go)
	started bool   // zero copy: the output before it has left, and written counts the file
	copying bool   // the copy path is writing a piece
}

// Pieces of the copy path.
const (
	copyPiece = 64 << 10
	copyAhead = 256 << 10
)

// SendFile sends n bytes of f, from offset off, as c's next output,
// after everything written before it. The returned future completes once
// the kernel has taken them all (as Flush's), or fails with the
// connection's error, or with io.ErrUnexpectedEOF if f ends before: then
// c has failed, since its peer cannot be sent what it was promised.
// Until the future completes, Write and WriteString fail with
// ErrSendFilePending, and f must stay open. A second SendFile fails the
// same way. f is a regular file; its offset is neither used nor moved,
// so sends of one file on several connections, on any loops, may run at
// once.
//
// On a plain TCP or Unix connection of the epoll backend the bytes go by
// sendfile(2): they never pass through user space, and the loop hands
// them to the kernel as the socket takes them, as it does a Write's. On
// TLS connections, the io_uring backend, the portable and the simulated
// backends, the loop reads f itself (pread, 64 KiB at a time, at most
// 256 KiB ahead of the socket) and writes what it read. Either way the
// file is read on the loop's goroutine: from the page cache that costs
// what a copy does, but a file that is not in the cache makes the loop
// wait for the disk, as in nginx; keep such files warm or read them
// elsewhere. Loop only.
func (c *Conn) SendFile(f *os.File, off, n int64) *future.Future[struct{}] {
	c.mustLoop("SendFile")
	switch {
	case f == nil || off < 0 || n < 0:
		return future.Failed[struct{}](c.exe(), errors.New("netio: SendFile of no file or a negative range"))
	case c.werr != nil:
		return future.Failed[struct{}](c.exe(), c.werr)
	case c.is(fClosing) || c.is(fWShut):
		return future.Failed[struct{}](c.exe(), net.ErrClosed)
	case c.wtimeout:
		return future.Failed[struct{}](c.exe(), os.ErrDeadlineExceeded)
	case c.sendingFile():
		return future.Failed[struct{}](c.exe(), ErrSendFilePending)
	case n == 0:
		return c.Flush()
	}
	sf := &fileOut{f: f, off: off, left: n}
	c.x().sf = sf
	if !c.is(fLayer) { // a layer (TLS) seals what it sends: the copy path
		if f, ok := c.r.be.sendFile(c, sf); ok {
			return f
		}
	}
	sf.p = future.NewPromise[struct{}](c.exe())
	c.copyFile()
	return sf.p.Future()
}

// sendingFile reports whether a SendFile is under way.
func (c *Conn) sendingFile() bool { return c.ext != nil && c.ext.sf != nil }

// copyFile goes on with the copy path: pieces are read and written until
// the output is copyAhead ahead of the socket, or the file is all sent.
func (c *Conn) copyFile() {
	sf := c.ext.sf
	for sf.left > 0 {
		if c.werr != nil {
			c.endFile(c.werr)
			return
		}
		if c.buffered() >= copyAhead {
			c.Flush().OnComplete(func(_ struct{}, err error) {
				if err != nil {
					c.endFile(err)
					return
				}
				c.copyFile()
			})
			return
		}
		if sf.buf == nil {
			sf.buf = make([]byte, copyPiece)
		}
		b := sf.buf[:min(int64(len(sf.buf)), sf.left)]
		k, err := sf.f.ReadAt(b, sf.off)
		if k < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			c.abort(err)
			c.endFile(err)
			return
		}
		sf.copying = true
		_, err = write(c, "SendFile", b)
		sf.copying = false
		if err != nil {
			c.endFile(err)
			return
		}
		sf.off += int64(k)
		sf.left -= int64(k)
	}
	c.ext.sf = nil
	c.Flush().OnComplete(func(_ struct{}, err error) { sf.p.Complete(struct{}{}, err) })
}

// endFile ends the copy path's SendFile with err.
func (c *Conn) endFile(err error) {
	sf := c.ext.sf
	c.ext.sf = nil
	sf.p.Reject(err)
}
