package websocket

import (
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"strings"
)

// The opening handshake (RFC 6455, section 4.2), free of the HTTP server:
// Upgrade reads the request through it.

const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// AcceptKey returns the Sec-WebSocket-Accept value that answers a
// Sec-WebSocket-Key of key.
func AcceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key))
	h.Write([]byte(acceptGUID))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// A refusal is the answer to an upgrade request that is not one: its
// status, reason, and a header to send with it.
type refusal struct {
	status      int
	text        string
	hname, hval string
}

// check checks an upgrade request: its method, and its headers through
// values (every value of a header, by name). It returns the key, or why
// the request is refused.
func check(method string, values func(name string) []string) (key string, r *refusal) {
	if method != "GET" {
		return "", &refusal{405, "websocket: the upgrade request's method is not GET", "Allow", "GET"}
	}
	if !hasToken(values("Connection"), "upgrade") {
		return "", &refusal{400, "websocket: no 'upgrade' token in the Connection header", "", ""}
	}
	if !hasToken(values("Upgrade"), "websocket") {
		return "", &refusal{400, "websocket: no 'websocket' token in the Upgrade header", "", ""}
	}
	if !hasToken(values("Sec-WebSocket-Version"), "13") {
		return "", &refusal{400, "websocket: version 13 is not in the Sec-WebSocket-Version header", "", ""}
	}
	keys := values("Sec-WebSocket-Key")
	if len(keys) != 1 || !validKey(keys[0]) {
		return "", &refusal{400, "websocket: the Sec-WebSocket-Key header is missing or not 16 bytes in base64", "", ""}
	}
	return strings.TrimSpace(keys[0]), nil
}

// validKey reports whether k is 16 bytes in base64, as a client's
// Sec-WebSocket-Key must be.
func validKey(k string) bool {
	k = strings.TrimSpace(k)
	if len(k) != 24 {
		return false
	}
	var b [18]byte
	n, err := base64.StdEncoding.Decode(b[:], []byte(k))
	return err == nil && n == 16
}

// hasToken reports whether one of the comma-separated lists in vs holds
// tok (case-insensitively).
func hasToken(vs []string, tok string) bool {
	for _, v := range vs {
		for v != "" {
			var t string
			t, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(t), tok) {
				return true
			}
		}
	}
	return false
}

// sameOrigin is the default origin check: no Origin header (not a
// browser), or one whose host is the request's Host.
func sameOrigin(origin, host string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}
