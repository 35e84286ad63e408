package web

import (
	"os"

	"github.com/spindle-rt/spindle/future"
)

// sendFile sends n bytes of f from off as the next bytes of w's body, by
// netio's SendFile, after the head and the body written so far, and
// returns the future that completes once the kernel has taken them (or
// the send failed). It reports false, and sends nothing, when w cannot:
// its response waits behind others of the connection (their bytes must
// leave first), its body is framed (chunked), or the connection is closed
// or hijacked. Until done, nothing else
// may be written to the connection, so the response must not end before.
func (w *ResponseWriter) sendFile(f *os.File, off, n int64) (*future.Future[struct{}], bool) {
	c := w.c
	if c.closed || c.hijacked || c.head() != w.r || w.done || w.r.method == "HEAD" {
		return nil, false
	}
	if w.headSent && w.chunked || !w.headSent && !w.hdr.Has("Content-Length") {
		return nil, false // the body is framed: its bytes go as chunks
	}
	if !w.headSent {
		w.sendHead(false)
	} else if len(w.body) > 0 {
		b := w.body
		w.body = w.body[:0]
		w.emitBody(b)
	}
	w.sent += n
	return c.nc.SendFile(f, off, n), true
}
