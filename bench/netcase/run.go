package netcase

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
)

// Server is a server under test, serving in this process.
type Server interface {
	// Addr is the TCP address it listens on.
	Addr() string
	// Close stops it and returns once its connections are closed and its
	// goroutines have returned.
	Close() error
}

// warmRounds is how many round trips each connection makes before a
// request case measures, so that buffers and pools have reached their
// steady state.
const warmRounds = 8

// Requests runs a request case: it starts a server with start, opens Conns
// connections to it from a child process, warms up, then makes at least
// b.N requests written depth at a time, and closes the server. It calls
// begin right before the measured requests and end with their number right
// after, for the caller's meter, and reports, for this process (the
// server's: the clients are in the child), "cpu-ns/req": its CPU time per
// request, and where Linux tells (/proc/self/io), "reads/req" and
// "writes/req": its read-like and write-like system calls (read, readv,
// recvmsg...; write, writev, sendmsg...; those that found nothing to read
// count too) per request, untraced.
func Requests(b *testing.B, start func() (Server, error), depth int, begin func(Server), end func(srv Server, requests int)) {
	b.Helper()
	srv, err := start()
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
	}()
	cl := startClientsFor(b, srv)
	defer cl.Close()
	if err := cl.Dial(srv.Addr(), Conns); err != nil {
		b.Fatal(err)
	}
	if _, err := cl.Run(Conns*depth*warmRounds, depth); err != nil {
		b.Fatal(err)
	}
	cpu0, cpuOK := cputime.Process()
	r0, w0, ioOK := ioCalls()
	begin(srv)
	n, err := cl.Run(b.N, depth)
	end(srv, n)
	r1, w1, ioOK1 := ioCalls()
	cpu1, cpuOK1 := cputime.Process()
	if err != nil {
		b.Fatal(err)
	}
	if cpuOK && cpuOK1 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/req")
	}
	if ioOK && ioOK1 {
		b.ReportMetric(float64(r1-r0)/float64(n), "reads/req")
		b.ReportMetric(float64(w1-w0)/float64(n), "writes/req")
	}
}

// IdleConns is how many connections the idle cases open.
const IdleConns = 10_000

// dialBatch is how many connections the child opens per command: a batch
// stays well below the listen backlog, so no SYN waits for a retransmit.
const dialBatch = 500

// Idle runs an idle case: each of the b.N iterations starts a server with
// start, opens IdleConns connections (TLSIdleConns to a TLS server) to it
// from a child process, each used for one round trip, and measures what
// the server's process holds per connection (see the package doc). It reports "B/conn" (live heap and
// stacks), "rss-B/conn" (resident set; Linux), "allocs/conn" and
// "ns/conn" (the time to open a connection and make its round trip). It
// skips when the limit on open files is too low and cannot be raised.
func Idle(b *testing.B, start func() (Server, error)) {
	b.Helper()
	if lim := RaiseFileLimit(); lim < IdleConns+256 {
		b.Skipf("netcase: %d idle connections need %d open files, RLIMIT_NOFILE allows %d and its hard limit cannot be raised here (ulimit -Hn)",
			IdleConns, IdleConns+256, lim)
	}
	var live, res, mallocs int64
	var elapsed time.Duration
	var units float64
	resOK := true
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		srv, err := start()
		if err != nil {
			b.Fatal(err)
		}
		cl := startClientsFor(b, srv)
		conns := IdleConns
		if _, ok := srv.(tlsServer); ok {
			conns = TLSIdleConns
		}
		units += float64(conns)
		live0, res0, ok0 := settle()
		m0 := mallocCount()
		b.StartTimer()
		t0 := time.Now()
		for open := 0; open < conns; open += dialBatch {
			if err := cl.Dial(srv.Addr(), min(dialBatch, conns-open)); err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(t0)
		b.StopTimer()
		mallocs += int64(mallocCount() - m0)
		live1, res1, ok1 := settle()
		live += live1 - live0
		res += res1 - res0
		resOK = resOK && ok0 && ok1
		if err := cl.Close(); err != nil {
			b.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(live)/units, "B/conn")
	if resOK {
		b.ReportMetric(float64(res)/units, "rss-B/conn")
	}
	b.ReportMetric(float64(mallocs)/units, "allocs/conn")
	b.ReportMetric(float64(elapsed.Nanoseconds())/units, "ns/conn")
}

// LiveBytes collects garbage and returns the bytes of live heap objects
// plus the bytes of goroutine stacks. Two collections: the first frees the
// stacks of goroutines that have exited, the second what the first left
// for finalizers and cleanups.
func LiveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// settle returns LiveBytes and, after the free memory has gone back to the
// system, the resident set size (ok false where it is not known).
func settle() (live, res int64, ok bool) {
	live = LiveBytes()
	debug.FreeOSMemory()
	res, ok = rss()
	return live, res, ok
}

// mallocCount returns the number of heap objects allocated so far.
func mallocCount() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}
