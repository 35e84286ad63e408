package web

// What a Shutdown tells beyond the server's own connections: the
// functions registered with RegisterOnShutdown (the program's), and those
// registered with ResponseWriter.OnShutdown (the new owners of hijacked
// connections, such as package websocket).
//
// Invariants:
//   - a shutdownHook is loop-owned: it is in its loop's list from
//     OnShutdown until stop (loopState.hooks[h.idx] == h), and counts in
//     Server.live over that time, so Shutdown waits for it;
//   - a hook's f is called at most once, on its loop, and never after
//     stop.

import "slices"

// RegisterOnShutdown registers f to be called when Shutdown begins, as
// http.Server.RegisterOnShutdown does: each f in a goroutine of its own,
// once, while Shutdown closes the server's connections; Shutdown does not
// wait for it. Close does not call it. To reach the connections a handler
// hijacked, on their loops, use ResponseWriter.OnShutdown instead. Any
// goroutine.
func (s *Server) RegisterOnShutdown(f func()) {
	if f == nil {
		panic("web: RegisterOnShutdown with nil function")
	}
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// OnShutdown registers f to be called on the loop of w's connection when
// the server's Shutdown begins, and makes Shutdown wait until stop is
// called. It is for a connection that the handler takes over with Hijack,
// which Shutdown and Close otherwise leave alone: f tells its new owner to
// start its protocol's own closing (package websocket, which registers
// each Conn that Upgrade makes, sends a close frame with 1001), and the
// owner calls stop once it is done with the connection: it ended, or the
// owner closed it (netio sends what was written, within the linger, with
// no wait in Shutdown). Shutdown's context bounds the wait, as it bounds
// the wait for the server's own connections.
//
// f must not block; it is called once at most, never after stop. If
// Shutdown has begun already, f is called soon, in a task of its own.
// stop withdraws f and ends Shutdown's wait for it; it reports whether it
// stopped f from being called (false if f has been called, or stop was
// called before), as context.AfterFunc's stop does. Call OnShutdown from
// the handler and before Hijack, so that Shutdown cannot finish between
// the two; stop is loop only.
func (w *ResponseWriter) OnShutdown(f func()) (stop func() bool) {
	if f == nil {
		panic("web: OnShutdown with nil function")
	}
	if w.done {
		panic("web: OnShutdown after the response has ended")
	}
	c := w.c
	if !c.ex.OnLoop() {
		panic("web: ResponseWriter.OnShutdown called from a goroutine that does not hold the connection's loop; use Submit")
	}
	h := &shutdownHook{ls: c.ls, f: f}
	c.ls.addHook(h)
	if c.srv.draining.Load() {
		c.ex.Post(h.call)
	}
	return h.stop
}

// shutdownHook is one OnShutdown registration.
type shutdownHook struct {
	ls      *loopState
	f       func()
	idx     int32 // in ls.hooks
	called  bool
	stopped bool
}

// call calls f unless it was called or withdrawn. On the loop.
func (h *shutdownHook) call() {
	if h.called || h.stopped {
		return
	}
	h.called = true
	h.f()
}

func (h *shutdownHook) stop() bool {
	if !h.ls.ex.OnLoop() {
		panic("web: the stop function of OnShutdown called from a goroutine that does not hold the connection's loop; use Submit")
	}
	if h.stopped {
		return false
	}
	h.stopped = true
	h.ls.removeHook(h)
	h.ls.srv.connGone()
	return !h.called
}

// addHook puts h in the loop's list; Shutdown waits for it until stop.
func (l *loopState) addHook(h *shutdownHook) {
	l.srv.live.Add(1)
	h.idx = int32(len(l.hooks))
	l.hooks = append(l.hooks, h)
}

// removeHook takes h out of the list: the last one takes its place.
func (l *loopState) removeHook(h *shutdownHook) {
	last := len(l.hooks) - 1
	l.hooks[h.idx] = l.hooks[last]
	l.hooks[h.idx].idx = h.idx
	l.hooks[last] = nil
	l.hooks = l.hooks[:last]
	if last == 0 {
		l.hooks = nil // a burst is over: give the array back
	}
}

// callHooks calls the functions registered on the loop: Shutdown has
// begun. A function may stop registrations, which reorders the list, so
// the calls go over a copy.
func (l *loopState) callHooks() {
	for _, h := range slices.Clone(l.hooks) {
		h.call()
	}
}

// callOnShutdown starts the functions of RegisterOnShutdown, once. s.mu
// held.
func (s *Server) callOnShutdown() {
	fs := s.onShutdown
	s.onShutdown = nil
	for _, f := range fs {
		go f()
	}
}
