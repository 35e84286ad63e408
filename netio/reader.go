package netio

// Buffered reading over a connection's receives.
//
// Invariants (all loop-owned):
//   - the bytes received and not yet read are buf[off:] followed by cur:
//     cur is the rest of the connection's last receive (its read buffer,
//     valid until the next receive), buf the reader's own carry buffer;
//   - a receive is made only once cur is empty: its bytes are appended to
//     buf first, so none is lost when the connection reuses its read buffer;
//   - when buf[off:] is not empty, a token is wholly inside it (the bytes
//     of cur it needs are appended first); otherwise a token is the head of
//     cur, returned without a copy;
//   - the token last returned is the head of the unread bytes and is
//     consumed (tok bytes) at the start of the next read, so it stays valid
//     until then; a read that is withdrawn (a cancelled future, a Resolve
//     that lost to Cancel) sets tok back to 0 and consumes nothing;
//   - buf[off:off+seen] holds no seenFor byte (so a search does not scan
//     carried bytes twice);
//   - buf is taken from the loop's pool of output-sized buffers when bytes
//     must be carried and given back once it is all read, so an idle
//     reader holds no buffer;
//   - at most one read is pending (a future's op, or ReadLines); err, once
//     set (ErrTooLong), is the error of every later read.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/debug"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// DefaultMaxToken is the limit of a Reader made with a limit <= 0: the
// longest line or token it buffers, its delimiter excluded.
const DefaultMaxToken = 64 << 10

// ErrTooLong fails a Reader's read of a line or delimited token longer than
// its limit, or of more bytes than its limit at once. A delimited token's
// framing is lost with it, so the error is the reader's from then on.
var ErrTooLong = errors.New("netio: token longer than the reader's limit")

type readOp uint8

const (
	opNone  readOp = iota
	opLine         // up to "\n", without "\n" or "\r\n"
	opDelim        // up to and including delim
	opN            // exactly n bytes
	opAny          // what is there, at least one byte
	opLines        // ReadLines
)

// Reader reads lines, delimited tokens and fixed-size chunks from a Conn's
// receives, as bufio.Reader does from an io.Reader, without a copy when
// the bytes are in one receive. Make one with NewReader; once a Conn has a
// Reader, receive through the Reader only.
//
// Each read comes in up to four forms: a future (ReadLine, ReadSlice,
// ReadN, Recv), a try form that returns at once (TryReadLine, ...), a form
// for the body of a spawned task that suspends it (NextLine, ...), and a
// poll form (PollRecv, which makes a Reader a future.Poller[[]byte] and a
// merge.Stream[[]byte] of raw bytes). ReadLines calls a function with every
// line. The slice a read returns is valid until the next read on the
// Reader; code that keeps bytes longer copies them. One read may be
// pending at a time; a second one panics.
//
// A read fails with the connection's error (io.EOF once the peer has
// closed its side and every byte before was read; io.ErrUnexpectedEOF if
// it closed in the middle of a token; net.ErrClosed once the connection is
// closed, even with bytes still buffered), with os.ErrDeadlineExceeded past a
// read deadline (the bytes already received stay for the next read), and
// with ErrTooLong past the limit. A read that is cancelled or times out
// loses no byte.
//
// A Reader is loop-only: every method panics off the connection's loop.
type Reader struct {
	c       *Conn
	max     int
	buf     []byte
	off     int
	cur     []byte
	tok     int
	seen    int
	seenFor int // the byte seen counts from; -1: none
	err     error
	got     int64 // bytes received

	// the pending read
	op    readOp
	delim byte
	n     int
	p     *future.Promise[[]byte]
	each  func([]byte) error
	eachP *future.Promise[struct{}]
	busy  bool // serving the pending read: a wake-up meanwhile is noted in again
	again bool
}

// NewReader returns a Reader of c's receives whose lines and tokens are at
// most max bytes long, their delimiter excluded (max <= 0:
// DefaultMaxToken). Loop only.
func NewReader(c *Conn, max int) *Reader {
	c.mustLoop("NewReader")
	if max <= 0 {
		max = DefaultMaxToken
	}
	return &Reader{c: c, max: max, seenFor: -1}
}

// Conn returns the connection r reads from.
func (r *Reader) Conn() *Conn { return r.c }

// Buffered returns the number of bytes received and not yet read (those of
// the token last returned excluded). Loop only.
func (r *Reader) Buffered() int {
	r.mustLoop("Buffered")
	return len(r.buf) - r.off + len(r.cur) - r.tok
}

