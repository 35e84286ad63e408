//go:build linux && !purego

package netio

import (
	"testing"
	"unsafe"
)

// TestConnSize keeps a connection within 256 bytes on the epoll backend
// (the size class an idle connection's Conn takes).
func TestConnSize(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 256 {
		t.Errorf("unsafe.Sizeof(Conn{}) = %d, want <= 256: an idle connection grows by a size class", n)
	}
}

// TestConnExtSize keeps a connection's extension within 128 bytes on the
// epoll backend: a connection with a deadline, a flush or a dial pays one
// size class for it, and a layer costs it one word.
func TestConnExtSize(t *testing.T) {
	if n := unsafe.Sizeof(connExt{}); n > 128 {
		t.Errorf("unsafe.Sizeof(connExt{}) = %d, want <= 128", n)
	}
	// A TLS connection's state holds its layer ref, and stays in its
	// size class.
	if n := unsafe.Sizeof(tlsState{}); n > 352 {
		t.Errorf("unsafe.Sizeof(tlsState{}) = %d, want <= 352", n)
	}
}

// TestConnFlags checks that each flag is set, read and cleared alone.
func TestConnFlags(t *testing.T) {
	all := []connFlag{fPumping, fClosing, fLingerIn, fGone, fRecvd, fWShut, fWShutOK, fPartial, fDrain, fLayer}
	for i, f := range all {
		var c Conn
		c.set(f)
		for j, g := range all {
			if c.is(g) != (i == j) {
				t.Errorf("after set(%#x): is(%#x) = %v", f, g, c.is(g))
			}
		}
		c.put(f, false)
		if c.flags != 0 {
			t.Errorf("put(%#x, false) left %#x", f, c.flags)
		}
		c.put(f, true)
		c.unset(f)
		if c.flags != 0 {
			t.Errorf("unset(%#x) left %#x", f, c.flags)
		}
	}
}
