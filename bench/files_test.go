package main

import "testing"

// BenchmarkFiles runs the Files cases: a loop writing and fsyncing a file
// while it serves 50 echo clients, per request, and durable appends from
// 64 writers, per append.
func BenchmarkFiles(b *testing.B) { runGroup(b, "Files") }
