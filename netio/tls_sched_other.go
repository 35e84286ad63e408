//go:build !linux

package netio

// lowered is a handshake goroutine's hold on its thread while it computes
// at the idle priority; this system has none, so handshakes compute at the
// process's priority.
type lowered struct{}

func (*lowered) lower() bool { return false }

func (*lowered) held() bool { return false }

func (*lowered) raise() bool { return true }
