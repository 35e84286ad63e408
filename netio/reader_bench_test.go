package netio_test

import (
	"bufio"
	"context"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// BenchmarkLines serves a line protocol (each line answered with itself)
// to 64 clients that send 16 lines of 64 bytes at once, read with a
// Reader: with ReadLines (callbacks) and with NextLine (a task per
// connection). It reports ns and allocations per line.
func BenchmarkLines(b *testing.B) {
	for _, form := range []string{"ReadLines", "NextLine"} {
		b.Run(form, func(b *testing.B) {
			ex := started(b)
			l := listen(b, ex)
			netio.Serve(l, func(c *netio.Conn) {
				r := netio.NewReader(c, 0)
				if form == "ReadLines" {
					r.ReadLines(func(line []byte) error {
						c.Write(line)
						c.WriteString("\n")
						return nil
					}).OnComplete(func(struct{}, error) { c.Close() })
					return
				}
				future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
					defer c.Close()
					for {
						line, err := r.NextLine(ctx)
						if err != nil {
							return struct{}{}, nil
						}
						c.Write(line)
						c.WriteString("\n")
					}
				})
			})
			benchLines(b, l, 64, 16)
		})
	}
}

func benchLines(b *testing.B, l *netio.Listener, clients, depth int) {
	line := strings.Repeat("x", 63) + "\n"
	req := []byte(strings.Repeat(line, depth))
	conns := make([]*bufio.Reader, clients)
	ncs := make([]interface{ Write([]byte) (int, error) }, clients)
	for i := range conns {
		nc := dialNet(b, l)
		ncs[i], conns[i] = nc, bufio.NewReader(nc)
	}
	per := b.N/(clients*depth) + 1
	b.ReportAllocs()
	b.ResetTimer()
	spindletest.Parallel(clients, func(i int) {
		buf := make([]byte, len(req))
		for range per {
			if _, err := ncs[i].Write(req); err != nil {
				b.Error(err)
				return
			}
			if _, err := ioReadFull(conns[i], buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(per*clients*depth), "ns/line")
}
