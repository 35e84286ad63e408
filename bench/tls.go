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

import (
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
	"github.com/spindle-rt/spindle/bench/netcase"
)

func init() {
	register(
		benchCase{Group: "TLS", Name: "echo/spindle", Unit: "req", Baseline: "echo/go_tls", Fn: netRequests(1, serveSpindleTLS)},
		benchCase{Group: "TLS", Name: "echo/go_tls", Unit: "req", Kind: kindGo, Fn: netRequests(1, serveGoTLS)},
		benchCase{Group: "TLS", Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/go_tls", Fn: netIdle(serveSpindleTLS)},
		benchCase{Group: "TLS", Name: "idle/go_tls", Unit: "conn", Metric: "B", Kind: kindGo, Fn: netIdle(serveGoTLS)},
		benchCase{Group: "TLS", Name: "handshake/spindle", Unit: "handshake", Fn: tlsHandshakes},
	)
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
