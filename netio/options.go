package netio

import "time"

// DefaultOutputLimit is the output limit of a connection unless
// WithOutputLimit or Conn.SetOutputLimit says otherwise: how many bytes,
// written but not yet taken by the kernel, may wait for a peer that stopped
// reading (see Conn.SetOutputLimit).
const DefaultOutputLimit = 4 << 20

// DefaultLinger bounds how long Close keeps a connection open to send the
// output written before it, unless WithLinger or Conn.SetLinger says
// otherwise.
const DefaultLinger = 5 * time.Second

// A ListenOption configures a Listener and the connections it accepts.
type ListenOption interface {
	apply(*listenConfig)
}

type listenConfig struct {
	reusePort   bool
	outputLimit int
	linger      time.Duration
	idle        time.Duration // WithIdleTimeout (deadline.go)
	tlsOptions                // WithTLS and its options (tls.go)
}

type optionFunc func(*listenConfig)

func (f optionFunc) apply(c *listenConfig) { f(c) }

// WithReusePort sets SO_REUSEPORT on the listening socket, so that several
// executors (the shards of a shard.Group) can listen on one address; the
// kernel spreads the incoming connections over them. Every listener on the
// address must ask for it. It applies to "tcp", "tcp4" and "tcp6" only;
// Listen on "unix" with it fails.
func WithReusePort() ListenOption {
	return optionFunc(func(c *listenConfig) { c.reusePort = true })
}

// WithOutputLimit sets the output limit of every connection the listener
// accepts (see Conn.SetOutputLimit). n <= 0 means no limit.
func WithOutputLimit(n int) ListenOption {
	return optionFunc(func(c *listenConfig) { c.outputLimit = n })
}

// WithLinger sets how long Close keeps each accepted connection open to send
// the output written before it (see Conn.SetLinger). d <= 0 means Close
// drops unsent output and closes at once.
func WithLinger(d time.Duration) ListenOption {
	return optionFunc(func(c *listenConfig) { c.linger = d })
}
