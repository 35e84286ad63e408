package webcase

import (
	"runtime"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/netcase"
)

// Idle runs an idle case: each of b.N iterations starts a server, opens
// IdleConns connections to it from the child, each used for one request,
// and measures the live heap and goroutine stacks the server's process
// holds per connection. It reports B/conn and ns/conn (the time to open a
// connection and make its round trip).
func Idle(b *testing.B, start func() (Server, error)) {
	if lim := netcase.RaiseFileLimit(); lim < IdleConns+256 {
		b.Skipf("webcase: %d idle connections need %d open files, RLIMIT_NOFILE allows %d", IdleConns, IdleConns+256, lim)
	}
	var live int64
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		srv, err := start()
		if err != nil {
			b.Fatal(err)
		}
		cl := StartClients(b)
		live0 := liveBytes()
		b.StartTimer()
		t0 := time.Now()
		for open := 0; open < IdleConns; open += 500 {
			if err := cl.Dial(srv.Addr(), min(500, IdleConns-open)); err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(t0)
		b.StopTimer()
		live += liveBytes() - live0
		cl.Close()
		srv.Close()
	}
	units := float64(b.N * IdleConns)
	b.ReportMetric(float64(live)/units, "B/conn")
	b.ReportMetric(float64(elapsed.Nanoseconds())/units, "ns/conn")
}

// liveBytes is the live heap plus goroutine stacks, after collecting.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}
