//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package netio

import (
	"errors"
	"runtime"
	"syscall"
)

// reusePortControl fails: this platform has no SO_REUSEPORT.
func reusePortControl(network, address string, rc syscall.RawConn) error {
	return errors.New("netio: WithReusePort is not supported on " + runtime.GOOS)
}
