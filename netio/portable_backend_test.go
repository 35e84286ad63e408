//go:build !linux || purego

package netio_test

import "github.com/spindle-rt/spindle/netio"

// portable reports whether the tests run on the portable backend.
const portable = true

// onHost are the backends of this build that onAll runs each shared test
// on, by name (netio.Use).
var onHost = []netio.Backend{netio.BackendPortable}

// hostBackends are the names Stats.Backend may give a loop of the
// program's own here: package net's sockets.
func hostBackends() []string { return []string{"portable"} }

// refusal is why backend b cannot run here: nothing stops the portable
// one.
func refusal(netio.Backend) error { return nil }