func (r *Reader) mustLoop(op string) {
	if r == nil || r.c == nil {
		panic("netio: Reader." + op + " on a Reader not made by NewReader")
	}
	if !r.c.onLoop() {
		panic("netio: Reader." + op + " called from a goroutine that does not hold the connection's loop; use Submit")
	}
}

// begin starts a read: it checks that none is pending and consumes the
// token returned last.
func (r *Reader) begin(op string) {
	r.mustLoop(op)
	if r.p != nil && r.p.Future().Ready() {
		r.p, r.op = nil, opNone // cancelled: withdrawn, nothing consumed
	}
	if r.eachP != nil && r.eachP.Future().Ready() {
		r.eachP, r.each, r.op = nil, nil, opNone
	}
	if r.op != opNone || r.busy {
		panic("netio: Reader." + op + " while another read is pending")
	}
	r.consume()
}

// consume drops the token returned last; a carry buffer read to its end
// goes back to the pool.
func (r *Reader) consume() {
	if r.tok > 0 {
		if r.off < len(r.buf) {
			r.off += r.tok
			r.seen, r.seenFor = 0, -1
		} else {
			r.cur = r.cur[r.tok:]
		}
		r.tok = 0
	}
	if r.buf != nil && r.off == len(r.buf) {
		r.c.putBuf(r.buf)
		r.buf, r.off, r.seen, r.seenFor = nil, 0, 0, -1
	}
	if len(r.cur) == 0 {
		r.cur = nil
	}
}

// unread withdraws the token returned last (its future was cancelled).
func (r *Reader) unread() { r.tok = 0 }

// held is the number of unread bytes.
func (r *Reader) held() int { return len(r.buf) - r.off + len(r.cur) }

// find returns the token op asks for if the unread bytes hold it, without
// receiving.
func (r *Reader) find(op readOp, delim byte, n int) ([]byte, bool, error) {
	switch op {
	case opAny:
		if r.off < len(r.buf) {
			r.tok = len(r.buf) - r.off
			return r.buf[r.off:], true, nil
		}
		if len(r.cur) > 0 {
			r.tok = len(r.cur)
			return r.cur, true, nil
		}
		return nil, false, nil
	case opN:
		if n > r.max {
			return nil, false, ErrTooLong
		}
		if k := len(r.buf) - r.off; k > 0 {
			if need := n - k; need > 0 {
				if len(r.cur) < need {
					return nil, false, nil
				}
				r.buf = append(r.buf, r.cur[:need]...)
				r.cur = r.cur[need:]
			}
			r.tok = n
			return r.buf[r.off : r.off+n], true, nil
		}
		if len(r.cur) < n {
			return nil, false, nil
		}
		r.tok = n
		return r.cur[:n], true, nil
	}
	if op == opLine || op == opLines {
		delim = '\n'
	}
	if k := len(r.buf) - r.off; k > 0 {
		from := 0
		if r.seenFor == int(delim) {
			from = r.seen
		}
		if j := bytes.IndexByte(r.buf[r.off+from:], delim); j >= 0 {
			j += from
			if j > r.max {
				return nil, false, ErrTooLong
			}
			r.tok = j + 1
			return r.buf[r.off : r.off+j+1], true, nil
		}
		r.seen, r.seenFor = k, int(delim)
		i := bytes.IndexByte(r.cur, delim)
		if i < 0 {
			if k+len(r.cur) > r.max {
				return nil, false, ErrTooLong
			}
			return nil, false, nil
		}
		if k+i > r.max {
			return nil, false, ErrTooLong
		}
		r.buf = append(r.buf, r.cur[:i+1]...)
		r.cur = r.cur[i+1:]
		r.tok = k + i + 1
		return r.buf[r.off:], true, nil
	}
	i := bytes.IndexByte(r.cur, delim)
	if i < 0 {
		if len(r.cur) > r.max {
			return nil, false, ErrTooLong
		}
		return nil, false, nil
	}
	if i > r.max {
		return nil, false, ErrTooLong
	}
	r.tok = i + 1
	return r.cur[:i+1], true, nil
}

// carry moves cur into buf before the next receive overwrites it.
func (r *Reader) carry() {
	if len(r.cur) == 0 {
		r.cur = nil
		return
	}
	if r.buf == nil {
		r.buf = r.c.getBuf()
	} else if r.off > 0 {
		k := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:k], 0
	}
	r.buf = append(r.buf, r.cur...)
	r.cur = nil
}

