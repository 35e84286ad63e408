//go:build linux && !purego

package netio_test

import "os"

// portable reports whether the tests run on the portable backend.
const portable = false

// hostBackends are the names Stats.Backend may give a loop of the
// program's own here: epoll, or io_uring when SPINDLE_NETIO=uring asks
// for it (epoll where the kernel refuses the ring).
func hostBackends() []string {
	if os.Getenv("SPINDLE_NETIO") == "uring" {
		return []string{"io_uring", "epoll"}
	}
	return []string{"epoll"}
}
