// Package spindle is the root of spindle, an embeddable event loop for Go
// services: a single-threaded reactor executor that runs a FIFO queue of
// continuations on one goroutine, futures resolved by callback or by
// parking, spawned tasks written as straight-line Go that suspend by
// coroutine switch, async channels, a perfect-waking merge of N streams,
// allocation strategies, and lifecycle hooks with async-local storage;
// around them, the toolkit of a service (blocking work off the loop,
// timeouts, task groups, a semaphore), shards for more than one core, and
// the loop's figures for monitoring.
//
// This package holds no code; the API lives in its packages:
//
//   - [github.com/spindle-rt/spindle/executor]: the loop (New, Run, Start,
//     Submit, Post, AfterFunc, Shutdown, Close, Stats, stall reports).
//   - [github.com/spindle-rt/spindle/future]: Future, Promise, Then,
//     Transform, Await, Spawn, Call, Do, Sleep, Next and the combinators;
//     Go and GoContext for blocking work, Timeout and WithTimeout, and
//     Group for tasks run and awaited together.
//   - [github.com/spindle-rt/spindle/channel]: async channels bound to one
//     executor, with select.
//   - [github.com/spindle-rt/spindle/merge]: a merge of N streams that
//     polls only the woken ones.
//   - [github.com/spindle-rt/spindle/semaphore]: a weighted FIFO semaphore
//     bound to an executor, for bounding how much runs at once.
//   - [github.com/spindle-rt/spindle/shard]: one loop per core, calls
//     between shards in batches, and state sharded by key.
//   - [github.com/spindle-rt/spindle/netio]: TCP and Unix sockets served by
//     the loop itself (Listen, Dial, Conn, ServeGroup).
//   - [github.com/spindle-rt/spindle/fileio]: files on the loop: open,
//     read, write, append, sync with group commit, as futures; the
//     system calls run on a small worker pool (or the simulated disk).
//   - [github.com/spindle-rt/spindle/web]: HTTP/1.1 served on the loop over
//     netio: a server, a router with net/http's patterns, handlers that
//     answer later, net/http handlers mounted per route, Hijack for
//     upgrades; [github.com/spindle-rt/spindle/web/webtest] runs its
//     handlers request by request, as httptest does.
//   - [github.com/spindle-rt/spindle/web/websocket]: WebSocket (RFC 6455)
//     on the same loop after an upgrade: frames parsed in place, ping/pong,
//     close codes, UTF-8 checks, a message limit, Flush for backpressure.
//   - [github.com/spindle-rt/spindle/sim]: a program of executors, shards
//     and sockets on a simulated network and fake time, stepped in an
//     order one seed decides, so that a run replays byte for byte.
//   - [github.com/spindle-rt/spindle/metrics]: the loop's figures through
//     expvar and Prometheus' text format; the nested modules
//     contrib/prometheus and contrib/otel export them to Prometheus client
//     registries and OpenTelemetry.
//   - [github.com/spindle-rt/spindle/hooks]: lifecycle hooks and
//     async-local storage.
//   - [github.com/spindle-rt/spindle/alloc]: loop-owned free lists and slabs.
//   - [github.com/spindle-rt/spindle/examples/httpserver/counters]: the
//     state of the httpserver example, on a loop or behind a mutex, which
//     the bundled benchmarks serve too.
//   - [github.com/spindle-rt/spindle/bench/netcase]: the servers and the
//     load generator of the Net benchmarks, shared by the suite and
//     bench/peers.
//   - [github.com/spindle-rt/spindle/bench/webcase]: the servers and the
//     load generator of the Web benchmarks.
//   - [github.com/spindle-rt/spindle/bench/wscase]: the WebSocket cases of
//     the Web benchmarks, a server process and its clients.
//
// Programs: the examples under examples/ and the benchmark suite
// (go run ./bench).
//
// The package example is the README's quick start, kept compiled and run
// by go test.
package spindle
