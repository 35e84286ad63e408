package shard

import "github.com/spindle-rt/spindle/executor"

// NewWithTransport is New with the lanes' storage chosen by name ("ring"
// or "locked"), for tests and benchmarks that compare the two.
func NewWithTransport(name string, n int, opts ...executor.Option) *Group {
	t := ringTransport
	if name == lockedTransport.String() {
		t = lockedTransport
	}
	return newGroup(n, t, opts)
}

// Transports names the transports NewWithTransport knows.
var Transports = []string{ringTransport.String(), lockedTransport.String()}
