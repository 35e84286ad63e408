package main

// BenchmarkTLS: the Net echo and idle cases over TLS 1.3, and full
// handshakes. spindle serves every connection from one loop with netio's
// TLS (handshakes on netio's pool of goroutines, records sealed and opened
// on the loop); go_tls is crypto/tls over package net with a goroutine per
// connection. The clients are in a child process (bench/netcase), a
// goroutine per connection on crypto/tls, the same for both servers.
//
//   - echo/: 64 connections, one 64-byte request in flight on each.
//   - idle/: 2,000 connections, each used once; B/conn as in Net's idle.
//   - handshake/spindle: full handshakes (ECDSA P-256, X25519, no
//     resumption), 8 clients at a time, each on a new connection that makes
//     one round trip and closes; handshakes/s and the server's
//     cpu-ns/handshake.
//   - plain_beside_handshakes/spindle: one loop serves a plain echo and a
//     TLS echo; a child times plain requests, one in flight, alone (quiet)
//     and while another child opens TLS connections at 500 a second (hs),
//     each closed after its full handshake. It reports the p50 and p99 of
//     each phase in microseconds, hs-p99 / quiet-p99 (p99-ratio), the
//     handshakes/s made, and the server's CPU use in each phase (% of one
//     core). The two phases alternate in every run.
//     The handshakes compute at netio's default priority (normal).
//   - plain_beside_handshakes/idle_priority: the same with the handshakes
//     computing at the idle priority (netio.HandshakePriorityIdle).

import (
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/netio"
)

func init() {
	register(
		benchCase{Group: "TLS", Name: "echo/spindle", Unit: "req", Baseline: "echo/go_tls", Fn: netRequests(1, serveSpindleTLS)},
		benchCase{Group: "TLS", Name: "echo/go_tls", Unit: "req", Kind: kindGo, Fn: netRequests(1, serveGoTLS)},
		benchCase{Group: "TLS", Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/go_tls", Fn: netIdle(serveSpindleTLS)},
		benchCase{Group: "TLS", Name: "idle/go_tls", Unit: "conn", Metric: "B", Kind: kindGo, Fn: netIdle(serveGoTLS)},
		benchCase{Group: "TLS", Name: "handshake/spindle", Unit: "handshake", Fn: tlsHandshakes},
		benchCase{Group: "TLS", Name: "plain_beside_handshakes/spindle", Unit: "req", Fn: tlsPlainBesideHandshakes(netio.HandshakePriorityNormal)},
		benchCase{Group: "TLS", Name: "plain_beside_handshakes/idle_priority", Unit: "req", Kind: kindVariant, Fn: tlsPlainBesideHandshakes(netio.HandshakePriorityIdle)},
	)
}

// besideRate and besidePar are the handshake load of
// plain_beside_handshakes: new TLS connections a second, at most so many
// in flight.
const besideRate, besidePar = 500, 32

// tlsPlainBesideHandshakes times b.N plain requests alone, then b.N while
// TLS connections arrive at besideRate a second, on the same loop, with
// the handshakes computing at priority prio.
func tlsPlainBesideHandshakes(prio netio.HandshakePriority) func(b *testing.B) {
	return func(b *testing.B) { plainBesideHandshakes(b, prio) }
}

func plainBesideHandshakes(b *testing.B, prio netio.HandshakePriority) {
	defer netio.SetHandshakePriority(netio.SetHandshakePriority(prio))
	srv, err := netcase.ServeSpindleBeside(newExecutor())
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
	}()
	plain := netcase.StartClients(b)
	defer plain.Close()
	hs := netcase.StartTLSClients(b)
	defer hs.Close()
	if _, err := plain.Latency(srv.Addr(), 1000); err != nil { // warm up
		b.Fatal(err)
	}
	if err := hs.Handshakes(srv.TLSAddr(), 16, besidePar); err != nil {
		b.Fatal(err)
	}
	m := startMeter(b)
	cpu0, cpuOK0 := cputime.Process()
	t0 := time.Now()
	quiet, err := plain.Latency(srv.Addr(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	cpu1, cpuOK1 := cputime.Process()
	t1 := time.Now()
	if err := hs.StartHandshakeLoad(srv.TLSAddr(), besideRate, besidePar); err != nil {
		b.Fatal(err)
	}
	loaded, err := plain.Latency(srv.Addr(), b.N)
	if err != nil {
		b.Fatal(err)
	}
	cpu2, cpuOK2 := cputime.Process()
	t2 := time.Now()
	made, failed, elapsed, err := hs.StopHandshakeLoad()
	if err != nil {
		b.Fatal(err)
	}
	m.Stop(b, "req", float64(2*b.N), -1)
	if failed > 0 {
		b.Errorf("%d of %d handshakes failed", failed, made+failed)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(quiet.P50), "quiet-p50-us")
	b.ReportMetric(us(quiet.P99), "quiet-p99-us")
	b.ReportMetric(us(loaded.P50), "hs-p50-us")
	b.ReportMetric(us(loaded.P99), "hs-p99-us")
	b.ReportMetric(float64(loaded.P99)/float64(quiet.P99), "p99-ratio")
	b.ReportMetric(float64(made)/elapsed.Seconds(), "handshakes/s")
	if cpuOK0 && cpuOK1 && cpuOK2 {
		b.ReportMetric(100*float64(cpu1-cpu0)/float64(t1.Sub(t0)), "quiet-cpu-%")
		b.ReportMetric(100*float64(cpu2-cpu1)/float64(t2.Sub(t1)), "hs-cpu-%")
	}
}

func serveSpindleTLS() (netcase.Server, error) { return netcase.ServeSpindleTLS(newExecutor()) }

func serveGoTLS() (netcase.Server, error) { return netcase.ServeGoTLS() }

// tlsHandshakes makes b.N full handshakes with the spindle TLS server.
func tlsHandshakes(b *testing.B) {
	srv, err := netcase.ServeSpindleTLS(newExecutor())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl := netcase.StartTLSClients(b)
	defer cl.Close()
	if err := cl.Handshakes(srv.Addr(), 8, 8); err != nil { // warm up
		b.Fatal(err)
	}
	cpu0, cpuOK := cputime.Process()
	m := startMeter(b)
	t0 := time.Now()
	if err := cl.Handshakes(srv.Addr(), b.N, 8); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(t0)
	m.Stop(b, "handshake", float64(b.N), -1)
	cpu1, cpuOK1 := cputime.Process()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "handshakes/s")
	if cpuOK && cpuOK1 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/handshake")
	}
}
