//go:build !linux

package fileio

import "os"

// datasync is os.File.Sync where the system has no fdatasync of its own
// (on macOS, Sync is F_FULLFSYNC, which also reaches the disk's cache).
func datasync(f *os.File) error { return f.Sync() }
