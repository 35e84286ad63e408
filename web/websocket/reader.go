package websocket

// The receiving half of the protocol, free of I/O: a reader is given the
// bytes received, one receive at a time, and returns what they hold (data
// messages, control frames, a protocol error). The Conn feeds it what
// netio received and acts on what it returns; tests and the fuzzer feed it
// bytes directly.

import "unicode/utf8"

// event is what reader.next found.
type event uint8

const (
	evMore    event = iota // in is used up: give the next bytes
	evMessage              // a whole data message
	evControl              // a control frame (ping, pong, close)
	evError                // the peer broke the protocol: close with the error's code
)

// reader is the state of the frames being received.
//
// Invariants: in[off:] are the bytes given and not parsed yet; hdr[:hn]
// is a frame header split across receives; inFrame says a frame's payload
// is arriving (rem bytes more), unmasked from key position mpos; msgOp is
// the opcode of the data message being put together in msg (fragmented,
// or a frame spanning receives), 0 when none, and msg[:valid] is known to
// be whole UTF-8 when it is text; ctl gathers a control frame that spans
// receives; held (ctlHeld) says msg (ctl) was returned by the last next,
// which releases it first.
type reader struct {
	in      []byte
	off     int
	rem     uint64
	msg     []byte
	ctl     []byte
	valid   int
	maxSize int

	mask    [4]byte
	hdr     [maxHeader]byte
	hn      uint8
	mpos    uint8
	fop     byte
	ffin    bool
	inFrame bool
	msgOp   byte
	held    bool
	ctlHeld bool
}

// feed gives r the next bytes received; r unmasks them in place.
func (r *reader) feed(b []byte) { r.in, r.off = b, 0 }

// release drops the buffers r holds.
func (r *reader) release() {
	r.msg, r.ctl, r.held, r.valid = putBuf(r.msg), nil, false, 0
	r.in, r.off = nil, 0
}

// next parses in[off:] until it holds a data message or a control frame
// whole. p (a slice of in, or of r's own buffer when it spanned
// receives) is valid until the next call; so is in.
func (r *reader) next() (ev event, op byte, p []byte, err *CloseError) {
	if r.held {
		r.held = false
		r.msg, r.valid = putBuf(r.msg), 0
	}
	if r.ctlHeld {
		r.ctl, r.ctlHeld = nil, false
	}
	for r.off < len(r.in) {
		if !r.inFrame {
			ok, err := r.header()
			if err != nil {
				return evError, 0, nil, err
			}
			if !ok {
				return evMore, 0, nil, nil
			}
			control := isControl(r.fop)
			// A whole unfragmented data frame, or a control frame, in
			// this receive: returned in place, without a copy.
			if (r.msgOp == 0 || control) && r.rem <= uint64(len(r.in)-r.off) {
				p := r.in[r.off : r.off+int(r.rem)]
				r.off += len(p)
				r.inFrame = false
				unmask(p, r.mask, 0)
				if control {
					return evControl, r.fop, p, nil
				}
				if r.ffin {
					if r.fop == opText && !utf8.Valid(p) {
						return evError, 0, nil, invalidText()
					}
					return evMessage, r.fop, p, nil
				}
				r.msgOp = r.fop // the first fragment of a message
				r.msg = appendBuf(r.msg, p, r.maxSize)
				if err := r.checkText(false); err != nil {
					return evError, 0, nil, err
				}
				continue
			}
			if !control && r.fop != opContinuation {
				r.msgOp = r.fop
			}
		}
		// The frame's payload, or what of it this receive holds.
		k := min(r.rem, uint64(len(r.in)-r.off))
		p := r.in[r.off : r.off+int(k)]
		r.off += int(k)
		r.rem -= k
		r.mpos = uint8(unmask(p, r.mask, int(r.mpos)))
		if isControl(r.fop) {
			if r.ctl == nil {
				r.ctl = make([]byte, 0, maxControlPayload)
			}
			r.ctl = append(r.ctl, p...)
			if r.rem > 0 {
				continue
			}
			r.inFrame, r.ctlHeld = false, true
			return evControl, r.fop, r.ctl, nil
		}
		r.msg = appendBuf(r.msg, p, r.maxSize)
		final := r.rem == 0 && r.ffin
		if err := r.checkText(final); err != nil {
			return evError, 0, nil, err
		}
		if r.rem > 0 {
			continue
		}
		r.inFrame = false
		if final {
			op := r.msgOp
			r.msgOp, r.held = 0, true
			return evMessage, op, r.msg, nil
		}
	}
	r.in, r.off = nil, 0
	return evMore, 0, nil, nil
}

// header reads the next frame header from in[off:] (gathering a split one
// in hdr) and checks it; false: not whole yet.
func (r *reader) header() (bool, *CloseError) {
	var h header
	var err error
	if r.hn == 0 {
		var n int
		h, n, err = parseHeader(r.in[r.off:])
		if err == nil && n == 0 {
			r.hn = uint8(copy(r.hdr[:], r.in[r.off:]))
			r.off = len(r.in)
			return false, nil
		}
		r.off += n
	} else {
		want := max(headerLen(r.hdr[:r.hn]), 2)
		for {
			k := copy(r.hdr[r.hn:want], r.in[r.off:])
			r.hn += uint8(k)
			r.off += k
			if int(r.hn) < want {
				return false, nil
			}
			if w := headerLen(r.hdr[:r.hn]); w > want {
				want = w
				continue
			}
			break
		}
		h, _, err = parseHeader(r.hdr[:r.hn])
		r.hn = 0
	}
	if err != nil {
		return false, err.(*CloseError)
	}
	if !h.masked {
		return false, protocolError("client frame not masked")
	}
	if !isControl(h.op) {
		switch {
		case h.op == opContinuation && r.msgOp == 0:
			return false, protocolError("continuation frame outside a fragmented message")
		case h.op != opContinuation && r.msgOp != 0:
			return false, protocolError("data frame inside a fragmented message")
		case h.length > uint64(r.maxSize-len(r.msg)):
			return false, &CloseError{Code: CloseTooBig, Text: "message longer than " + itoa(r.maxSize) + " bytes"}
		}
	}
	r.fop, r.ffin, r.mask, r.rem, r.mpos, r.inFrame = h.op, h.fin, h.mask, h.length, 0, true
	return true, nil
}

// checkText checks the UTF-8 of the text message being gathered in msg,
// whole when final.
func (r *reader) checkText(final bool) *CloseError {
	if r.msgOp != opText {
		return nil
	}
	n, ok := validPrefix(r.msg[r.valid:])
	r.valid += n
	if !ok || final && r.valid != len(r.msg) {
		return invalidText()
	}
	return nil
}

func invalidText() *CloseError {
	return &CloseError{Code: CloseInvalidData, Text: "text message is not UTF-8"}
}
