package netcase

// The TLS servers and clients of the TLS benchmarks: the same echo over
// TLS 1.3 (spindle's netio with WithTLS, and crypto/tls over package net
// with a goroutine per connection), with a certificate made when the
// process starts (ECDSA P-256, self-signed: nothing secret is kept). The
// child's TLS client (ChildTLSEnv) is a goroutine per connection on
// crypto/tls: the same client for both servers.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/testcert"
	"github.com/spindle-rt/spindle/netio"
)

// ChildTLSEnv, set to "1" beside ChildEnv, makes the child's client speak
// TLS.
const ChildTLSEnv = "SPINDLE_NETCASE_TLS"

// TLSNiceEnv, set to a nice value (-20 to 19) in the benchmark's
// environment, makes the TLS clients' process (only it) run at that nice
// value (Linux). On a machine shared with the server, a TLS client at a
// lower priority than the server's loop stands for one on another machine:
// its half of each handshake takes only the CPU the loop leaves.
const TLSNiceEnv = "SPINDLE_NETCASE_TLS_NICE"

// TLSIdleConns is how many connections the TLS idle cases open (fewer than
// IdleConns: each costs a full handshake on both sides).
const TLSIdleConns = 2_000

// ServerTLSConfig returns the servers' TLS configuration: a self-signed
// certificate made once per process.
var ServerTLSConfig = sync.OnceValue(func() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{testcert.MustSelfSigned("localhost", "127.0.0.1")}}
})

// clientTLSConfig is the child's: it checks no certificate (the server's
// is made by its process) and resumes no session, so every connection
// makes a full handshake.
func clientTLSConfig() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, SessionTicketsDisabled: true}
}

// tlsServer marks the servers whose clients speak TLS.
type tlsServer interface{ tlsServer() }

func (*SpindleTLS) tlsServer() {}
func (*GoTLS) tlsServer()      {}

// SpindleTLS is the spindle server over TLS: the Spindle echo on a
// listener made with netio.WithTLS.
type SpindleTLS struct{ *Spindle }

// ServeSpindleTLS starts the spindle TLS server on 127.0.0.1 served by ex,
// which must not be running yet.
func ServeSpindleTLS(ex *executor.Executor) (*SpindleTLS, error) {
	s, err := serveSpindle(ex, netio.WithTLS(ServerTLSConfig()))
	if err != nil {
		return nil, err
	}
	return &SpindleTLS{s}, nil
}

// GoTLS is the go_tls server: the go_net server over crypto/tls (a
// goroutine per connection reading through bufio from a tls.Conn).
type GoTLS struct{ *GoNet }

// ServeGoTLS starts the go_tls server on 127.0.0.1.
func ServeGoTLS() (*GoTLS, error) {
	s, err := serveGoNet(func(ln net.Listener) net.Listener { return tls.NewListener(ln, ServerTLSConfig()) })
	if err != nil {
		return nil, err
	}
	return &GoTLS{s}, nil
}

// StartTLSClients starts a load generator whose clients speak TLS. Close
// it when done (it is closed by b's cleanup too).
func StartTLSClients(b testing.TB) *Clients { return startClientsFor(b, &GoTLS{}) }

