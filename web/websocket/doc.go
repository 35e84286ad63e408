// Package websocket serves WebSocket (RFC 6455) on spindle's loop: a
// connection that package web's server upgraded goes on being served by
// the same loop, with no goroutine of its own and no buffer while it is
// idle.
//
// # Upgrading
//
// A handler calls Upgrade, which checks the request, answers 101 and
// takes the connection over from the HTTP server; the returned Conn is
// served by the loop of the handler:
//
//	mux.HandleFunc("GET /ws/echo", func(w *web.ResponseWriter, r *web.Request) {
//		c, err := websocket.Upgrade(w, r)
//		if err != nil {
//			return // answered already (400, 403, 405)
//		}
//		c.Serve(func(c *websocket.Conn, m websocket.Message) {
//			c.WriteMessage(m.Type, m.Data)
//		}, nil)
//	})
//
// A request that is not an upgrade is answered as gorilla/websocket's
// Upgrader answers it on net/http, and the HTTP connection goes on. By
// default a browser's request from another origin is refused
// (WithCheckOrigin). No subprotocol or extension (compression) is
// negotiated, so frames with reserved bits set are protocol errors.
//
// # Receiving
//
// A Conn is received from in one of three ways, all on its loop:
//
//   - Serve calls a function with each message, in order, and a second
//     one once with how the connection ended;
//   - PollRecv makes a Conn a future.Poller[Message], so a spawned task
//     receives with future.Next(ctx, c), which suspends the task and
//     allocates nothing;
//   - Recv returns a future of the next message.
//
// Frames are parsed on the loop from the bytes netio received. A message
// whose frame is whole in one receive is handed over in place (unmasked
// in netio's receive buffer, without a copy); a fragmented one, or one
// that spans receives, is put together in a buffer from a pool, which goes
// back once the message has been handled. A Message's Data is therefore
// valid only until the next receive (the next call of the Serve function,
// PollRecv or Recv): copy what you keep. Bytes are read from the socket
// only while the Conn is being received from, so a slow consumer holds its
// peer back through TCP flow control.
//
// The Conn checks what the RFC asks a server to check: client frames must
// be masked; reserved bits and opcodes, fragmented or long (over 125
// bytes) control frames, a continuation outside a fragmented message, a
// data frame inside one, and lengths not in their shortest form are
// protocol errors (close code 1002); text must be UTF-8, across fragments
// too, and is checked as it arrives (1007); a message longer than the
// limit (DefaultMaxMessageSize, 1 MiB; WithMaxMessageSize) is refused as
// soon as its length is known (1009). Pings are answered with a pong at
// once; pongs are dropped.
//
// # Sending and backpressure
//
// WriteMessage and WriteText copy a whole message, as one frame, into the
// connection's output, which leaves at the end of the loop's batch with
// everything else written in it (so the answers to several messages leave
// in one system call). They never block. Flush returns a future that
// completes once the output has been taken by the kernel: a writer that
// produces a lot awaits it. Serve stops reading while more than the high
// water mark (WithWriteHighWater) waits to be sent, so an echo to a peer
// that does not read stops reading from it, and netio's output limit cuts
// a peer that never reads. A Conn whose netio connection fails (cut by
// the output limit, reset) ends at once, whatever waits on it: receives
// fail, and Serve's done runs, with a CloseAbnormal that wraps netio's
// error (errors.Is(err, netio.ErrOutputLimit)).
//
// # Closing
//
// A close frame from the peer is answered with the same code and the
// connection closes; receives then fail with a *CloseError whose Remote
// is true (CloseNoStatus when the frame had no code). A bad close frame
// (one byte, a code that may not be sent such as 1005, 1006 or 1015, a
// reason that is not UTF-8) is a protocol error. Close starts the
// handshake from this side (CloseGoingAway when a server shuts down):
// the data that still arrives is dropped, and the connection closes when
// the peer's close frame comes or after WithCloseTimeout. A connection
// that ends without a close frame fails receives with CloseAbnormal.
//
// A Conn that Upgrade made is registered with its web server's Shutdown
// (web.ResponseWriter.OnShutdown): when the server shuts down, the Conn
// starts the closing handshake with CloseGoingAway (1001, "server
// shutting down"), and Shutdown returns once it has ended, so a program
// keeps no set of its WebSockets for that. The registration goes when the
// Conn ends.
//
// # Cost
//
// An idle Conn served by Serve holds no buffer and no future: what it
// costs is the netio connection, the Conn (240 bytes on 64-bit machines),
// the two functions given to Serve and, for a Conn that Upgrade made, its
// registration with the server's Shutdown (about 70 bytes). The frame codec is written here rather than
// taken from a library, so the package adds no dependency to the module.
package websocket
