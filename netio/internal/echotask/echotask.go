// Package echotask is the echo server that netio's benchmarks and its
// system-call measurement (echoload) run: a spawned task per connection
// that writes back what it receives, with future.Next, which allocates
// nothing per request.
package echotask

import (
	"context"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
)

// Serve serves l: every connection gets back what it sends, until it ends.
func Serve(l *netio.Listener) {
	ex := l.Executor()
	netio.Serve(l, func(c *netio.Conn) {
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			defer c.Close()
			for {
				b, err := future.Next[[]byte](ctx, c)
				if err != nil {
					return struct{}{}, nil
				}
				c.Write(b)
			}
		})
	})
}
