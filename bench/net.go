package main

// BenchmarkNet: TCP servers on 127.0.0.1 that answer each 64-byte request
// with a 64-byte reply, loaded by clients in a child process
// (bench/internal/netcase), so that this process's time, allocations and
// memory are the server's. spindle serves every connection from one loop
// with netio; go_net runs a goroutine per connection on package net with
// bufio, flushing when no more input is buffered.
//
//   - echo/: 64 connections, one request in flight on each; ns/req is wall
//     time per request over all of them, allocs/req the server's.
//   - pipeline/: the same with 16 requests per write.
//   - idle/: 10,000 connections, each used once; B/conn is what the
//     server's process holds per connection (live heap and goroutine stacks
//     after collecting garbage, netcase's package doc says what is left
//     out).

import (
	"testing"

	"github.com/spindle-rt/spindle/bench/internal/netcase"
	"github.com/spindle-rt/spindle/executor"
)

func init() {
	register(
		benchCase{Group: "Net", Name: "echo/spindle", Unit: "req", Baseline: "echo/go_net", Fn: netRequests(1, serveSpindle)},
		benchCase{Group: "Net", Name: "echo/go_net", Unit: "req", Kind: kindGo, Fn: netRequests(1, serveGoNet)},
		benchCase{Group: "Net", Name: "pipeline/spindle", Unit: "req", Baseline: "pipeline/go_net", Fn: netRequests(netcase.Depth, serveSpindle)},
		benchCase{Group: "Net", Name: "pipeline/go_net", Unit: "req", Kind: kindGo, Fn: netRequests(netcase.Depth, serveGoNet)},
		benchCase{Group: "Net", Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/go_net", Fn: netIdle(serveSpindle)},
		benchCase{Group: "Net", Name: "idle/go_net", Unit: "conn", Metric: "B", Kind: kindGo, Fn: netIdle(serveGoNet)},
	)
}

// serveSpindle starts the spindle server on an executor of its own.
func serveSpindle() (netcase.Server, error) { return netcase.ServeSpindle(newExecutor()) }

func serveGoNet() (netcase.Server, error) { return netcase.ServeGoNet() }

// netRequests returns a request case: depth requests per write to the
// server start makes. It reports tasks/req for servers on an executor.
func netRequests(depth int, start func() (netcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) {
		var m *meter
		var t0 uint64
		netcase.Requests(b, start, depth, func(srv netcase.Server) {
			t0, _ = serverTasks(srv)
			m = startMeter(b)
		}, func(srv netcase.Server, n int) {
			t := -1.0
			if t1, ok := serverTasks(srv); ok {
				t = float64(t1 - t0)
			}
			m.Stop(b, "req", float64(n), t)
		})
	}
}

// serverTasks returns the tasks run so far by srv's executor, and false for
// a server without one.
func serverTasks(srv netcase.Server) (uint64, bool) {
	if s, ok := srv.(interface{ Executor() *executor.Executor }); ok {
		return s.Executor().Stats().TasksRun, true
	}
	return 0, false
}

// netIdle returns an idle case on the servers start makes.
func netIdle(start func() (netcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { netcase.Idle(b, start) }
}
