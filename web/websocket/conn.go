package websocket

// A server-side WebSocket connection over a netio connection.
//
// Invariants:
//   - all state is loop-owned: every method but NetConn and Executor is
//     loop-only (mustLoop), and netio's wake-up reaches the Conn through a
//     task posted on the loop (ready);
//   - the reader r holds the bytes received and not parsed yet (netio's
//     receive buffer, or the bytes read past the upgrade request), which
//     stay valid until the next netio receive; the Conn asks netio for
//     more only once r has used them up, so a message that is a slice of
//     them stays valid until the next PollRecv;
//   - state goes open -> closing (this side sent its close frame) -> done
//     (the netio connection is closed, r holds no buffer); rerr is set
//     from closing on and is the error of every later receive;
//   - w is the waker of a PollRecv or Recv that found nothing; onMsg is
//     set once Serve has begun, and then no one else receives;
//   - unhook, set by Upgrade, withdraws the Conn from its web server's
//     Shutdown; finish calls it, so a Conn that is done holds no
//     registration.

import (
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
)

// MessageType is the type of a data message.
type MessageType uint8

// The data message types.
const (
	TextMessage   MessageType = opText
	BinaryMessage MessageType = opBinary
)

func (t MessageType) String() string {
	switch t {
	case TextMessage:
		return "text"
	case BinaryMessage:
		return "binary"
	}
	return "MessageType(" + itoa(int(t)) + ")"
}

// Message is a data message received: its type and payload. Data is valid
// until the next receive on its Conn (PollRecv, Recv, the next call of a
// Serve function) or its Close; copy what you keep.
type Message struct {
	Type MessageType
	Data []byte
}

const (
	stateOpen uint8 = iota
	stateClosing
	stateDone
)

// maxRounds bounds how many messages Serve handles in a row before it
// lets the loop's other work run.
const maxRounds = 16

// Conn is the server side of a WebSocket connection, served by the loop
// of its netio connection. Receive with PollRecv (so future.Next works on
// it), Recv or Serve; send with WriteMessage and WriteText, and await
// Flush for backpressure. Pings are answered, and a close frame from the
// peer is answered, by the Conn itself.
type Conn struct {
	r      reader
	nc     *netio.Conn
	rerr   error
	w      executor.Waker
	ready  func()
	cfg    *config
	t      *executor.Timer // closing: the wait for the peer's close frame
	onMsg  func(*Conn, Message)
	onEnd  func(error)
	unhook func() bool // withdraws the web server's OnShutdown registration (Upgrade)
	wh     [10]byte    // a frame header being written (a local would escape to the heap)
	state  uint8
	ended  bool // onEnd has been called
}

// NewConn returns the WebSocket connection over nc, whose opening
// handshake is done; buffered are the bytes read from nc past the upgrade
// request (the start of the first frames), which the Conn now owns. Most
// servers call Upgrade instead: a Conn made by NewConn does not hear of a
// web server's Shutdown, one that Upgrade makes does. Loop only.
func NewConn(nc *netio.Conn, buffered []byte, opts ...Option) *Conn {
	if nc == nil {
		panic("websocket: NewConn with nil *netio.Conn")
	}
	c := &Conn{}
	c.init(nc, buffered, configOf(opts))
	c.mustLoop("NewConn")
	return c
}

// configOf returns the configuration opts make: the shared default when
// there are none.
func configOf(opts []Option) *config {
	if len(opts) == 0 {
		return &defaultConfig
	}
	c := defaultConfig
	for _, o := range opts {
		o(&c)
	}
	return &c
}

func (c *Conn) init(nc *netio.Conn, buffered []byte, cfg *config) {
	c.nc, c.cfg = nc, cfg
	c.r.maxSize = cfg.maxSize
	c.r.feed(buffered)
	c.ready = c.onReady
}

func (c *Conn) mustLoop(op string) {
	if c == nil {
		panic("websocket: " + op + " on nil *Conn")
	}
	if !c.nc.Executor().OnLoop() {
		panic("websocket: Conn." + op + " called from a goroutine that does not hold the connection's loop; use Submit")
	}
}

// NetConn returns the netio connection c runs over. Any goroutine.
func (c *Conn) NetConn() *netio.Conn { return c.nc }

// Executor returns the executor whose loop serves c. Any goroutine.
func (c *Conn) Executor() *executor.Executor { return c.nc.Executor() }

// waker is the executor.Waker c gives netio.
type waker Conn

// Wake is netio's signal that bytes may have arrived: c reads on in a
// task of its own, outside netio's call.
func (w *waker) Wake() { c := (*Conn)(w); c.nc.Executor().Post(c.ready) }

func (c *Conn) onReady() {
	switch {
	case c.onMsg != nil:
		c.serve()
	case c.w != nil:
		w := c.w
		c.w = nil
		w.Wake()
	case c.state == stateClosing:
		c.poll() // read on for the peer's close frame
	}
}

