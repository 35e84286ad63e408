package main

import "testing"

// BenchmarkNet runs the Net cases: TCP servers on loopback under 64 echo
// or pipelining clients, per request, and 10,000 idle connections, bytes
// per connection.
func BenchmarkNet(b *testing.B) { runGroup(b, "Net") }
