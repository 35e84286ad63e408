//go:build linux

package netio_test

import (
	"net"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// rawDial opens n blocking client sockets to a with system calls only.
func rawDial(b *testing.B, a *net.TCPAddr, n int) []int {
	fds := make([]int, 0, n)
	sa := &unix.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	for range n {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Connect(fd, sa); err != nil {
			b.Fatal(err)
		}
		fds = append(fds, fd)
	}
	return fds
}

func rawClose(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// waitAccepted waits until the loop has run long enough for n accepts:
// it asks the loop until the accept backlog is empty.
func waitAccepted(b *testing.B, ex *executor.Executor, n int) {
	for range n/64 + 10 {
		spindletest.Await(b, future.Call(ex, func() (int, error) { return 0, nil }))
	}
}

// BenchmarkIdle reports the heap bytes an idle connection costs the server
// (a receive pending, no buffer held). The clients are raw sockets, which
// cost the Go heap nothing.
func BenchmarkIdle(b *testing.B) {
	const n = 2000
	for range b.N {
		b.StopTimer()
		ex := started(b)
		l := listen(b, ex)
		echo(l) // callbacks: an idle connection is a pending Recv, nothing more
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fds := rawDial(b, l.Addr().(*net.TCPAddr), n)
		// Every connection has been accepted and waits in a receive once
		// the loop answers a probe sent after the last connect.
		for range 3 {
			spindletest.Await(b, future.Call(ex, func() (int, error) { return 0, nil }))
		}
		waitAccepted(b, ex, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/conn")
		rawClose(fds)
		ex.Close()
	}
}
