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
// A request that is not a valid upgrade is answered as net/http's servers
// do (405 for a method other than GET, 400 for missing Connection/Upgrade
// tokens or a bad Sec-WebSocket-Key, 426 with Sec-WebSocket-Version: 13
// for another version, 403 for an origin WithCheckOrigin refuses) and
// Upgrade returns an error that wraps ErrNotUpgrade; the HTTP connection
// goes on. No subprotocol or extension is negotiated. Call it from the
// handler, on the loop.
func Upgrade(w *web.ResponseWriter, r *web.Request, opts ...Option) (*Conn, error) {
	cfg := defaultConfig
	for _, o := range opts {
		o(&cfg)
	}
	key, no := check(r.Method(), r.HeaderValues)
	if no == nil && cfg.checkOrigin != nil && !cfg.checkOrigin(r.Header("Origin"), r.Host()) {
		no = &refusal{http.StatusForbidden, "websocket: origin not allowed", "", ""}
	}
	if no != nil {
		if no.hname != "" {
			w.Header().Set(no.hname, no.hval)
		}
		web.Error(w, no.text, no.status)
		return nil, &upgradeError{no.text}
	}
	h := w.Header()
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", AcceptKey(key))
	w.WriteHeader(http.StatusSwitchingProtocols)
	nc, buffered, err := w.Hijack()
	if err != nil {
		return nil, err
	}
	return NewConn(nc, buffered, opts...), nil
}

type upgradeError struct{ text string }

func (e *upgradeError) Error() string { return e.text }
func (e *upgradeError) Unwrap() error { return ErrNotUpgrade }
