// Package netcase holds what the Net benchmarks of the bundled suite
// (package main of bench) and of bench/peers share: the load generator, the
// servers they measure (spindle's netio and a goroutine per connection on
// package net) and the reading of the memory an idle connection holds.
//
// # The load
//
// The clients run in a child process, the benchmark binary itself started
// again with ChildEnv set (the package's init turns such a process into
// the load generator before main or TestMain runs). So the server under test
// is alone in its process: the allocations, heap, stacks, CPU time and
// system calls of that process are the server's, and 10,000 idle
// connections take 10,000 descriptors on each side instead of 20,000 in one
// process. On Linux the child drives every connection from one thread with
// epoll and raw read and write calls (two system calls per round trip plus
// a share of an epoll_wait); elsewhere it runs a goroutine per connection on
// package net. Either way it is the same client for every server, and its
// cost is inside the wall time per request of every server alike.
//
// A request is Size bytes; a server answers each request with a reply of
// the same Size bytes (the request, echoed). Requests are written Depth at a
// time in one write (1 for the echo cases, 16 for the pipeline cases), and a
// connection's next write waits until every reply to the previous one has
// arrived. The child checks every byte of every reply.
//
// # Idle connections
//
// Idle opens IdleConns connections, makes one round trip on each (so every
// connection has been used once, as a keep-alive connection between two
// requests has), and reports what the server's process holds per
// connection: the growth of its live heap plus goroutine stacks after two
// collections (B/conn), and of its resident set after the collection and
// runtime/debug.FreeOSMemory (rss-B/conn, Linux only). Not counted, for any
// server: the kernel's socket buffers; the runtime's poll descriptors of
// package net (they live outside the heap, in the runtime's own persistent
// allocations, so they show in rss-B/conn only); and goroutine descriptors
// the runtime keeps from an earlier run and reuses (after the first run a new
// goroutine takes one already allocated). The last two favour the
// goroutine-per-connection server.
package netcase
