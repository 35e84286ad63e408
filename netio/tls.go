package netio

// TLS over netio connections: crypto/tls driven by the loop.
//
// A TLS connection is a Conn whose layer (layer.go) is a tlsState: a
// crypto/tls Conn over an in-memory transport (the tlsState itself is that
// net.Conn). It lives in two phases.
//
// The handshake runs on a goroutine of its executor's handshake pool
// (crypto/tls keeps a handshake's state on its stack, and its handshake
// errors are sticky, so it cannot be resumed on the loop). The goroutine's transport Read blocks
// on hin; when hin is empty it asks the loop (Submit of pull) to receive
// from the socket, and the loop copies what it read into hin. Its Write
// appends to hout and asks the loop (push) to write it to the socket. The
// connection is not seen by its user while this goes on: Accept and DialTLS
// deliver it once the handshake is done, and a handshake that fails or times
// out closes its connection only.
//
// Once established, everything runs on the loop, and the connection holds
// no goroutine: a receive calls tls.Conn.Read, whose transport Read copies
// from in (the ciphertext the socket gave, kept in the connection's read
// buffer) and reports errWouldBlock, a temporary net.Error, when in is
// empty. crypto/tls does not make a temporary error sticky and keeps a
// partial record in its own buffer, so the next receive resumes it. Writes
// append plaintext to pout; at the batch boundary (or Flush, or Close) it
// is sealed with tls.Conn.Write, whose transport Write appends the records
// to the connection's output buffer.
//
// The files, by concern: tls.go has the options and the public entry
// points (ListenTLS, DialTLS, ConnectionState); tls_handshake.go the
// handshake and its transport; tls_record.go the connection's TLS state,
// its invariants and the record path, the layer the connection calls;
// tls_pool.go the goroutines handshakes run on; tls_priority.go the
// priority at which they compute (tls_sched_*.go lower a thread); and
// tls_listen.go a listener's admission of handshakes.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// DefaultHandshakeTimeout bounds a TLS handshake, from the accept (or the
// connect) to its end, unless WithHandshakeTimeout says otherwise.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultMaxHandshakes is how many TLS handshakes a listener runs at once
// unless WithMaxHandshakes says otherwise: past it the listener stops
// accepting (connections wait in the kernel's backlog) until one ends.
const DefaultMaxHandshakes = 1024

// ErrHandshakeTimeout fails a TLS connection whose handshake did not end in
// its handshake timeout.
var ErrHandshakeTimeout = errors.New("netio: TLS handshake timed out")

// errTruncated ends the receives of a TLS connection whose peer closed the
// socket without a close_notify alert.
var errTruncated = fmt.Errorf("netio: TLS connection ended without close_notify: %w", io.ErrUnexpectedEOF)

// tlsOptions is the TLS part of a listener's configuration.
type tlsOptions struct {
	tlsSet        bool // WithTLS was given
	tlsConfig     *tls.Config
	hsTimeout     time.Duration
	maxHandshakes int
	hsOpts        bool // WithHandshakeTimeout or WithMaxHandshakes was given
}

// WithTLS makes the listener serve TLS with cfg: each connection it
// accepts is handshaken off the loop and delivered by Accept once the
// handshake is done; its receives return plaintext and its writes are
// sealed into records, on the loop. cfg must have a certificate
// (Certificates, GetCertificate or GetConfigForClient) and must not be
// modified once the listener uses it; GetCertificate and
// GetConfigForClient run on the handshake goroutines, so certificates can
// be reloaded without restarting the listener.
func WithTLS(cfg *tls.Config) ListenOption {
	return optionFunc(func(c *listenConfig) { c.tlsSet, c.tlsConfig = true, cfg })
}

