package websocket

import (
	"errors"
	"net/http"

	"github.com/spindle-rt/spindle/web"
)

// ErrNotUpgrade is what Upgrade returns (wrapped with the reason) for a
// request that is not a valid WebSocket upgrade; it has been answered.
var ErrNotUpgrade = errors.New("websocket: not a WebSocket upgrade")

// Upgrade answers an upgrade request (RFC 6455, section 4.2) with 101 and
// takes the connection over from the HTTP server: the returned Conn is
// served by the same loop, with the bytes the client sent past its request.
//
// A request that is not a valid upgrade is answered as gorilla/websocket's
// Upgrader answers it on net/http: 405 for a method other than GET; 400
// for a Connection header without "upgrade", an Upgrade header without
// "websocket", a Sec-WebSocket-Version other than 13 or a
// Sec-WebSocket-Key that is not 16 bytes in base64; 403 for a browser's
// request from another origin (an Origin header whose host is not the
// request's Host; WithCheckOrigin changes the check). The answer carries
// Sec-WebSocket-Version: 13 (RFC 6455, section 4.4) and the status text;
// Upgrade returns an error that wraps ErrNotUpgrade and says why, and the
// HTTP connection goes on. No subprotocol or extension is negotiated.
//
// The Conn is registered with the server's Shutdown
// (ResponseWriter.OnShutdown): when the server shuts down, a Conn still
// open starts the closing handshake with CloseGoingAway (1001), and
// Shutdown waits until it has ended (the peer's close frame, or the close
// timeout). Call it from the handler, on the loop.
func Upgrade(w *web.ResponseWriter, r *web.Request, opts ...Option) (*Conn, error) {
	cfg := configOf(opts)
	key, no := check(r.Method(), r.HeaderValues)
	if no == nil {
		ok := cfg.checkOrigin
		if ok == nil {
			ok = sameOrigin
		}
		if !ok(r.Header("Origin"), r.Host()) {
			no = &refusal{http.StatusForbidden, "websocket: request origin not allowed", "", ""}
		}
	}
	if no != nil {
		if no.hname != "" {
			w.Header().Set(no.hname, no.hval)
		}
		w.Header().Set("Sec-WebSocket-Version", "13")
		web.Error(w, http.StatusText(no.status), no.status)
		return nil, &upgradeError{no.text}
	}
	h := w.Header()
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", AcceptKey(key))
	w.WriteHeader(http.StatusSwitchingProtocols)
	c := &Conn{}
	c.unhook = w.OnShutdown(c.goingAway) // before Hijack: Shutdown cannot end between the two
	nc, buffered, err := w.Hijack()
	if err != nil {
		c.unhook()
		return nil, err
	}
	c.init(nc, buffered, cfg)
	return c, nil
}

type upgradeError struct{ text string }

func (e *upgradeError) Error() string { return e.text }
func (e *upgradeError) Unwrap() error { return ErrNotUpgrade }
