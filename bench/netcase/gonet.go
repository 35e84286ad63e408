package netcase

// The go_net server: what a careful Go programmer writes with package net.
// One goroutine per connection reads requests through a bufio.Reader and
// writes the replies into a bufio.Writer, which it flushes when no more
// input is buffered, so pipelined requests get their replies in one write.

import (
	"bufio"
	"io"
	"net"
	"sync"
)

// GoNet is the go_net server.
type GoNet struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{} // open connections, for Close
	done  bool                  // Close has begun
}

// ServeGoNet starts a go_net server on 127.0.0.1.
func ServeGoNet() (*GoNet, error) { return serveGoNet(nil) }

// serveGoNet starts a go_net server whose listener wrap wraps (if not nil).
func serveGoNet(wrap func(net.Listener) net.Listener) (*GoNet, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	s := &GoNet{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *GoNet) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *GoNet) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	req := make([]byte, Size)
	for {
		if _, err := io.ReadFull(r, req); err != nil {
			return
		}
		w.Write(req) // errors are sticky: Flush reports them
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// Addr returns the address the server listens on.
func (s *GoNet) Addr() string { return s.ln.Addr().String() }

// Close stops the server, closes every connection and returns once every
// goroutine of the server has returned.
func (s *GoNet) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}
