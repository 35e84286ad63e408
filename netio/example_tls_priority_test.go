package netio_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/netio"
)

// A server whose loops' latency matters more than how fast new TLS
// connections are set up lets its handshakes compute at the idle priority.
func ExampleSetHandshakePriority() {
	prev := netio.SetHandshakePriority(netio.HandshakePriorityIdle)
	defer netio.SetHandshakePriority(prev) // for the example's sake
	fmt.Println(prev, "->", netio.HandshakePriorityIdle)
	// Output: normal -> idle
}
