package main

// Where redis-server's reads of a connection's input end, as far as its
// line limit depends on it.
//
// redis-server refuses a line (an inline request, or the count line of a
// multibulk request or of one of its arguments) only when, after one of
// its reads, more than PROTO_INLINE_MAX_SIZE (64 KB) of the line is in
// its query buffer and the line's end is not (networking.c,
// processInlineBuffer and processMultibulkBuffer). So whether a line of
// 90 KB whose end the client sent with it is read or refused depends on
// where that read ends, which redis-server 7.0 decides from its query
// buffer, an sds string: the first read asks for PROTO_IOBUF_LEN (16 KB);
// once the buffer holds that much, a read asks for all its free room,
// after making room for 16 KB more (sdsMakeRoomFor, which doubles the
// length asked for under 1 MB, and whose allocation jemalloc rounds up to
// a size class); while a large argument (32 KB or more) arrives, a read
// asks for exactly the rest of it. After each read redis-server parses
// what it can and drops what it parsed from the buffer (its allocation
// stays). On a new connection sent a 90 KB inline request, its reads end
// at 16,384 and 81,910 bytes, and it refuses it; sent 20 PINGs first, they
// end at 16,384, 65,530 and 163,830, and it reads it.
//
// qbuf replays that, from the positions where redis-server's parser moves
// past each element of the input (a line, an argument): its reads end
// where they would if the client's bytes were all there to read, which
// holds for a client that sends a request at once. A read that the
// client's pace cut short is taken into account when the server finds
// nothing more to read (short). The server's cron, which shrinks a query
// buffer left large (clientsCronResizeQueryBuffer), is followed for a
// connection quiet for two seconds, or, if the buffer is larger than
// 32 KB, for 200 ms (quiet).
//
// Positions are offsets in the parser's buffer, moved with it (rebase);
// they may lie before its start, or, for end, past what has arrived.

import "math/bits"

const (
	ioBufLen    = 16 * 1024   // PROTO_IOBUF_LEN: what a read asks for
	bigArg      = 32 * 1024   // PROTO_MBULK_BIG_ARG: an argument read apart
	maxPrealloc = 1024 * 1024 // SDS_MAX_PREALLOC
)

// qbuf is redis-server's query buffer for one connection, as far as the
// ends of its reads go.
type qbuf struct {
	start int   // where the buffer starts: the input before was parsed and dropped
	end   int   // where the reads so far end
	pos   int   // where the parser stands (qb_pos)
	alloc int   // the buffer's room (sdsalloc)
	big   int64 // the length of the large argument being read, or -1

	ends *[]int // the ends of the reads, for a test that follows them; nil otherwise
}

func newQbuf() qbuf { return qbuf{big: -1} }

// read is one read of redis-server's, once it has parsed what the reads
// before brought (up to pos): the parsed input is dropped and the read
// asks for what readQueryFromClient asks for.
func (q *qbuf) read() {
	q.start = q.pos
	n := q.end - q.start
	want := ioBufLen
	big := q.big >= 0
	if big {
		if rest := int(q.big) + 2 - n; rest > 0 {
			want = rest
		}
	}
	if big || q.alloc < ioBufLen {
		q.alloc = sdsRoom(n, want, q.alloc, false)
	} else {
		q.alloc = sdsRoom(n, want, q.alloc, true)
		want = q.alloc - n
	}
	q.end += want
	if q.ends != nil {
		*q.ends = append(*q.ends, q.end)
	}
}

// readTo makes the reads that bring the input up to e.
//
//go:noinline
func (q *qbuf) readTo(e int) {
	for e > q.end {
		q.read()
	}
}

// bigLine follows the count line of an argument of n bytes, n >= bigArg,
// just advanced past: redis-server drops the parsed input at once if the
// buffer holds no more than the argument, and makes room for all of it.
func (q *qbuf) bigLine(n int64) {
	if have := q.end - q.pos; int64(have) <= n+2 {
		q.start = q.pos
		q.alloc = sdsRoom(have, int(n+2)-have, q.alloc, false)
	}
	q.big = n
}

// argEnd moves the parser past an argument's bytes ending at e (with
// their CRLF). A large argument that fills the buffer exactly becomes the
// argument itself, and a new buffer of its size takes its place.
func (q *qbuf) argEnd(e int) {
	for e > q.end {
		q.read()
	}
	if q.big >= 0 && q.pos == q.start && int64(q.end-q.start) == q.big+2 {
		q.alloc = sdsNew(int(q.big) + 2)
		q.start = q.end
	}
	q.big = -1
	q.pos = e
}

// refuses reports whether redis-server refuses the line that starts at s
// (where its parser stands) and whose end is at e, or not before e: one
// of its reads ends more than inlineMax past s and not past e. The reads
// it makes meanwhile are made.
func (q *qbuf) refuses(s, e int) bool {
	for q.end <= s+inlineMax {
		q.read()
	}
	return q.end <= e
}

// short says that nothing more has arrived than up to n: a read that
// asked for more ended there.
func (q *qbuf) short(n int) {
	if q.end > n && n >= q.pos {
		q.end = n
	}
}

// quiet follows the cron's shrinking of a buffer left with more than
// 4 KB of free room: after ms milliseconds without input, to what it
// holds, if the connection was idle for more than two seconds or the
// buffer is larger than 32 KB (PROTO_RESIZE_THRESHOLD) and its peak since
// the cron's last visit, a tenth of a second ago, was under half of it.
func (q *qbuf) quiet(ms int64) {
	n := q.end - q.pos
	if q.alloc-n <= 4096 || n < 0 {
		return
	}
	if ms > 2000 || (ms >= 200 && q.alloc > 32*1024) {
		q.start = q.pos
		q.alloc = n
	}
}

func (q *qbuf) rebase(t int) {
	q.start -= t
	q.end -= t
	q.pos -= t
}

// sdsRoom returns the room of an sds string of length n and room alloc
// after sdsMakeRoomFor(add) (greedy) or sdsMakeRoomForNonGreedy(add).
func sdsRoom(n, add, alloc int, greedy bool) int {
	if alloc-n >= add {
		return alloc
	}
	size := n + add
	if greedy {
		if size < maxPrealloc {
			size *= 2
		} else {
			size += maxPrealloc
		}
	}
	return sdsUsable(size)
}

// sdsNew returns the room of sdsnewlen(n).
func sdsNew(n int) int { return sdsUsable(n) }

// sdsUsable returns the room of an sds string allocated for size bytes:
// what jemalloc gives for its header, the bytes and the NUL, less the
// header and the NUL, within what its type can hold.
func sdsUsable(size int) int {
	hdr, most := 3, 1<<8-1 // sdshdr8 (never sdshdr5 for a buffer)
	switch {
	case size >= 1<<32:
		hdr, most = 17, int(^uint(0)>>1)
	case size >= 1<<16:
		hdr, most = 9, 1<<32-1
	case size >= 1<<8:
		hdr, most = 5, 1<<16-1
	}
	return min(jemallocSize(hdr+size+1)-hdr-1, most)
}

// jemallocSize returns jemalloc's size class for n bytes (4 KB pages, a
// 16-byte quantum): 8, multiples of 16 up to 128, then four classes for
// each doubling.
func jemallocSize(n int) int {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) &^ (step - 1)
}