// PollRecv returns the next data message (ok), the error that ended c
// (a *CloseError), or neither, and then wakes w once a message may have
// arrived: c is a future.Poller[Message] and a merge.Stream[Message]. The
// message's Data is valid until the next receive. Loop only.
func (c *Conn) PollRecv(w executor.Waker) (Message, bool, error) {
	c.mustLoop("PollRecv")
	if w == nil {
		panic("websocket: PollRecv with nil Waker")
	}
	if m, ok := c.poll(); ok {
		return m, true, nil
	}
	if c.state == stateDone {
		return Message{}, false, c.rerr
	}
	c.w = w
	return Message{}, false, nil
}

// Recv returns a future of the next data message, which fails with the
// error that ended c (a *CloseError). Loop only; a task that receives in
// a loop calls future.Next(ctx, c) instead, which allocates nothing.
func (c *Conn) Recv() *future.Future[Message] {
	c.mustLoop("Recv")
	ex := c.nc.Executor()
	if m, ok := c.poll(); ok {
		return future.Resolved(ex, m)
	}
	if c.state == stateDone {
		return future.Failed[Message](ex, c.rerr)
	}
	p := future.NewPromise[Message](ex)
	c.w = &recvWaker{c: c, p: p}
	return p.Future()
}

type recvWaker struct {
	c *Conn
	p *future.Promise[Message]
}

func (r *recvWaker) Wake() {
	if r.p.Future().Ready() {
		return // cancelled
	}
	if m, ok := r.c.poll(); ok {
		r.p.Resolve(m)
		return
	}
	if r.c.state == stateDone {
		r.p.Reject(r.c.rerr)
		return
	}
	r.c.w = r
}

// Serve calls fn, on the loop, with each data message c receives, in
// order, until c ends; then it calls done (if not nil) once with the
// *CloseError that ended it, however it ended (a close frame, a protocol
// error, the close timeout, a failed write or receive). The message is valid while fn runs. While
// more than the write high-water mark (WithWriteHighWater) is waiting to
// be sent, Serve reads nothing more: a peer that does not read what fn
// sends it stops being read. An idle served Conn holds no buffer and no
// future. Loop only; use Serve or PollRecv and Recv, not both.
func (c *Conn) Serve(fn func(*Conn, Message), done func(error)) {
	c.mustLoop("Serve")
	if fn == nil {
		panic("websocket: Serve with nil function")
	}
	c.onMsg, c.onEnd = fn, done
	c.serve()
}

func (c *Conn) serve() {
	for range maxRounds {
		if c.state == stateOpen && c.nc.Buffered() > c.cfg.highWater {
			c.nc.Flush().OnComplete(c.flushed)
			return
		}
		m, ok := c.poll()
		if !ok {
			if c.state == stateDone && !c.ended {
				c.ended = true
				if c.onEnd != nil {
					c.onEnd(c.rerr)
				}
			}
			return
		}
		c.onMsg(c, m)
	}
	c.nc.Executor().Post(c.ready)
}

// flushed goes on serving once the output waited for has drained. A
// failed Flush means the netio connection has failed (its output limit,
// a reset, a write deadline) and will never drain: c ends, and serve runs
// done.
func (c *Conn) flushed(_ struct{}, err error) {
	if err != nil {
		c.lost(err)
		return // finish has posted ready: serve calls done
	}
	c.serve()
}

// poll reads and parses until a data message is whole, reading more from
// netio while bytes are there, and answers control frames on the way. It
// returns !ok when no message is ready: c has ended, or netio will wake c.
func (c *Conn) poll() (Message, bool) {
	for c.state != stateDone {
		ev, op, p, err := c.r.next()
		switch ev {
		case evMore:
			b, ok, err := c.nc.PollRecv((*waker)(c))
			if err != nil {
				c.lost(err)
				break
			}
			if !ok {
				return Message{}, false
			}
			c.r.feed(b)
		case evMessage:
			if c.state == stateOpen { // else closing: dropped
				return Message{Type: MessageType(op), Data: p}, true
			}
		case evControl:
			c.control(op, p)
		case evError:
			c.fail(err)
		}
	}
	return Message{}, false
}

// control handles a control frame: a ping is answered with a pong, a pong
// is dropped, a close frame is answered and ends c.
func (c *Conn) control(op byte, p []byte) {
	switch op {
	case opPing:
		if c.state == stateOpen {
			c.writeFrame(opPong, p)
		}
	case opClose:
		code, text, err := parseClose(p)
		if err != nil {
			c.fail(err)
			return
		}
		if c.state == stateOpen {
			if code == CloseNoStatus {
				c.writeFrame(opClose, nil)
			} else {
				c.writeFrame(opClose, p[:2])
			}
			c.rerr = &CloseError{Code: code, Text: text, Remote: true}
		}
		c.finish()
	}
}

// fail ends c for a fault of the peer's: a close frame with e's code,
// then the connection closes.
func (c *Conn) fail(e *CloseError) {
	if c.state == stateOpen {
		c.writeClose(e.Code, e.Text)
		c.rerr = e
	}
	c.finish()
}

