package main

// BenchmarkWeb's WebSocket cases: package web/websocket (spindle, one
// loop) and gorilla/websocket on net/http (gorilla, from the nested module
// bench/wspeer), each a server process of its own driven from here
// (bench/wscase), so both are measured from their own runtime's figures.
//
//   - ws_echo/: 50 WebSockets, one 64-byte binary message in flight on
//     each; ns/req is wall time per message over all of them, allocs/req
//     the server's, p99-ns/req the 99th percentile of a round trip.
//   - ws_idle/: 10,000 WebSockets, each used once; B/conn is the live heap
//     and stacks the server's process holds per WebSocket.

import (
	"testing"

	"github.com/spindle-rt/spindle/bench/wscase"
)

func init() {
	register(
		benchCase{Group: "Web", Name: "ws_echo/spindle", Unit: "req", Baseline: "ws_echo/gorilla", Fn: wsEcho(wscase.StartSpindle)},
		benchCase{Group: "Web", Name: "ws_echo/gorilla", Unit: "req", Kind: kindPeer, Fn: wsEcho(wscase.StartGorilla)},
		benchCase{Group: "Web", Name: "ws_idle/spindle", Unit: "conn", Metric: "B", Baseline: "ws_idle/gorilla", Fn: wsIdle(wscase.StartSpindle)},
		benchCase{Group: "Web", Name: "ws_idle/gorilla", Unit: "conn", Metric: "B", Kind: kindPeer, Fn: wsIdle(wscase.StartGorilla)},
	)
}

func wsEcho(start func(testing.TB) (*wscase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { wscase.Echo(b, start) }
}

func wsIdle(start func(testing.TB) (*wscase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { wscase.Idle(b, start) }
}
