package netio_test

import (
	"io"
	"net"
	"testing"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/netio/internal/echotask"
)

// benchEcho runs clients that each send depth 64-byte requests at once and
// read the replies back; it reports ns and allocs per request.
func benchEcho(b *testing.B, clients, depth int) {
	ex := started(b)
	l := listen(b, ex)
	echotask.Serve(l)
	benchClients(b, l, clients, depth)
}

// benchClients runs the clients of benchEcho against l.
func benchClients(b *testing.B, l *netio.Listener, clients, depth int) {
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

// BenchmarkEchoCallbacks is BenchmarkEcho with the server written with
// Recv and OnComplete: each receive costs its future.
func BenchmarkEchoCallbacks(b *testing.B) {
	ex := started(b)
	l := listen(b, ex)
	echo(l)
	benchClients(b, l, 64, 1)
}
