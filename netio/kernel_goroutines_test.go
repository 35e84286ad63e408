//go:build linux && !purego

package netio_test

import (
	"net"
	"runtime"
	"testing"
)

// On epoll a connection costs no goroutine: 1,000 open connections, each
// with a receive pending, add fewer than 10.
func TestThousandConnsFewGoroutines(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	echo(l)
	// Warm up: the reactor exists and the loop sleeps in epoll.
	w := dialNet(t, l)
	w.Write([]byte("x"))
	readN(t, w, 1)
	before := runtime.NumGoroutine()
	const n = 1000
	ncs := make([]net.Conn, 0, n)
	for range n {
		nc := dialNet(t, l)
		ncs = append(ncs, nc)
	}
	// Every connection echoes, so each has been accepted and receives.
	for _, nc := range ncs {
		nc.Write([]byte("y"))
	}
	for _, nc := range ncs {
		readN(t, nc, 1)
	}
	if added := runtime.NumGoroutine() - before; added >= 10 {
		t.Fatalf("1,000 open connections added %d goroutines", added)
	}
}
