//go:build !linux

package main

import "os"

// fdatasync puts f's data on disk: fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
