// Package web serves HTTP/1.1 on netio connections, from the loop that
// serves them: requests are parsed where netio received them, handlers
// run on the connection's loop, and a connection costs no goroutine.
//
// # The model
//
// A Server serves the connections of one or more netio listeners (Serve,
// or ServeGroup for one listener per shard of a shard.Group). Each
// connection lives on the loop of the listener that accepted it. When
// bytes arrive, the server parses the requests in them on that loop, with
// one copy of each request's head (its strings are parts of it) and its
// body left where it was received. It calls the handler for each, on the
// same loop, with the same no-lock guarantee as any loop code.
//
//	mux := web.NewMux()
//	mux.HandleFunc("GET /hello/{name}", func(w *web.ResponseWriter, r *web.Request) {
//		w.WriteString("hello, " + r.PathValue("name"))
//	})
//	srv := &web.Server{Handler: mux}
//	l, _ := netio.Listen(ex, "tcp", ":8080")
//	srv.Serve(l)
//
// A handler should return soon: the loop serves every other connection
// while it runs. Its response finishes when it returns, unless it calls
// ResponseWriter.Later: then it may keep w and r and finish the response
// with End from a callback, a timer (Executor.AfterFunc), a future's
// continuation (after a shard.Call, say) or a spawned task, all on the
// same loop. Meanwhile the loop goes on serving.
//
//	mux.HandleFunc("GET /slow", func(w *web.ResponseWriter, r *web.Request) {
//		w.Later()
//		r.Executor().AfterFunc(time.Second, func() {
//			w.WriteString("slept")
//			w.End()
//		})
//	})
//
// What the handler registers after Later carries the response: should it
// panic before the response is finished, the panic is reported as any
// other on the loop and the response ends, with a 500 if nothing of it was
// written, and the connection closes after it.
//
// # When a response leaves
//
// Responses leave in the order of the requests, even when a later one
// finishes first: a response waits, in a buffer of its own, until those
// before it are finished. What a handler writes reaches netio's output
// buffer, and the loop hands that to the kernel at the end of its batch,
// so the responses to pipelined requests leave together, in one write. A
// response up to 4 KB leaves in one piece with a Content-Length; a longer
// one, or one flushed early (Flush), goes chunked, unless the handler set
// a Content-Length.
//
// Pipelined requests whose methods are safe (GET, HEAD, OPTIONS, TRACE)
// run in parallel: the handler of each starts as soon as it is parsed,
// whether or not the responses before it are finished. A request with any
// other method (PUT, POST, DELETE...) starts only once every response
// before it on its connection is finished, and no later request starts
// until its own response is, as RFC 9112 §9.3.2 asks: a handler that
// changes state never runs alongside another of its connection's, and a
// response that reads state, finished later, does not show what a request
// pipelined after it did. A request that waits is parsed, not started; if
// the connection closes before its turn (a response that closes it,
// Close, Shutdown, Hijack), its handler never runs.
//
// # What a handler may hold
//
// A Request and its ResponseWriter are valid until the response is
// finished: after it, they go back to the loop's pool.
//
// Every string a Request hands out (Method, Target, Path, RawQuery, Host,
// header and trailer values, cookies, PathValue, Query's values) is an
// ordinary Go string, and never changes: a handler may keep one, use it as
// a map key, send it to another goroutine, as with net/http. The server
// copies each request's head once, into memory that is never reused, and
// the strings are parts of that copy (which a kept string keeps in memory,
// as any substring does: strings.Clone keeps only itself).
//
// The []byte views are the exception, and say so: Body is the body as it
// was received, not a copy, valid until the response is finished (the
// server does not receive on the connection meanwhile); the memory is
// reused for later requests afterwards, so a handler that keeps a body
// longer copies it (bytes.Clone, or string(body)). The bytes Hijack
// returns are such a view too, valid until the next receive on the
// connection.
//
// # Bodies and limits
//
// The server reads a request's whole body (Content-Length or chunked)
// before calling the handler, up to MaxBodyBytes (else 413, and the
// connection closes); a body that fits the receive buffer is not copied. A
// chunked body is decoded as it arrives, in time linear in its bytes, and
// the server holds its data, not its framing: chunk-size lines and the
// trailer section are at most 4 KB, and framing beyond what net/http
// allows (16 bytes per chunk plus twice the chunk's data, and 16 KiB in
// all) is refused with 400, so a body's raw bytes are at most 3 times
// MaxBodyBytes plus 16 per chunk plus 20 KiB.
// Expect: 100-continue is answered when the body is to be read, after any
// earlier responses. Request lines and headers are bounded by
// MaxHeaderBytes and MaxHeaders (431). A connection is closed after
// IdleTimeout without a request, ReadHeaderTimeout without a whole head,
// or BodyReadTimeout without a whole body; the defaults are those of a
// carefully configured http.Server. The timeouts and the Date of
// responses read the loop's clock (executor.Executor.Now), so under
// package sim they run on the simulation's fake time.
//
// Malformed requests get what net/http answers (400, 431, 501, 505, and
// the connection closes), or what RFC 9112 allows that is stricter:
// obsolete line folding, a Content-Length beside Transfer-Encoding, more
// than one Content-Length or Host, and Transfer-Encoding in HTTP/1.0 are
// refused, as are control bytes in a chunk extension. A byte sequence is
// never read as two requests where another reading would see one.
//
// # Upgrades: taking over the connection
//
// ResponseWriter.Hijack hands the connection to the handler, for the
// protocol that follows an upgrade (WebSocket): the server stops reading
// from it, forgets it (Shutdown and Close leave it alone) and returns it
// with the bytes it had received past the request. Its new owner hears of
// the server's Shutdown through ResponseWriter.OnShutdown, as
// websocket.Upgrade does for every WebSocket it makes. A request with
// Connection: upgrade is dispatched only once the responses before it are
// written, so its handler can always Hijack; the handler sets the status
// (101) and header fields, and Hijack sends that head first.
//
//	c, buffered, err := w.Hijack()
//	// c is the handler's: it reads (buffered first), writes and closes it.
//
// # Shutting down
//
// Shutdown closes the listeners, then the idle connections; requests in
// flight are answered (with Connection: close) and their connections
// close after them. The owners of hijacked connections that registered
// with ResponseWriter.OnShutdown are told, on their loops (a WebSocket
// gets a close frame with 1001), and waited for; the functions of
// RegisterOnShutdown start, as net/http's do. It returns once every
// connection is closed, or closes the rest when its context ends; a
// WebSocket whose client does not answer holds it for the close timeout
// (5 s). The output of the connections closed still leaves, within
// netio's linger (5 s by default): the executor's Shutdown that follows
// waits for it, up to the linger for a client that does not read. A
// context with a deadline bounds either. Close closes everything at once.
//
// # net/http
//
// Mux.Mount serves a route with an http.Handler: it runs on a goroutine
// of its own, off the loop, with the request and its body (a
// Content-Length body streamed as it arrives), and its response goes back
// into the connection's order of responses. A service can move from
// net/http route by route. A handler of any package takes bodies as they
// arrive the same way, by implementing BodyStreamer: the server knows its
// Handler only through Handler and BodyStreamer. Package webtest runs
// loop handlers on requests, as net/http/httptest does, over a loopback
// connection.
package web
