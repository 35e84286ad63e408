package websocket

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Close status codes (RFC 6455, section 7.4.1).
const (
	CloseNormal          = 1000 // the purpose of the connection is fulfilled
	CloseGoingAway       = 1001 // the server shuts down, or the page goes away
	CloseProtocolError   = 1002 // the peer broke the protocol
	CloseUnsupportedData = 1003 // a message of a type the endpoint does not take
	CloseNoStatus        = 1005 // a close frame without a code (never sent)
	CloseAbnormal        = 1006 // the connection ended without a close frame (never sent)
	CloseInvalidData     = 1007 // a text message (or close reason) that is not UTF-8
	ClosePolicyViolation = 1008
	CloseTooBig          = 1009 // a message longer than the limit
	CloseMandatoryExt    = 1010
	CloseInternalError   = 1011 // the server failed
	CloseTLSHandshake    = 1015 // (never sent)
)

// ErrClosed is returned by the write methods of a Conn once a close frame
// has been sent or the connection has ended.
var ErrClosed = errors.New("websocket: connection closed")

// CloseError is how a connection ended: the error its receives fail with.
// Remote says whether the code is the one the peer sent in its close frame
// (CloseNoStatus when its frame had none); otherwise the code is the one
// this side sent (a protocol error of the peer's, a message too big, a
// local Close), or CloseAbnormal when the connection ended without a close
// frame. A CloseAbnormal wraps the error of the netio connection that
// ended (errors.Is(err, netio.ErrOutputLimit) for a peer cut for not
// reading, io.EOF, a reset), and Text is its message.
type CloseError struct {
	Code   int
	Text   string
	Remote bool

	err error // what ended the netio connection, for CloseAbnormal
}

// Unwrap returns the error of the netio connection that ended without a
// close frame (CloseAbnormal), else nil.
func (e *CloseError) Unwrap() error { return e.err }

func (e *CloseError) Error() string {
	s := "websocket: close " + strconv.Itoa(e.Code)
	if e.Text != "" {
		s += " (" + e.Text + ")"
	}
	if e.Remote {
		s += " from peer"
	}
	return s
}

func protocolError(text string) *CloseError {
	return &CloseError{Code: CloseProtocolError, Text: text}
}

// validSentCode reports whether a peer may send code in a close frame
// (RFC 6455, section 7.4): the defined codes other than those reserved
// for local use, and the registered (3000-3999) and private (4000-4999)
// ranges.
func validSentCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1011:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// parseClose reads a close frame's payload: its code (CloseNoStatus if
// empty) and reason, or an error (and the code to answer with) if the
// payload is one byte long, the code may not be sent, or the reason is not
// UTF-8.
func parseClose(p []byte) (code int, text string, err *CloseError) {
	switch {
	case len(p) == 0:
		return CloseNoStatus, "", nil
	case len(p) == 1:
		return 0, "", protocolError("close payload of one byte")
	}
	code = int(binary.BigEndian.Uint16(p))
	if !validSentCode(code) {
		return 0, "", protocolError("close code " + strconv.Itoa(code) + " may not be sent")
	}
	if !utf8.Valid(p[2:]) {
		return 0, "", &CloseError{Code: CloseInvalidData, Text: "close reason is not UTF-8"}
	}
	return code, string(p[2:]), nil
}