// lost ends c when the netio connection ended (err) without a close
// handshake.
func (c *Conn) lost(err error) {
	if c.state == stateOpen {
		c.rerr = &CloseError{Code: CloseAbnormal, Text: err.Error(), err: err}
	}
	c.finish()
}

// finish closes the netio connection (what was written still leaves) and
// drops c's buffers; whoever waits on c is woken.
func (c *Conn) finish() {
	if c.state == stateDone {
		return
	}
	c.state = stateDone
	if c.t != nil {
		c.t.Stop()
		c.t = nil
	}
	if c.unhook != nil {
		c.unhook()
		c.unhook = nil
	}
	c.nc.Close()
	c.r.release()
	if c.w != nil || c.onMsg != nil {
		c.nc.Executor().Post(c.ready)
	}
}

// Close starts the closing handshake: it sends a close frame with code
// (CloseNormal, CloseGoingAway when the server shuts down, ...) and text
// (at most 123 bytes), drops the data messages that still arrive, and
// closes the connection once the peer's close frame comes, or after the
// close timeout (WithCloseTimeout). Receives then fail with a *CloseError
// of code and text. A code of 0 sends a close frame without a code. It
// returns ErrClosed if c is already closing. Loop only.
func (c *Conn) Close(code int, text string) error {
	c.mustLoop("Close")
	if c.state != stateOpen {
		return ErrClosed
	}
	if code != 0 && !validSentCode(code) {
		panic("websocket: Close with code " + itoa(code) + ", which may not be sent")
	}
	if len(text) > maxControlPayload-2 {
		panic("websocket: Close with a reason longer than 123 bytes")
	}
	c.writeClose(code, text)
	c.rerr = &CloseError{Code: code, Text: text}
	if code == 0 {
		c.rerr = &CloseError{Code: CloseNoStatus}
	}
	c.state = stateClosing
	c.t = c.nc.Executor().AfterFunc(c.cfg.closeTimeout, func() {
		c.t = nil
		c.finish()
	})
	c.nc.Executor().Post(c.ready) // read on for the peer's answer
	return nil
}

// goingAway is what c's web server's Shutdown calls (Upgrade registers
// it): the closing handshake with 1001.
func (c *Conn) goingAway() {
	if c.state == stateOpen {
		c.Close(CloseGoingAway, "server shutting down")
	}
}

// Closed reports whether c has begun closing (either side sent its close
// frame, or the connection ended). Loop only.
func (c *Conn) Closed() bool {
	c.mustLoop("Closed")
	return c.state != stateOpen
}

func (c *Conn) writeClose(code int, text string) {
	p := make([]byte, 0, maxControlPayload)
	if code != 0 {
		p = append(p, byte(code>>8), byte(code))
		p = append(p, text...)
	}
	c.writeFrame(opClose, p)
}

func (c *Conn) writeFrame(op byte, p []byte) error {
	if _, err := c.nc.Write(appendHeader(c.wh[:0], true, op, len(p))); err != nil {
		return err
	}
	_, err := c.nc.Write(p)
	return err
}

// WriteMessage sends p as one message of type t: its bytes are copied
// into the connection's output, which leaves at the end of the loop's
// batch. It never blocks; await Flush to go at the peer's pace. After
// Close, or once c has ended, it returns ErrClosed. Loop only.
func (c *Conn) WriteMessage(t MessageType, p []byte) error {
	c.mustLoop("WriteMessage")
	if t != TextMessage && t != BinaryMessage {
		panic("websocket: WriteMessage of " + t.String())
	}
	if c.state != stateOpen {
		return ErrClosed
	}
	return c.writeFrame(byte(t), p)
}

// WriteText sends s as one text message, as WriteMessage does. Loop only.
func (c *Conn) WriteText(s string) error {
	c.mustLoop("WriteText")
	if c.state != stateOpen {
		return ErrClosed
	}
	if _, err := c.nc.Write(appendHeader(c.wh[:0], true, opText, len(s))); err != nil {
		return err
	}
	_, err := c.nc.WriteString(s)
	return err
}

// Ping sends a ping with payload p (at most 125 bytes); the peer's pong is
// dropped. Loop only.
func (c *Conn) Ping(p []byte) error {
	c.mustLoop("Ping")
	if len(p) > maxControlPayload {
		panic("websocket: Ping with a payload longer than 125 bytes")
	}
	if c.state != stateOpen {
		return ErrClosed
	}
	return c.writeFrame(opPing, p)
}

// Buffered returns the bytes written to c and not yet taken by the
// kernel. Loop only.
func (c *Conn) Buffered() int {
	c.mustLoop("Buffered")
	return c.nc.Buffered()
}

// Flush returns a future that completes once everything written to c
// before it has been taken by the kernel: the backpressure point. Loop
// only.
func (c *Conn) Flush() *future.Future[struct{}] {
	c.mustLoop("Flush")
	return c.nc.Flush()
}
