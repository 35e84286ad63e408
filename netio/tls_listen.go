package netio

// A TLS listener's admission: it accepts while fewer than its maximum
// handshakes run, starts their handshakes and delivers the connections
// whose handshake is done.

import (
	"crypto/tls"
	"net"
)

// listenTLS is the state of a TLS listener's handshakes. Loop-owned.
type listenTLS struct {
	n       int     // handshakes in progress
	pending []*Conn // their connections
	ready   []*Conn // handshaken, for the next Accept
}

// acceptNext is acceptNow for every listener: a TLS listener accepts
// connections while fewer than its maximum handshake, starts their
// handshakes, and returns those that are done.
func (l *Listener) acceptNext() (*Conn, error, bool) {
	if l.cfg.tlsConfig == nil {
		return l.be.acceptNow(l)
	}
	s := &l.tl
	for s.n < l.cfg.maxHandshakes {
		c, err, ok := l.be.acceptNow(l)
		if !ok {
			break
		}
		if err != nil || c == nil {
			return c, err, true
		}
		l.handshake(c)
	}
	if len(s.ready) > 0 {
		c := s.ready[0]
		copy(s.ready, s.ready[1:])
		s.ready[len(s.ready)-1] = nil
		s.ready = s.ready[:len(s.ready)-1]
		return c, nil, true
	}
	return nil, nil, false
}

// handshake starts the server handshake of c, accepted by l.
func (l *Listener) handshake(c *Conn) {
	s := &l.tl
	s.n++
	s.pending = append(s.pending, c)
	t := c.startTLS(tls.Server, l.cfg.tlsConfig, l.cfg.hsTimeout)
	t.done = func(err error) {
		s.n--
		for i, p := range s.pending {
			if p == c {
				last := len(s.pending) - 1
				s.pending[i] = s.pending[last]
				s.pending[last] = nil
				s.pending = s.pending[:last]
				break
			}
		}
		if err == nil {
			if l.done {
				c.abort(net.ErrClosed)
				return
			}
			s.ready = append(s.ready, c)
		}
		if len(l.acceptq) > 0 {
			l.pump()
		}
	}
}

// finishTLS closes the connections a closed listener was handshaking or
// had not delivered.
func (l *Listener) finishTLS() {
	s := &l.tl
	for _, c := range s.pending {
		c.abort(net.ErrClosed)
	}
	for _, c := range s.ready {
		c.abort(net.ErrClosed)
	}
	s.pending, s.ready = nil, nil
}
