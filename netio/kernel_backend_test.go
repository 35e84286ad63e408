//go:build linux && !purego

package netio_test

import (
	"context"
	"os"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
	"github.com/spindle-rt/spindle/netio"
)

// portable reports whether the tests run on the portable backend.
const portable = false

// onHost are the backends of this build that onAll runs each shared test
// on, by name (netio.Use).
var onHost = []netio.Backend{netio.BackendEpoll, netio.BackendURing}

// hostBackends are the names Stats.Backend may give a loop of the
// program's own here that nobody chose a backend for: epoll, or io_uring
// when SPINDLE_NETIO=uring asks for it (epoll where the kernel refuses the
// ring).
func hostBackends() []string {
	if os.Getenv("SPINDLE_NETIO") == "uring" {
		return []string{"io_uring", "epoll"}
	}
	return []string{"epoll"}
}

// refusal is why backend b cannot run here (the kernel refuses io_uring),
// or nil.
func refusal(b netio.Backend) error {
	if b != netio.BackendURing {
		return nil
	}
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	_, err := future.Call(ex, func() (*uring.Ring, error) { return uring.Of((*loop.Loop)(ex)) }).Await(context.Background())
	return err
}
