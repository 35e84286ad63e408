package main

import "testing"

// BenchmarkTLS runs the TLS cases: echo and idle over TLS, and handshakes.
func BenchmarkTLS(b *testing.B) { runGroup(b, "TLS") }
