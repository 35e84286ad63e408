//go:build linux && purego

package netio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unacked returns how many bytes of output the kernel took that the peer
// has not acknowledged yet: the socket's TIOCOUTQ, read through its raw
// connection.
func (*portableBackend) unacked(c *Conn) int {
	sc, ok := c.sk.nc.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCOUTQ); err == nil {
			n = v
		}
	})
	return n
}
