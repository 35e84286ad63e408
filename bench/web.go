package main

// BenchmarkWeb: package web's HTTP/1.1 server (spindle, one loop) and
// net/http (net_http) answering GET /kv/{key} with a 64-byte value on
// 127.0.0.1, loaded from a child process (bench/webcase), so this
// process's time and allocations are the server's.
//
//   - keepalive/: 50 keep-alive connections, one request in flight on
//     each; ns/req is wall time per request over all of them, allocs/req
//     the server's, cpu-ns/req the server process's CPU time per request
//     (which other load on the machine disturbs less than wall time),
//     p99-ns/req the 99th percentile of a round trip.
//   - pipelined/: the same with 16 requests in flight per connection
//     (written at once); p99 is of a round trip of 16.
//   - idle/: 10,000 keep-alive connections, each used once; B/conn is the
//     live heap and stacks the server's process holds per connection.

import (
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/cputime"
	"github.com/spindle-rt/spindle/bench/webcase"
)

func init() {
	register(
		benchCase{Group: "Web", Name: "keepalive/spindle", Unit: "req", Baseline: "keepalive/net_http", Fn: webRequests(1, serveWebSpindle)},
		benchCase{Group: "Web", Name: "keepalive/net_http", Unit: "req", Kind: kindGo, Fn: webRequests(1, webcase.ServeNetHTTP)},
		benchCase{Group: "Web", Name: "pipelined/spindle", Unit: "req", Baseline: "pipelined/net_http", Fn: webRequests(webcase.Depth, serveWebSpindle)},
		benchCase{Group: "Web", Name: "pipelined/net_http", Unit: "req", Kind: kindGo, Fn: webRequests(webcase.Depth, webcase.ServeNetHTTP)},
		benchCase{Group: "Web", Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/net_http", Fn: webIdle(serveWebSpindle)},
		benchCase{Group: "Web", Name: "idle/net_http", Unit: "conn", Metric: "B", Kind: kindGo, Fn: webIdle(webcase.ServeNetHTTP)},
	)
}

func serveWebSpindle() (webcase.Server, error) { return webcase.ServeSpindle(newExecutor()) }

// webRequests returns a request case: depth requests in flight on each
// connection to the server start makes.
func webRequests(depth int, start func() (webcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) {
		var m *meter
		var cpu0 time.Duration
		var cpuOK bool
		begin := func() {
			cpu0, cpuOK = cputime.Process()
			m = startMeter(b)
		}
		end := func(n int) {
			m.Stop(b, "req", float64(n), -1)
			if cpu1, ok := cputime.Process(); ok && cpuOK && n > 0 {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/req")
			}
		}
		webcase.Requests(b, start, depth, begin, end)
	}
}

func webIdle(start func() (webcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { webcase.Idle(b, start) }
}
