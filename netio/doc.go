// Package netio serves TCP and Unix sockets on an executor's loop: the
// reactor over I/O.
//
// # The model
//
// A Listener or Conn is bound to one executor. Its accepts, its receives
// and the completion of its writes are events of that loop, and the code
// that handles them (callbacks, spawned tasks) runs on it, with the same
// no-lock guarantee as any other loop code: the state of a connection and
// of the server around it needs no mutex.
//
//	l, err := netio.Listen(ex, "tcp", ":7000")
//	netio.Serve(l, func(c *netio.Conn) {
//		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
//			defer c.Close()
//			for {
//				b, err := future.Next[[]byte](ctx, c) // suspends the task, not a goroutine
//				if err != nil {
//					return struct{}{}, nil // io.EOF, a reset, Close
//				}
//				c.Write(b) // never blocks; leaves at the end of the batch
//			}
//		})
//	})
//
// On Linux the loop waits for the sockets itself: when it has nothing to
// run it sleeps in epoll_wait, whose timeout is its next timer and which
// Submit wakes through an eventfd, so readiness, timers and submitted work
// come through one wait, and a connection costs no goroutine. Elsewhere,
// and on Linux with the purego build tag, a portable backend with the same
// behaviour runs a reader and a writer goroutine per connection over
// package net and hands their results to the loop.
//
// # Who may call what
//
// Listen, Dial, Listener.Accept, Listener.Close, Conn.Recv, Conn.Close
// and the getters may be called from any goroutine. Everything else on a
// Conn (TryRecv, PollRecv, Write, Buffered, Flush, CloseWrite and the
// setters) is loop-only: call it from a callback or task body of the
// connection's executor. Off the loop it panics with a message that names
// Submit, the way to get onto the loop.
//
// # Receiving, and the lifetime of the bytes
//
// Recv (a future), PollRecv (which makes a Conn a merge.Stream[[]byte] and
// a future.Poller[[]byte], so merge.Merge and future.Next work on it) and
// TryRecv return the next bytes received. The slice is the connection's
// own read buffer: it stays valid until the next receive on that
// connection, and code that keeps bytes longer copies them. Bytes are read
// from the socket only while a receive is pending, so a server that stops
// receiving from a connection leaves the bytes in the kernel and TCP flow
// control holds the peer back: nothing is buffered for it without bound.
//
// An idle connection holds no buffer: a read buffer is taken from a
// per-loop pool when bytes arrive and goes back when the next receive finds
// nothing; an output buffer is taken when the connection is written to and
// goes back once the output has drained. Buffers that grew for a burst are
// not pooled, so memory shrinks back after it.
//
// A receive ends with io.EOF once the peer has shut its side and
// everything before was received; with the socket's error on a failure
// (errors.Is(err, syscall.ECONNRESET) for a reset); with net.ErrClosed once
// the connection is closed; with executor.ErrClosed once its executor is.
//
// # Writing and backpressure
//
// Write copies into the connection's output buffer and never blocks. At the
// end of the loop's batch of tasks the buffer goes to the kernel in one
// write per connection, so the replies to pipelined requests leave in one
// system call; what the socket cannot take yet leaves as it drains. Flush
// returns a future that completes once everything written before it has
// been taken by the kernel: a writer that produces a lot awaits it, and so
// goes at its peer's pace. Buffered says how much is waiting.
//
// A peer that never reads would make the output grow for ever, so each
// connection has an output limit (DefaultOutputLimit; WithOutputLimit,
// Conn.SetOutputLimit): the Write that would cross it fails with
// ErrOutputLimit and the connection is closed at once. A peer that
// vanished without a FIN or a reset (a half-open connection) is found out
// by TCP keep-alive probes (every 15 seconds of silence, as package net
// sets them) and its receives fail with the socket's error. Such peers, a
// peer that resets, or one that sends garbage cost their own connection
// only; the loop goes on serving the others.
//
// # Closing
//
// Close sends what was written before it, for at most the linger time
// (DefaultLinger; WithLinger, Conn.SetLinger), then closes the socket;
// pending receives fail with net.ErrClosed at once. CloseWrite shuts the
// write side once the buffered output is sent (the peer reads EOF) and
// receiving goes on. Listener.Close frees the address before it returns.
// Executor.Close (and Shutdown, once it has drained the queue) closes every
// listener and connection of the executor at once and fails what is pending
// with executor.ErrClosed; no goroutine and no file descriptor of theirs
// outlives it.
//
// # Shards
//
// One loop runs on one core. WithReusePort lets several executors (the
// shards of a shard.Group) listen on one address, and the kernel spreads
// the connections over them. ListenGroup opens one such listener per
// shard and ServeGroup serves each on its shard's loop: a connection
// lives and dies on the shard that accepted it, and state the shards share
// goes through shard.Call.
//
// # TLS
//
// WithTLS (or ListenTLS) makes a listener serve TLS with a *tls.Config,
// and DialTLS dials a TLS connection. A TLS connection is a Conn like any
// other: receives return plaintext, writes take plaintext, Close sends
// close_notify; ConnectionState says what the handshake agreed (version,
// ALPN protocol, server name, the peer's certificates).
//
//	l, err := netio.ListenTLS(ex, "tcp", ":6443", &tls.Config{Certificates: certs})
//	netio.Serve(l, handle) // handle gets each connection once its handshake is done
//
// The handshake runs off the loop, on a pool of goroutines (crypto/tls
// needs one for it), fed by the loop through an in-memory transport; a
// handshake that fails or outlasts WithHandshakeTimeout closes its
// connection only, and Accept never sees it. Once established, records are
// opened and sealed on the loop (crypto/tls over the same transport, which
// reports "would block" when it has no bytes), so an established TLS
// connection holds no goroutine. Output written in one batch is sealed and
// sent together. A peer that closes without close_notify ends the
// receives with an error matching io.ErrUnexpectedEOF. Certificates are
// reloaded through tls.Config.GetCertificate, which runs per handshake.
//
// # netio or net/http
//
// netio fits servers that speak their own protocol over TCP or Unix
// sockets (RESP, line protocols, binary framing, proxies), in the clear or
// over TLS, and want the state they serve owned by the loop, without a
// lock and without a goroutine per connection. For HTTP/1.1 on the loop, use package
// github.com/spindle-rt/spindle/web, which serves it over netio (and
// mounts net/http handlers for the routes that need them); net/http
// itself remains the choice for HTTP/2, its handlers reaching a loop with
// future.Do.
package netio
