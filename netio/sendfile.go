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
//   - the copy path never reads the file on the loop: each piece is a
//     fileio.Job, read by pread on the executor's file workers (on the
//     simulated disk's clock under package sim), a few at once; the
//     pieces are written in the file's order as they land, each as a
//     Write would, and the output buffered plus the bytes read or being
//     read ahead of it stay under copyAhead: past it, reading waits for
//     the kernel to take the output;
//   - a piece's slot in the ring is used again only once its Done has
//     run; after a failure no read starts, and the future fails once the
//     reads out have landed, so that the caller may close f then;
//   - a fileOut that finished whole (the kernel took it all, or every
//     piece landed and was written) is kept on the reactor for the
//     loop's next SendFile; one that failed is not, as pieces may still
//     hold it;
//   - a read whose Done learns that the executor has closed touches
//     nothing but its buffer and the promise (whose methods any goroutine
//     may call).

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
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
	zc      bool // zero copy: the kernel reads the file (epoll_sendfile.go)
	started bool // zero copy: the output before it has left, and written counts the file
	copying bool // the copy path is writing a piece

	// The copy path (a ring of pieces read ahead).
	c        *Conn
	next     int64 // where the next read starts
	end      int64 // where the range ends
	ahead    int64 // bytes of the pieces out: being read, or read and not written
	pieces   [copyAhead / copyPiece]filePiece
	head, n  int // the ring: the oldest piece out, and how many are
	inflight int // pieces whose Done has not run
	failed   bool
	err      error
	onFlush  func(struct{}, error)
}

// filePiece is a piece of the copy path: a fileio.Job reading n bytes at
// off into buf off the loop.
type filePiece struct {
	sf     *fileOut
	buf    *[]byte
	off    int64
	want   int
	k      int
	err    error
	landed bool
}

// Pieces of the copy path: read copyPiece at a time, at most copyAhead
// ahead of the socket.
const (
	copyPiece = 64 << 10
	copyAhead = 256 << 10
)

// pieceBufs holds the copy path's buffers (*[]byte of copyPiece bytes).
var pieceBufs sync.Pool

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
// backends, f is read by pread on the executor's file workers (package
// fileio's; under package sim, on the simulated disk's clock), 64 KiB at
// a time, never on the loop, and at most 256 KiB ahead of the socket (the
// output buffered and the pieces being read); the loop writes each piece
// in order as it lands. sendfile(2) itself runs on the loop: it copies
// from the page cache to the socket, and a part of the file that is not
// in the cache makes the loop wait while the kernel reads it from the
// disk, as nginx's workers do without aio threads; a file served cold
// and large is better sent by the copy path (a TLS connection or the
// io_uring backend). Loop only.
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
	sf := c.newFileOut()
	sf.f, sf.off, sf.left = f, off, n
	c.x().sf = sf
	if !c.is(fLayer) { // a layer (TLS) seals what it sends: the copy path
		if f, ok := c.r.be.sendFile(c, sf); ok {
			return f
		}
	}
	sf.p = future.NewPromise[struct{}](c.exe())
	sf.c, sf.next, sf.end = c, off, off+n
	c.pumpFile(sf)
	return sf.p.Future()
}

// newFileOut returns a fileOut for a SendFile of c: one that a send of
// the loop that finished whole left (no piece of it is out), or a new one.
func (c *Conn) newFileOut() *fileOut {
	r := c.r
	n := len(r.sfFree)
	if n == 0 {
		return &fileOut{}
	}
	sf := r.sfFree[n-1]
	r.sfFree[n-1] = nil
	r.sfFree = r.sfFree[:n-1]
	onFlush := sf.onFlush // bound to sf only
	*sf = fileOut{onFlush: onFlush}
	return sf
}

// maxFreeFileOuts bounds the fileOuts a loop keeps.
const maxFreeFileOuts = 64

// keepFileOut keeps sf, which finished whole and is no longer c's, for
// the loop's next SendFile. Loop only.
func (c *Conn) keepFileOut(sf *fileOut) {
	sf.f = nil
	if r := c.r; len(r.sfFree) < maxFreeFileOuts {
		r.sfFree = append(r.sfFree, sf)
	}
}

// sendingFile reports whether a SendFile is under way.
func (c *Conn) sendingFile() bool { return c.ext != nil && c.ext.sf != nil }

