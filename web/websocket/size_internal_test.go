package websocket

import (
	"testing"
	"unsafe"
)

// TestIdleSize keeps the state of an idle Conn small: it is what a
// WebSocket costs beyond its netio connection.
func TestIdleSize(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 256 {
		t.Errorf("Conn is %d bytes, want at most 256", n)
	} else {
		t.Logf("Conn: %d bytes (reader %d)", n, unsafe.Sizeof(reader{}))
	}
}
