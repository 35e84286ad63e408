package websocket

// The frame codec (RFC 6455, section 5.2), free of I/O: it reads a frame
// header from bytes and appends one to a buffer. The Conn feeds it the
// bytes netio received.

import (
	"encoding/binary"
	"unicode/utf8"
)

// Opcodes (RFC 6455, section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

const (
	finBit  = 0x80
	rsvBits = 0x70
	maskBit = 0x80

	maxControlPayload = 125
	maxHeader         = 14 // 2 + 8 (length) + 4 (mask key)
)

// header is a parsed frame header.
type header struct {
	fin    bool
	op     byte
	masked bool
	length uint64
	mask   [4]byte
}

// isControl reports whether op is a control opcode.
func isControl(op byte) bool { return op&0x8 != 0 }

// headerLen returns the length of the header that starts with b, or 0 if
// b is shorter than the two bytes that say it.
func headerLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	n := 2
	switch b[1] & 0x7F {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b[1]&maskBit != 0 {
		n += 4
	}
	return n
}

// parseHeader parses the frame header at the start of b. It returns the
// header and its length, or n == 0 when b does not yet hold the whole
// header. A header that breaks the protocol (reserved bits, an unknown
// opcode, a fragmented or long control frame, a length that is not in its
// shortest form or has its top bit set) returns a *CloseError with code
// CloseProtocolError. Masking is not checked here (the Conn does: a
// server requires it, a client refuses it).
func parseHeader(b []byte) (h header, n int, err error) {
	n = headerLen(b)
	if n == 0 || len(b) < n {
		return h, 0, nil
	}
	b0, b1 := b[0], b[1]
	if b0&rsvBits != 0 {
		return h, 0, protocolError("reserved bits set")
	}
	h.fin = b0&finBit != 0
	h.op = b0 & 0x0F
	switch h.op {
	case opContinuation, opText, opBinary, opClose, opPing, opPong:
	default:
		return h, 0, protocolError("reserved opcode")
	}
	h.masked = b1&maskBit != 0
	p := 2
	switch l := b1 & 0x7F; l {
	case 126:
		h.length = uint64(binary.BigEndian.Uint16(b[2:4]))
		if h.length < 126 {
			return h, 0, protocolError("length not in its shortest form")
		}
		p = 4
	case 127:
		h.length = binary.BigEndian.Uint64(b[2:10])
		if h.length>>63 != 0 {
			return h, 0, protocolError("length with its top bit set")
		}
		if h.length <= 0xFFFF {
			return h, 0, protocolError("length not in its shortest form")
		}
		p = 10
	default:
		h.length = uint64(l)
	}
	if isControl(h.op) {
		if !h.fin {
			return h, 0, protocolError("fragmented control frame")
		}
		if h.length > maxControlPayload {
			return h, 0, protocolError("control frame longer than 125 bytes")
		}
	}
	if h.masked {
		copy(h.mask[:], b[p:p+4])
	}
	return h, n, nil
}

// appendHeader appends the header of an unmasked frame (the server's) to
// dst.
func appendHeader(dst []byte, fin bool, op byte, length int) []byte {
	b0 := op
	if fin {
		b0 |= finBit
	}
	switch {
	case length <= 125:
		return append(dst, b0, byte(length))
	case length <= 0xFFFF:
		return append(dst, b0, 126, byte(length>>8), byte(length))
	default:
		return binary.BigEndian.AppendUint64(append(dst, b0, 127), uint64(length))
	}
}

// unmask XORs b with the mask key, starting at position pos of the key
// (the offset in the payload, mod 4); it returns the position after b.
func unmask(b []byte, key [4]byte, pos int) int {
	pos &= 3
	i := 0
	for ; i < len(b) && pos != 0; i++ {
		b[i] ^= key[pos]
		pos = (pos + 1) & 3
	}
	if rest := b[i:]; len(rest) >= 8 {
		k := uint64(binary.LittleEndian.Uint32(key[:]))
		k |= k << 32
		for len(rest) >= 8 {
			binary.LittleEndian.PutUint64(rest, binary.LittleEndian.Uint64(rest)^k)
			rest = rest[8:]
			i += 8
		}
	}
	for ; i < len(b); i++ {
		b[i] ^= key[pos]
		pos = (pos + 1) & 3
	}
	return pos
}

// validPrefix checks b, the start of a text message whose end may still
// be arriving: it returns how many of its bytes are whole valid UTF-8
// sequences and whether the rest (at most three bytes) can still begin
// one. ok false means b holds invalid UTF-8 whatever follows.
func validPrefix(b []byte) (n int, ok bool) {
	for n < len(b) {
		if b[n] < utf8.RuneSelf {
			n++
			continue
		}
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size == 1 {
			return n, !utf8.FullRune(b[n:]) && incompleteOK(b[n:])
		}
		n += size
	}
	return n, true
}

// incompleteOK reports whether t, shorter than the sequence its first
// byte announces, is a valid start of that sequence (RFC 3629's table).
func incompleteOK(t []byte) bool {
	lo, hi := byte(0x80), byte(0xBF)
	switch c := t[0]; {
	case c >= 0xC2 && c <= 0xDF:
	case c == 0xE0:
		lo = 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
	case c == 0xED:
		hi = 0x9F
	case c == 0xF0:
		lo = 0x90
	case c >= 0xF1 && c <= 0xF3:
	case c == 0xF4:
		hi = 0x8F
	default:
		return false
	}
	if len(t) > 1 && (t[1] < lo || t[1] > hi) {
		return false
	}
	if len(t) > 2 && (t[2] < 0x80 || t[2] > 0xBF) {
		return false
	}
	return true
}
