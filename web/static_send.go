package web

import "os"

// sendFile sends n bytes of f from off as the next bytes of w's body, by
// netio's SendFile, after the head and the body written so far, and
// calls done once the kernel has taken them (or the send failed). It
// reports false, and sends nothing, when w cannot: its response waits
// behind others of the connection (their bytes must leave first), its
// body is framed (chunked), or it has no socket. Until done, nothing else
// may be written to the connection, so the response must not end before.
func (w *ResponseWriter) sendFile(f *os.File, off, n int64, done func(struct{}, error)) bool {
	c := w.c
	if c.nc == nil || c.closed || c.hijacked || c.head() != w.r || w.done || w.r.method == "HEAD" {
		return false
	}
	if w.headSent && w.chunked || !w.headSent && !w.hdr.Has("Content-Length") {
		return false // the body is framed: its bytes go as chunks
	}
	if !w.headSent {
		w.sendHead(false)
	} else if len(w.body) > 0 {
		b := w.body
		w.body = w.body[:0]
		w.emitBody(b)
	}
	w.sent += n
	c.nc.SendFile(f, off, n).OnComplete(done)
	return true
}
