//go:build !linux || purego

package netio_test

// portable reports whether the tests run on the portable backend.
const portable = true

// hostBackends are the names Stats.Backend may give a loop of the
// program's own here: package net's sockets.
func hostBackends() []string { return []string{"portable"} }
