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
//				if c.Buffered() > 64<<10 {
//					// The peer reads slower than it sends: wait until the
//					// kernel has taken the output, receiving nothing meanwhile,
//					// so TCP holds the peer back.
//					if _, err := c.Flush().Await(ctx); err != nil {
//						return struct{}{}, nil
//					}
//				}
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
// # Backends
//
// What serves a loop's sockets is its backend, one of four, each a type of
// its own behind one contract (backend.go): epoll and io_uring (Linux; the
// loop waits in epoll_wait, or in its io_uring, which other components of
// the loop may submit to as well), the portable one (package net), and the
// simulation's (package sim). Use chooses one per executor before its
// first socket; otherwise the environment variable SPINDLE_NETIO does
// ("uring" or "epoll"), so a built program switches without rebuilding;
// otherwise epoll on Linux, the portable backend with -tags purego and
// elsewhere. An io_uring the kernel refuses falls back to epoll and says
// so once (log/slog). Stats.Backend names what serves each executor.
// A backend's files carry its name as a prefix: epoll_*.go, uring_*.go,
// portable_*.go, sim_*.go; kernel_*.go is the socket code epoll and
// io_uring share. The contract has two sides: backend.go, what a backend
// does for the shared code (the backend interface), and backend_conn.go,
// what of the shared code a backend may use (the fields it reads and
// writes, the calls it makes, each with its rule). A backend's files use
// nothing else of the shared files but the types Conn, Listener, reactor,
// listenConfig and fileOut, the exported API and the exported errors and
// constants; the shared files reach a backend only through the contract.
// A test (contract_internal_test.go) type-checks the package and fails on
// a use that goes around it, either way.
//
// # Who may call what
//
// Listen, Dial, Listener.Accept, Listener.Close, Conn.Recv, Conn.Close
// and the getters may be called from any goroutine. Everything else on a
// Conn (TryRecv, PollRecv, Write, Buffered, Flush, CloseWrite and the
// setters) is loop-only: call it from a callback or task body of the
// connection's executor. Off the loop it panics with a message that names
// Submit, the way to get onto the loop. A Reader is loop-only too. A
// Server's Serve may be called from any goroutine, its Shutdown and Close
// from any goroutine but its loops' (they wait for the loops).
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
// # Lines, delimiters and counts: Reader
//
// A Reader buffers a connection's receives for protocols that frame their
// messages: ReadLine (up to "\n", without the "\n" or "\r\n"), ReadSlice
// (up to a delimiter), ReadN (exactly n bytes) and Recv (whatever is
// there). A token that lies in one receive is returned as a slice of the
// connection's read buffer, with no copy; only the start of a token that
// straddles two receives is carried in a buffer of the Reader's, which goes
// back to the loop's pool once read, so an idle Reader holds none. The
// slice is valid until the next read. A line or token longer than the
// Reader's limit fails with ErrTooLong (bufio.ErrTooLong's meaning: the
// framing is lost, the Reader is done), so a peer cannot make it buffer
// without bound. No byte is lost across reads, cancelled reads or
// timeouts.
//
// Each read has the forms a Conn's receive has: a future (ReadLine), a try
// form that returns at once (TryReadLine: the bytes are already there), a
// form for a spawned task that suspends it (NextLine, through future.Next)
// and, for raw bytes, PollRecv. ReadLines calls a function with every line
// as it arrives until the reading ends, and its future says why:
//
//	netio.NewReader(c, 4096).ReadLines(func(line []byte) error {
//		return handle(c, line) // an error stops the reading
//	}).OnComplete(func(_ struct{}, err error) {
//		c.Close() // io.EOF, ErrTooLong, a reset, Close, ErrServerClosed...
//	})
//
// ReadLines, NextLine and the try forms allocate nothing per line.
//
// # Deadlines
//
// SetReadDeadline, SetWriteDeadline and SetDeadline work as a net.Conn's:
// past the read deadline the pending receives and every later one fail
// with os.ErrDeadlineExceeded (errors.Is), until the deadline is moved. A
// receive that times out is withdrawn, not abandoned: it consumed nothing,
// so the bytes that arrive later (and those a Reader holds) go to the next
// receive, which future.Timeout around a Recv cannot promise (the
// abandoned Recv still takes the next bytes). Past the write deadline,
// Write and Flush fail with os.ErrDeadlineExceeded; the output already
// written stays and keeps leaving. SetIdleTimeout (WithIdleTimeout for a
// listener's connections) closes a connection on which no byte was
// received or sent for that long; its receives fail with ErrIdleTimeout.
// Deadlines are timers of the loop: no goroutine watches them, and moving
// a deadline later starts no timer.
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
// Conn.SetOutputLimit), which bounds what is held for a peer that stopped
// reading, and only that. Output the kernel takes is never held: a Write
// of any size, or any number of Writes in one batch, goes to the kernel at
// the batch's end. A Write fails with ErrOutputLimit, and the connection
// is closed at once, when the output waiting (Buffered, with the new
// bytes) would pass the limit and either the peer has stopped reading (the
// socket is full and the kernel has taken none of the output for a
// second) or the output would pass four times the limit whatever the peer
// does. A peer that reads, however slowly, is never cut below four times
// the limit; a writer that awaits Flush never comes near it.
//
// A peer that vanished without a FIN or a reset (a half-open connection) is
// found out by TCP keep-alive probes (every 15 seconds of silence, as
// package net sets them) and its receives fail with the socket's error.
// Such peers, a peer that resets, or one that sends garbage cost their own
// connection only; the loop goes on serving the others.
//
// # Peers that leave
//
// A peer that closes or resets its connection while a receive is pending
// ends that receive (io.EOF, or the socket's error). While none is pending
// netio still hears of it (epoll's hang-up report; the portable backend's
// reader goroutine peeks at an idle socket): a reset, or an EOF on a
// connection from which nothing was received yet, ends the connection at
// once: the socket is freed as soon as nothing is left to send, the next
// receive fails at once with io.EOF (or the error), and Conn.Done, a
// future an owner may hold instead of a receive, completes with it. An EOF
// after bytes were received is left to the next receive, since the peer
// may have shut only its write side and wait for a reply (a half-close).
//
// # Closing
//
// Close sends what was written before it, for at most the linger time
// (DefaultLinger; WithLinger, Conn.SetLinger), then closes the socket;
// pending receives fail with net.ErrClosed at once. When the socket may
// still reset (input arrived that was not read, or output is not yet
// acknowledged), closing it at once would make the kernel send a reset and
// lose the output, so Close lingers as nginx and net/http do: it shuts the
// write side (the peer reads everything, then EOF), reads and discards
// input until the peer's EOF, then closes; the linger time bounds all of
// it. CloseWrite shuts the write side once the buffered output is sent
// (the peer reads EOF) and receiving goes on. Listener.Close frees the
// address before it returns.
//
// Executor.Close closes every listener and connection of the executor at
// once and fails what is pending with executor.ErrClosed; no goroutine and
// no file descriptor of theirs outlives it. Executor.Shutdown drains
// instead, the same on every backend: at its first batch boundary every
// listener being accepted from closes (new connections are refused at
// once; Serve stops); nothing more is read for a receive, so peers that
// keep sending cannot keep the drain going; the work already received
// runs, its output is sent, and each connection still holding output once
// the queue is empty is closed as Close closes it. The executor closes when
// the queue is empty and every closing connection has handed its output to
// the kernel (on Linux, until the peer acknowledged it), within the linger
// time; then the connections still open close with executor.ErrClosed. A
// Shutdown whose ctx ends first becomes a Close.
//
// StatsOf returns an executor's connection counts (open, accepted, closed,
// failed accepts); package metrics publishes them. They stay readable once
// the executor has shut down, so a server can log its final figures.
//
// # Servers and graceful shutdown
//
// A Server serves the connections of its listeners with its Handler and
// keeps track of them, on each loop, without a lock:
//
//	srv := &netio.Server{Handler: handle, IdleTimeout: time.Minute}
//	srv.Serve(l) // or srv.ServeGroup(g, "tcp", ":7000")
//	...
//	err := srv.Shutdown(ctx)
//
// Shutdown works as http.Server's: it closes the listeners, then lets every
// connection finish what its peer already sent. A receive that would wait
// for more fails with ErrServerClosed; one that has bytes to return, or
// whose Reader holds the start of a token, goes on. A handler therefore
// answers the requests it has, sees ErrServerClosed at its next read and
// closes the connection as on any receive error; Close sends what was
// written. Shutdown returns once every connection is closed and its output
// sent, or, when ctx ends first, closes the rest at once and returns ctx's
// error. Close closes the listeners and every connection at once.
//
// A close sends what was written within the linger time (DefaultLinger,
// 5 s; WithLinger, Conn.SetLinger), so a client that stops reading can
// hold Shutdown for that long (the connections linger at the same time,
// not one after another), and Executor.Shutdown too: a ctx with a
// deadline bounds either, and so does a shorter linger.
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
// The handshake runs off the loop, on a pool of goroutines its executor
// owns (crypto/tls needs one for it), fed by the loop through an in-memory transport; a
// handshake that fails or outlasts WithHandshakeTimeout closes its
// connection only, and Accept never sees it. Once established, records are
// opened and sealed on the loop (crypto/tls over the same transport, which
// reports "would block" when it has no bytes), so an established TLS
// connection holds no goroutine. Output written in one batch is sealed and
// sent together. A peer that closes without close_notify ends the
// receives with an error matching io.ErrUnexpectedEOF. Certificates are
// reloaded through tls.Config.GetCertificate, which runs per handshake.
// SetHandshakePriority(HandshakePriorityIdle) makes handshakes compute on
// threads of the lowest priority, so that the loops always take the CPU
// first (docs/tls.md says what it costs).
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
//
// # Files
//
// A file that keeps state states its invariants at its top. The shared
// core keeps the rules and talks to sockets only through the
// backend contract (backend.go, backend_conn.go); the TLS layer sits between a connection's paths and
// its bytes through the layer contract; each backend moves the bytes.
//
// The shared core:
//
//	doc.go         this overview
//	options.go     ListenOption: the listener's configuration and its defaults
//	errors.go      ErrOutputLimit
//	conn.go        a connection's state and who may touch it; flags, the extension, addresses
//	conn_recv.go   the receive path: Recv, TryRecv, PollRecv, the pump, readable, leave
//	conn_write.go  the write path: Write, the output limit, Buffered, Flush, took
//	conn_close.go  the close path: CloseWrite, Close and its linger, abort, release, Done
//	deadline.go    read, write and idle deadlines
//	listen.go      listeners: Listen, Accept, Close, the accept queue
//	reactor.go     a loop's netio state: buffer pools, the dirty list, the flush at each batch boundary
//	drain.go       what Executor.Shutdown does to sockets
//	loopwork.go    work handed to a loop: toLoop, onLoopFuture, sweep
//	reader.go      Reader: tokens (lines, delimited, counted) over a connection's receives
//	serve.go       Serve, ListenGroup and ServeGroup
//	server.go      Server: a Handler's connections per loop, Shutdown and Close
//	stats.go       connection counts per executor (StatsOf)
//
// The TLS layer:
//
//	layer.go          the layer contract a connection's paths call (open, seal, ...)
//	tls.go            the model; WithTLS and the TLS options, ListenTLS, DialTLS, ConnectionState
//	tls_handshake.go  the handshake and its in-memory transport, fed by the loop
//	tls_record.go     a connection's TLS state and record path: the layer's implementation
//	tls_listen.go     a TLS listener's admission: WithMaxHandshakes, delivery once handshaken
//	tls_pool.go       the handshake pool each executor owns: its workers
//	tls_priority.go   the process's CPU slots and priority for handshakes (and why they are the process's)
//	tls_sched_*.go    lowering a handshake's thread to SCHED_IDLE (Linux; nothing elsewhere)
//
// The backends (a prefix per backend; see Backends above):
//
//	backend.go             the backend contract and its rules; Backend, Use, and how a loop's backend is chosen
//	backend_conn.go        the contract's other side: what of the shared code a backend may use, and its rules
//	kernel_sock.go         the kernel's sockets (epoll and io_uring): a connection's part, the slot table, socket calls
//	kernel_listen.go       the kernel's listening sockets and what an accept made
//	kernel_dial.go         the kernel's non-blocking connects
//	kernel_addr.go         sockaddrs to and from net.Addr
//	epoll_poller.go        epoll (Linux): the loop waits in epoll_wait; events to their sockets
//	epoll_conn.go          epoll: a connection's reads, writes and closes; accepts
//	epoll_sendfile.go      epoll: SendFile by sendfile(2)
//	uring_ring.go          io_uring: the backend on the loop's ring (internal/uring), completions to their sockets
//	uring_conn.go          io_uring: receives, sends and accepts as ring operations
//	portable_sock.go       the portable backend (-tags purego, other systems): goroutines over package net
//	portable_peek_*.go     portable: peeking at a socket for a peer that left
//	portable_unacked_*.go  portable: the output not yet acknowledged
//	portable_reuseport_*.go  SO_REUSEPORT for the listeners package net makes
//	portable_sendfile.go   portable: SendFile takes the copy path
//	sim_backend.go         the simulated network (package sim), chosen per loop
package netio