// WithHandshakeTimeout bounds each TLS handshake of a listener made with
// WithTLS (default DefaultHandshakeTimeout): a connection whose handshake
// has not ended d after it was accepted is closed. d <= 0 means the
// default.
func WithHandshakeTimeout(d time.Duration) ListenOption {
	return optionFunc(func(c *listenConfig) { c.hsTimeout, c.hsOpts = d, true })
}

// WithMaxHandshakes bounds how many TLS handshakes a listener made with
// WithTLS runs at once (default DefaultMaxHandshakes). n <= 0 means the
// default.
func WithMaxHandshakes(n int) ListenOption {
	return optionFunc(func(c *listenConfig) { c.maxHandshakes, c.hsOpts = n, true })
}

// ListenTLS is Listen with WithTLS(cfg).
func ListenTLS(ex *executor.Executor, network, address string, cfg *tls.Config, opts ...ListenOption) (*Listener, error) {
	opts = append(opts[:len(opts):len(opts)], WithTLS(cfg))
	return Listen(ex, network, address, opts...)
}

// checkTLS validates the TLS options of a listener and fills in their
// defaults.
func (o *tlsOptions) checkTLS(network, address string) error {
	if !o.tlsSet {
		if o.hsOpts {
			return fmt.Errorf("netio: listen %s %s: WithHandshakeTimeout or WithMaxHandshakes without WithTLS", network, address)
		}
		return nil
	}
	cfg := o.tlsConfig
	if cfg == nil {
		return fmt.Errorf("netio: listen %s %s: WithTLS with nil *tls.Config", network, address)
	}
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil && cfg.GetConfigForClient == nil {
		return fmt.Errorf("netio: listen %s %s: WithTLS: the config has no certificate (Certificates, GetCertificate or GetConfigForClient)", network, address)
	}
	if o.hsTimeout <= 0 {
		o.hsTimeout = DefaultHandshakeTimeout
	}
	if o.maxHandshakes <= 0 {
		o.maxHandshakes = DefaultMaxHandshakes
	}
	return nil
}

// DialTLS connects to address as Dial does, then runs a TLS client
// handshake with cfg off the loop, and returns a future of the connection
// once the handshake is done. If cfg.ServerName is empty it is taken from
// address (as tls.Dial does). ctx bounds the connect and the handshake, and
// so does DefaultHandshakeTimeout. Any goroutine.
func DialTLS(ctx context.Context, ex *executor.Executor, network, address string, cfg *tls.Config) *future.Future[*Conn] {
	if ex == nil {
		panic("netio: DialTLS with nil executor")
	}
	if ctx == nil {
		panic("netio: DialTLS with nil context")
	}
	if cfg == nil {
		return future.Failed[*Conn](ex, errors.New("netio: DialTLS with nil *tls.Config"))
	}
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify && network != "unix" {
		host, _, err := net.SplitHostPort(address)
		if err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	p := future.NewPromise[*Conn](ex)
	Dial(ctx, ex, network, address).OnComplete(func(c *Conn, err error) {
		if err != nil {
			p.Reject(err)
			return
		}
		t := c.startTLS(tls.Client, cfg, DefaultHandshakeTimeout)
		var stop func() bool
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				toLoop(c.r.lp, func() {
					if !t.est {
						c.abort(ctx.Err())
					}
				}, func() {})
			})
		}
		t.done = func(err error) {
			if stop != nil {
				stop()
			}
			if err != nil {
				p.Reject(err)
				return
			}
			if !p.Resolve(c) {
				c.abort(net.ErrClosed) // the Dial was cancelled meanwhile
			}
		}
	})
	return p.Future()
}

// ConnectionState returns the state of c's TLS connection (version,
// cipher suite, the peer's certificates, the ALPN protocol, the server
// name) and true, or false for a connection without TLS. Any goroutine.
func (c *Conn) ConnectionState() (tls.ConnectionState, bool) {
	c.check("ConnectionState")
	t := c.tlsOf()
	if t == nil {
		return tls.ConnectionState{}, false
	}
	return t.tc.ConnectionState(), true
}
