package websocket

import (
	"strconv"
	"time"
)

// Defaults of the options.
const (
	// DefaultMaxMessageSize is the longest message a Conn receives (its
	// frames put together) unless WithMaxMessageSize says otherwise: 1 MiB.
	// A longer one closes the connection with CloseTooBig.
	DefaultMaxMessageSize = 1 << 20
	// DefaultCloseTimeout is how long a Conn that sent its close frame
	// waits for the peer's before it closes the connection.
	DefaultCloseTimeout = 5 * time.Second
	// DefaultWriteHighWater is the output, waiting to be sent, past which
	// Serve stops reading until it has drained.
	DefaultWriteHighWater = 256 << 10
)

// An Option configures a Conn (NewConn, Upgrade).
type Option func(*config)

type config struct {
	maxSize      int
	closeTimeout time.Duration
	highWater    int
	checkOrigin  func(origin, host string) bool
}

var defaultConfig = config{
	maxSize:      DefaultMaxMessageSize,
	closeTimeout: DefaultCloseTimeout,
	highWater:    DefaultWriteHighWater,
}

// WithMaxMessageSize sets the longest message received, in bytes; n <= 0
// means DefaultMaxMessageSize.
func WithMaxMessageSize(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = DefaultMaxMessageSize
		}
		c.maxSize = n
	}
}

// WithCloseTimeout sets how long a Conn that sent its close frame waits
// for the peer's; d <= 0 means DefaultCloseTimeout.
func WithCloseTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = DefaultCloseTimeout
		}
		c.closeTimeout = d
	}
}

// WithWriteHighWater sets the output, in bytes, past which Serve stops
// reading until it has drained; n <= 0 means DefaultWriteHighWater.
func WithWriteHighWater(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = DefaultWriteHighWater
		}
		c.highWater = n
	}
}

// WithCheckOrigin sets the check of a request's Origin header that Upgrade
// makes (origin is the header, empty when absent; host the request's
// Host): an upgrade it refuses is answered 403. By default a request
// without Origin (not from a browser) or from the same host is accepted,
// as gorilla/websocket does, so that a page of another site cannot open
// a WebSocket with the user's cookies; fn replaces that check (return true
// to accept every origin).
func WithCheckOrigin(fn func(origin, host string) bool) Option {
	return func(c *config) { c.checkOrigin = fn }
}

func itoa(n int) string { return strconv.Itoa(n) }