// startClientsFor starts the clients srv needs: TLS ones for a TLS server.
func startClientsFor(b testing.TB, srv Server) *Clients {
	b.Helper()
	_, isTLS := srv.(tlsServer)
	c, err := startClientsEnv(isTLS)
	if err != nil {
		b.Fatalf("netcase: starting the clients: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// Handshakes makes n full TLS handshakes with the server at addr from the
// child, par at a time, each on a new connection that then makes one round
// trip and closes.
func (c *Clients) Handshakes(addr string, n, par int) error {
	return c.do("handshake %s %d,%d", addr, n, par)
}

// driverTLS is the child's TLS client: a goroutine per connection for each
// round of a run, as driverNet.
type driverTLS struct {
	conns []*tlsClientConn
	load  *hsLoad // the handshakes hsload started, until hsstop
}

type tlsClientConn struct {
	c *tls.Conn
	r *bufio.Reader
}

func (d *driverTLS) dialOne(addr string) (*tlsClientConn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, clientTLSConfig())
	if err := tc.Handshake(); err != nil {
		nc.Close()
		return nil, err
	}
	cc := &tlsClientConn{c: tc, r: bufio.NewReaderSize(tc, 4<<10)}
	if err := cc.roundTrip(pattern(1), make([]byte, Size)); err != nil {
		tc.Close()
		return nil, err
	}
	return cc, nil
}

func (cc *tlsClientConn) roundTrip(req, buf []byte) error {
	if _, err := cc.c.Write(req); err != nil {
		return err
	}
	if _, err := io.ReadFull(cc.r, buf[:len(req)]); err != nil {
		return err
	}
	if !bytes.Equal(buf[:len(req)], req) {
		return fmt.Errorf("the reply differs from the request")
	}
	return nil
}

// each calls fn(i) for i < n from par goroutines and returns the first
// error.
func each(n, par int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(1, min(par, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func (d *driverTLS) dial(addr string, n int) error {
	cs := make([]*tlsClientConn, n)
	err := each(n, 8, func(i int) error {
		cc, err := d.dialOne(addr)
		cs[i] = cc
		return err
	})
	for _, cc := range cs {
		if cc != nil {
			d.conns = append(d.conns, cc)
		}
	}
	return err
}

func (d *driverTLS) run(rounds, depth int) error {
	req := pattern(depth)
	var left atomic.Int64
	left.Store(int64(rounds))
	return each(len(d.conns), len(d.conns), func(i int) error {
		buf := make([]byte, len(req))
		for left.Add(-1) >= 0 {
			if err := d.conns[i].roundTrip(req, buf); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *driverTLS) handshakes(addr string, n, par int) error {
	return each(n, par, func(int) error {
		cc, err := d.dialOne(addr)
		if err != nil {
			return err
		}
		return cc.c.Close()
	})
}

func (d *driverTLS) close() {
	if d.load != nil {
		d.stopLoad()
	}
	for _, cc := range d.conns {
		cc.c.Close()
	}
	d.conns = nil
}

// hsLoad is a stream of full handshakes at a steady rate: each on a new
// connection closed once its handshake is done.
type hsLoad struct {
	stop         chan struct{}
	done         chan struct{}
	t0           time.Time
	made, failed atomic.Int64
}

// startLoad starts handshakes with addr at rate a second, the first one
// at once, at most par in flight (a tick that finds par in flight starts
// none), in the background until stopLoad.
func (d *driverTLS) startLoad(addr string, rate, par int) error {
	if d.load != nil {
		return errors.New("hsload: a load is running already")
	}
	l := &hsLoad{stop: make(chan struct{}), done: make(chan struct{}), t0: time.Now()}
	d.load = l
	go func() {
		defer close(l.done)
		sem := make(chan struct{}, par)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for first := true; ; first = false {
			if !first {
				select {
				case <-l.stop:
					for range par {
						sem <- struct{}{} // the last ones have ended
					}
					return
				case <-tick.C:
				}
			}
			select {
			case sem <- struct{}{}:
			default:
				continue // par in flight already
			}
			go func() {
				defer func() { <-sem }()
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					l.failed.Add(1)
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				if tls.Client(nc, clientTLSConfig()).Handshake() != nil {
					l.failed.Add(1)
					return
				}
				l.made.Add(1)
			}()
		}
	}()
	return nil
}

// stopLoad stops the load, waits for its handshakes in flight, and
// returns "MADE FAILED ELAPSED-NS".
func (d *driverTLS) stopLoad() (string, error) {
	l := d.load
	if l == nil {
		return "", errors.New("hsstop: no load is running")
	}
	d.load = nil
	close(l.stop)
	<-l.done
	return fmt.Sprintf("%d %d %d", l.made.Load(), l.failed.Load(), time.Since(l.t0).Nanoseconds()), nil
}
