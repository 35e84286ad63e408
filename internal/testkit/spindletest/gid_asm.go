//go:build (amd64 || arm64) && !purego

package spindletest

// PortableGoroutineID reports whether the binary uses the portable (and
// far slower) way to tell which goroutine holds a loop (internal/gid).
const PortableGoroutineID = false
