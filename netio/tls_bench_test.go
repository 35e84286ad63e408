package netio_test

import (
	"crypto/tls"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkTLSPlainLatency measures the round-trip time of plain 64-byte
// echo requests on a loop, one in flight, alone (quiet) and while clients
// open TLS connections to a listener on the same loop at up to 500 a
// second (handshakes: full handshakes, each connection closed after it).
// It reports the requests' p50-us and p99-us, and the handshakes/s made.
// The clients run in this process, so their handshakes take CPU from the
// same two cores: compare the two cases of one run.
//
//	go test -run '^$' -bench TLSPlainLatency -benchtime 20000x ./netio
func BenchmarkTLSPlainLatency(b *testing.B) {
	for _, mode := range []string{"quiet", "handshakes"} {
		b.Run(mode, func(b *testing.B) {
			ex := started(b)
			l := listenTLS(b, ex, serverConfig())
			echo(l)
			plain := listen(b, ex)
			echo(plain)
			pc := dialNet(b, plain)

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var made atomic.Int64
			if mode == "handshakes" {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem := make(chan struct{}, 8)
					tick := time.NewTicker(2 * time.Millisecond)
					defer tick.Stop()
					cfg := &tls.Config{InsecureSkipVerify: true}
					for {
						select {
						case <-stop:
							for range cap(sem) {
								sem <- struct{}{}
							}
							return
						case <-tick.C:
						}
						select {
						case sem <- struct{}{}:
						default:
							continue // 8 in flight already
						}
						go func() {
							defer func() { <-sem }()
							nc, err := net.Dial("tcp", l.Addr().String())
							if err != nil {
								return
							}
							defer nc.Close()
							nc.SetDeadline(time.Now().Add(10 * time.Second))
							if tls.Client(nc, cfg).Handshake() == nil {
								made.Add(1)
							}
						}()
					}
				}()
			}
			msg, buf := make([]byte, 64), make([]byte, 64)
			lat := make([]time.Duration, 0, b.N)
			t0 := time.Now()
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				pc.SetDeadline(t.Add(10 * time.Second))
				if _, err := pc.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(pc, buf); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			elapsed := time.Since(t0)
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
			b.ReportMetric(float64(made.Load())/elapsed.Seconds(), "handshakes/s")
		})
	}
}
