//go:build linux && !purego

package netio_test

// portable reports whether the tests run on the portable backend.
const portable = false
