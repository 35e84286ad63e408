package websocket

import "sync"

// Buffers for the messages that do not arrive whole in one receive
// (fragmented ones, and frames that span receives). A Conn holds one only
// while such a message is arriving or being handled, so an idle Conn
// holds none; buffers up to maxPooled go back to a pool shared by every
// loop.

const (
	minBuf    = 4 << 10
	maxPooled = 64 << 10
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, minBuf); return &b }}

// appendBuf appends p to b, taking b from the pool when it has none yet;
// a buffer grows at most to limit (the message size limit, checked
// before).
func appendBuf(b, p []byte, limit int) []byte {
	if b == nil {
		b = *bufPool.Get().(*[]byte)
	}
	if len(b)+len(p) > cap(b) {
		n := min(max(2*cap(b), len(b)+len(p)), max(limit, len(b)+len(p)))
		nb := make([]byte, len(b), n)
		copy(nb, b)
		putBuf(b)
		b = nb
	}
	return append(b, p...)
}

// putBuf gives b back to the pool (if it is small enough to be worth
// keeping) and returns nil.
func putBuf(b []byte) []byte {
	if b != nil && cap(b) <= maxPooled {
		b = b[:0]
		bufPool.Put(&b)
	}
	return nil
}
