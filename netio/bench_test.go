package netio_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// serveEcho serves l with a spawned task per connection that writes back
// what it receives: the steady state allocates nothing.
func serveEcho(l *netio.Listener) {
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

// benchEcho runs clients that each send depth 64-byte requests at once and
// read the replies back; it reports ns and allocs per request.
func benchEcho(b *testing.B, clients, depth int) {
	ex := started(b)
	l := listen(b, ex)
	serveEcho(l)
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = dialNet(b, l)
	}
	req := make([]byte, 64*depth)
	per := b.N/(clients*depth) + 1
	b.ReportAllocs()
	b.ResetTimer()
	spindletest.Parallel(clients, func(i int) {
		nc := conns[i]
		buf := make([]byte, len(req))
		for range per {
			if _, err := nc.Write(req); err != nil {
				b.Error(err)
				return
			}
			if _, err := io.ReadFull(nc, buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(per*clients*depth), "ns/req")
}

func BenchmarkEcho(b *testing.B)     { benchEcho(b, 64, 1) }
func BenchmarkPipeline(b *testing.B) { benchEcho(b, 64, 16) }