// pumpFile goes on with the copy path: the pieces landed at the front of
// the ring are written, in order, and reads start while the output and
// the pieces out are under copyAhead; with no piece out and the output at
// copyAhead, it waits for the kernel to take the output. Loop only.
func (c *Conn) pumpFile(sf *fileOut) {
	if sf.failed {
		if sf.inflight == 0 {
			sf.p.Reject(sf.err)
		}
		return
	}
	if c.werr != nil {
		c.failFile(sf, c.werr)
		return
	}
	for sf.n > 0 && sf.pieces[sf.head].landed {
		pc := &sf.pieces[sf.head]
		if err := pc.err; err != nil {
			putPieceBuf(pc)
			c.abort(err)
			c.failFile(sf, err)
			return
		}
		sf.copying = true
		_, err := write(c, "SendFile", (*pc.buf)[:pc.k])
		sf.copying = false
		putPieceBuf(pc)
		sf.head = (sf.head + 1) % len(sf.pieces)
		sf.n--
		sf.ahead -= int64(pc.k)
		sf.left -= int64(pc.k)
		pc.landed = false
		if err != nil {
			c.failFile(sf, err)
			return
		}
	}
	if sf.left == 0 {
		p := sf.p
		c.ext.sf = nil
		c.Flush().OnComplete(func(_ struct{}, err error) { p.Complete(struct{}{}, err) })
		c.keepFileOut(sf) // no piece is out: sf may serve the next send
		return
	}
	for sf.next < sf.end && sf.n < len(sf.pieces) && int64(c.buffered())+sf.ahead < copyAhead {
		pc := &sf.pieces[(sf.head+sf.n)%len(sf.pieces)]
		want := int(min(copyPiece, sf.end-sf.next))
		*pc = filePiece{sf: sf, off: sf.next, want: want}
		if b, ok := pieceBufs.Get().(*[]byte); ok {
			pc.buf = b
		} else {
			b := make([]byte, copyPiece)
			pc.buf = &b
		}
		if err := fileio.Start(c.exe(), pc); err != nil {
			putPieceBuf(pc)
			c.failFile(sf, err)
			return
		}
		sf.n++
		sf.inflight++
		sf.next += int64(want)
		sf.ahead += int64(want)
	}
	if sf.n == 0 {
		if sf.onFlush == nil {
			sf.onFlush = func(_ struct{}, err error) {
				if err != nil {
					sf.c.failFile(sf, err)
					return
				}
				sf.c.pumpFile(sf)
			}
		}
		c.Flush().OnComplete(sf.onFlush)
	}
}

// failFile ends the copy path's SendFile with err: no read starts any
// more, and the future fails once the reads out have landed. Loop only.
func (c *Conn) failFile(sf *fileOut, err error) {
	if !sf.failed {
		sf.failed, sf.err = true, err
		if c.ext.sf == sf {
			c.ext.sf = nil
		}
		for i := range sf.n { // the pieces landed and not written
			if pc := &sf.pieces[(sf.head+i)%len(sf.pieces)]; pc.landed {
				putPieceBuf(pc)
			}
		}
	}
	if sf.inflight == 0 {
		sf.p.Reject(sf.err)
	}
}

func putPieceBuf(pc *filePiece) {
	if pc.buf != nil {
		pieceBufs.Put(pc.buf)
		pc.buf = nil
	}
}

// Run reads the piece, off the loop (fileio.Job).
func (pc *filePiece) Run() {
	pc.k, pc.err = pc.sf.f.ReadAt((*pc.buf)[:pc.want], pc.off)
	switch {
	case pc.k == pc.want:
		pc.err = nil // io.EOF at the very end
	case pc.err == nil || pc.err == io.EOF:
		pc.err = io.ErrUnexpectedEOF // the file is shorter than promised
	}
}

// Done goes on with the copy path on the loop (fileio.Job); once the
// executor has closed, it gives the buffer back and fails the future.
func (pc *filePiece) Done(err error) {
	sf := pc.sf
	if errors.Is(err, executor.ErrClosed) {
		putPieceBuf(pc)
		sf.p.Reject(executor.ErrClosed)
		return
	}
	if err != nil && pc.err == nil {
		pc.err = err
	}
	pc.landed = true
	sf.inflight--
	if sf.failed {
		putPieceBuf(pc)
	}
	sf.c.pumpFile(sf)
}
