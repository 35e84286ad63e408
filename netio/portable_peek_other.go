//go:build !unix && !linux

package netio

// peeker is empty where the portable backend cannot peek at a socket.
type peeker struct{}

// watchEnd cannot find out that the peer left without reading: a peer
// that leaves while nobody receives is found out by the next receive.
func (s *sock) watchEnd() bool { return false }

// tryWrite cannot write without waiting: the writer goroutine writes.
func (s *sock) tryWrite(b []byte) (int, error, bool) { return 0, nil, false }