// read serves op: the token, an error, or neither (nothing more is
// readable; w, if not nil, is woken once more may be).
func (r *Reader) read(op readOp, delim byte, n int, w executor.Waker) ([]byte, bool, error) {
	if r.err != nil {
		return nil, false, r.err
	}
	if err, closed := r.c.closedErr(); closed {
		return nil, false, err // closed: what is buffered is not delivered
	}
	for {
		tok, ok, err := r.find(op, delim, n)
		if ok {
			r.c.holdPartial(false)
			if op == opLine || op == opLines {
				tok = trimEOL(tok)
			}
			return tok, true, nil
		}
		if err != nil {
			if op != opN {
				r.err = err // a delimited token's framing is lost
			}
			return nil, false, err
		}
		r.carry()
		r.c.holdPartial(r.off < len(r.buf))
		var b []byte
		if w != nil {
			b, ok, err = r.c.PollRecv(w)
		} else {
			b, err, ok = r.c.receive()
		}
		if err != nil {
			if errors.Is(err, io.EOF) && r.held() > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, false, err
		}
		if !ok {
			return nil, false, nil
		}
		r.cur = b
		r.got += int64(len(b))
	}
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// try is the try form of op.
func (r *Reader) try(name string, op readOp, delim byte, n int) ([]byte, bool) {
	r.begin(name)
	b, ok, _ := r.read(op, delim, n, nil)
	return b, ok
}

// TryReadLine returns the next line if it has been received, without
// waiting and without a copy when the line is in one receive: the bytes up
// to "\n", without the "\n" or "\r\n". It returns false when no whole line
// is there yet or the reader has failed (ReadLine then says why). Loop
// only.
func (r *Reader) TryReadLine() ([]byte, bool) { return r.try("TryReadLine", opLine, 0, 0) }

// TryReadSlice is TryReadLine for a token that ends with delim, which the
// slice includes.
func (r *Reader) TryReadSlice(delim byte) ([]byte, bool) {
	return r.try("TryReadSlice", opDelim, delim, 0)
}

// TryReadN returns the next n bytes if they have been received, without
// waiting.
func (r *Reader) TryReadN(n int) ([]byte, bool) {
	checkN(n)
	return r.try("TryReadN", opN, 0, n)
}

// TryRecv returns the bytes received and not yet read (at least one), or
// those a receive finds readable now, without waiting.
func (r *Reader) TryRecv() ([]byte, bool) { return r.try("TryRecv", opAny, 0, 0) }

func checkN(n int) {
	if n < 0 {
		panic("netio: Reader read of a negative count")
	}
}

// ReadLine returns a future of the next line: the bytes up to "\n",
// without the "\n" or "\r\n". A line longer than the reader's limit fails
// with ErrTooLong. Loop only.
func (r *Reader) ReadLine() *future.Future[[]byte] { return r.future("ReadLine", opLine, 0, 0) }

// ReadSlice returns a future of the bytes up to and including the next
// delim. A token longer than the reader's limit fails with ErrTooLong. Loop
// only.
func (r *Reader) ReadSlice(delim byte) *future.Future[[]byte] {
	return r.future("ReadSlice", opDelim, delim, 0)
}

// ReadN returns a future of the next n bytes. It fails with ErrTooLong,
// reading nothing, if n is more than the reader's limit, and with
// io.ErrUnexpectedEOF if the peer closes before n bytes came. Loop only.
func (r *Reader) ReadN(n int) *future.Future[[]byte] {
	checkN(n)
	return r.future("ReadN", opN, 0, n)
}

// Recv returns a future of the next bytes: those received and not yet
// read, or the next receive's. It is Conn.Recv for a connection read
// through a Reader (a protocol that switches from lines to raw bytes).
// Loop only.
func (r *Reader) Recv() *future.Future[[]byte] { return r.future("Recv", opAny, 0, 0) }

func (r *Reader) future(name string, op readOp, delim byte, n int) *future.Future[[]byte] {
	r.begin(name)
	ex := r.c.exe()
	b, ok, err := r.read(op, delim, n, (*readerWaker)(r))
	if err != nil {
		return future.Failed[[]byte](ex, err)
	}
	if ok {
		return future.Resolved(ex, b)
	}
	r.p = future.NewPromise[[]byte](ex)
	r.op, r.delim, r.n = op, delim, n
	return r.p.Future()
}

// readerWaker is how the connection wakes a Reader with a pending future
// or ReadLines.
type readerWaker Reader

func (w *readerWaker) Wake() {
	r := (*Reader)(w)
	if !r.c.onLoop() {
		_ = r.c.submit(r.serve) // the connection wakes on its loop; this is for the Waker contract
		return
	}
	r.serve()
}

// serve serves the pending read after a wake-up.
func (r *Reader) serve() {
	if r.busy {
		r.again = true
		return
	}
	r.busy = true
	defer func() { r.busy = false }()
	for {
		r.again = false
		switch {
		case r.op == opLines:
			r.serveLines()
		case r.op != opNone:
			r.serveFuture()
		}
		if !r.again {
			return
		}
	}
}

func (r *Reader) serveFuture() {
	p := r.p
	if p.Future().Ready() {
		r.p, r.op = nil, opNone // cancelled
		return
	}
	b, ok, err := r.read(r.op, r.delim, r.n, (*readerWaker)(r))
	if !ok && err == nil {
		return
	}
	r.p, r.op = nil, opNone
	if !p.Complete(b, err) && ok {
		r.unread()
	}
}

// ReadLines calls fn on the loop with every line r reads (as ReadLine
// returns them, valid until fn returns), as they arrive, until fn returns
// an error or a read fails; the future then fails with that error (io.EOF
// when the peer closed its side after a whole line, net.ErrClosed once fn
// or anything else closed the connection, whatever follows in the buffer),
// or with a *future.PanicError if fn panics (the line it panicked on is
// consumed). It allocates nothing per line. Cancelling the future stops it at once; the lines not yet read
// stay for the next read. Loop only.
func (r *Reader) ReadLines(fn func(line []byte) error) *future.Future[struct{}] {
	if fn == nil {
		panic("netio: Reader.ReadLines with nil func")
	}
	r.begin("ReadLines")
	r.op, r.each = opLines, fn
	r.eachP = future.NewPromise[struct{}](r.c.exe())
	f := r.eachP.Future()
	r.serve()
	return f
}

func (r *Reader) serveLines() {
	p := r.eachP
	for {
		r.consume()
		if p.Future().Ready() {
			r.endLines() // cancelled
			return
		}
		b, ok, err := r.read(opLines, 0, 0, (*readerWaker)(r))
		if !ok && err == nil {
			return
		}
		if err == nil {
			err = r.callEach(b)
		}
		if err != nil {
			r.consume()
			r.endLines()
			p.Reject(err)
			return
		}
	}
}

// callEach calls ReadLines' function with line. A panic in it comes back
// as a *future.PanicError, which fails ReadLines' future as a panic in a
// Then callback fails the derived future; unrecovered, it would leave the
// future pending and the Reader stuck in ReadLines (and, from the loop's
// I/O dispatch, end the process).
func (r *Reader) callEach(line []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &future.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.each(line)
}

func (r *Reader) endLines() { r.op, r.each, r.eachP = opNone, nil, nil }

// NextLine receives the next line in the body of a spawned task: it
// suspends the task until the line is there (future.Next), and allocates
// nothing. It returns what ReadLine's future would, or ctx's error once
// ctx ends; the bytes stay for the next read then.
func (r *Reader) NextLine(ctx context.Context) ([]byte, error) {
	r.begin("NextLine")
	return future.Next[[]byte](ctx, (*linePoller)(r))
}

// NextSlice is ReadSlice in the body of a spawned task (see NextLine).
func (r *Reader) NextSlice(ctx context.Context, delim byte) ([]byte, error) {
	r.begin("NextSlice")
	r.delim = delim
	return future.Next[[]byte](ctx, (*slicePoller)(r))
}

// NextN is ReadN in the body of a spawned task (see NextLine).
func (r *Reader) NextN(ctx context.Context, n int) ([]byte, error) {
	checkN(n)
	r.begin("NextN")
	r.n = n
	return future.Next[[]byte](ctx, (*nPoller)(r))
}

type (
	linePoller  Reader
	slicePoller Reader
	nPoller     Reader
)

func (p *linePoller) PollRecv(w executor.Waker) ([]byte, bool, error) {
	return (*Reader)(p).read(opLine, 0, 0, w)
}

func (p *slicePoller) PollRecv(w executor.Waker) ([]byte, bool, error) {
	r := (*Reader)(p)
	return r.read(opDelim, r.delim, 0, w)
}

func (p *nPoller) PollRecv(w executor.Waker) ([]byte, bool, error) {
	r := (*Reader)(p)
	return r.read(opN, 0, r.n, w)
}

// PollRecv is the poll form of Recv, which makes r a future.Poller[[]byte]
// and a merge.Stream[[]byte] of the raw bytes: the bytes received and not
// yet read, or the next receive's; or neither, and then w is woken once
// more may have arrived. Loop only.
func (r *Reader) PollRecv(w executor.Waker) ([]byte, bool, error) {
	if w == nil {
		panic("netio: Reader.PollRecv with nil Waker")
	}
	r.begin("PollRecv")
	return r.read(opAny, 0, 0, w)
}
