// Package peers compares spindle with other projects that do the same jobs:
// goja_nodejs's event loop, golang.org/x/sync (errgroup, semaphore),
// sourcegraph/conc, the Go promise libraries the module proxy serves, gnet
// v2, fasthttp, nbio, and plain Go.
//
// It is a module of its own (bench/peers/go.mod), so that spindle's users
// never download the peers. Run it with
//
//	cd bench/peers && go test -run '^$' -bench .
//
// or add it to the bundled suite's table with `go run ./bench -peers` from the
// repository's root: the runner starts `go test` here as a subprocess and reads
// its output (set SPINDLE_PEERS_CASES=json to have the case table printed
// first, as the runner does).
//
// The groups, each a Benchmark function:
//
//   - Submit: closures handed to a loop from a foreign goroutine, then wait
//     for all: spindle's Submit, goja_nodejs's RunOnLoop, a channel to a
//     worker goroutine.
//   - Timers: 10,000 timers due in 0-10 ms: spindle's AfterFunc, goja_nodejs's
//     SetTimeout, time.AfterFunc. Ranked by CPU time per timer.
//   - Fanout: 1,000 small jobs whose results are summed: spindle's
//     future.Call and future.All, errgroup (with and without a limit),
//     x/sync's semaphore, conc's result pool, sync.WaitGroup.
//   - Chain: 32 Then links on a pending promise, resolved from a foreign
//     goroutine that waits for the tail: spindle's future.Then and each
//     promise library's Then (or its equivalent), goroutines chained by
//     channels.
//   - Memory: bytes added to the live heap and stacks per waiter with 10,000
//     waiters pending on one event. link/: spindle's pending Then links
//     against the promise libraries' and goroutines blocked on a channel;
//     task/: spindle's suspended tasks against the same goroutines.
//   - Net: the bundled suite's Net cases on spindle's netio and on gnet v2
//     (one event loop each): 64 loopback clients in a child process, one
//     64-byte request in flight per connection (echo/) or 16 per write
//     (pipeline/), per request; and 10,000 idle connections (idle/), bytes
//     the server's process holds per connection.
//   - Web: the bundled suite's Web cases on spindle's web, fasthttp and
//     nbio's nbhttp (net/http beside them): GET /kv/{key} from 50
//     keep-alive clients in a child process, one request in flight per
//     connection (keepalive/) or 16 (pipelined/), per request; 10,000 idle
//     keep-alive connections (idle/); and WebSocket echo (ws_echo/) and
//     10,000 idle WebSockets (ws_idle/) on spindle's web/websocket and
//     nbio's nbhttp/websocket, each server in a process of its own.
//
// Each group's Note, and docs/benchmarks.md, say what the comparison leaves
// out. go.mod pins every peer's version; each case names it (Version).
package peers
