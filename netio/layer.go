package netio

// The layer contract: a protocol that transforms a connection's bytes
// (TLS, tls_record.go, is the one there is) sits between the Conn's
// receive, write and close paths and its socket.
//
// The rules:
//   - a connection has a layer when fLayer is set, and then c.ext.ly holds
//     it; a plain connection has none, so its paths pay one flag test and
//     its idle state no byte (connExt keeps the layer in one word);
//   - every method runs on the connection's loop;
//   - open is the receive once the connection has checked its read
//     deadline, that nothing is held and that no error is sticky: the
//     next bytes for the owner (at least one, valid until the next
//     receive), a sticky error, or ok=false when nothing is readable yet.
//     The layer reads the socket itself (c.r.readNow), only while open
//     runs, and keeps c.rerr and fRecvd as the plain receive does; the
//     backend then calls readable as for any connection;
//   - last is the buffer of the bytes the last open returned: when the
//     receive that got them was cancelled, the connection keeps c.held of
//     them there for the next receive;
//   - pending is the buffer Write appends the owner's bytes to (made from
//     the loop's output pool when nil); buffered counts them until seal
//     turns them into the connection's output (c.out, c.written), at the
//     batch boundary, at Flush and before the end;
//   - closeNotify seals what was written and appends the layer's end (TLS
//     close_notify) to the output, for CloseWrite and Close; it may abort c;
//   - peerEnd names the end of a connection whose peer left while nobody
//     received (leave): io.EOF there is a truncation for TLS;
//   - release runs once, when c releases its socket, before the backend
//     closes it: the layer gives its buffers back and wakes anything that
//     waits on it (a handshake), which then fails.

// layer is what a connection's paths call on a layered connection; see
// the contract above.
type layer interface {
	open() ([]byte, error, bool)
	last() []byte
	pending() *[]byte
	buffered() int
	seal()
	closeNotify()
	peerEnd(err error) error
	release()
}

// layerRef holds a connection's layer behind one pointer, so that connExt
// keeps one word for it (an interface value is two) and stays in its size
// class. The layer keeps its layerRef inside itself, so that a layered
// connection allocates nothing more for it.
type layerRef struct{ layer }

// setLayer gives c the layer ref holds. Loop only.
func (c *Conn) setLayer(ref *layerRef) {
	c.x().ly = ref
	c.set(fLayer)
}
