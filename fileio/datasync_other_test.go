//go:build !linux

package fileio_test

import "os"

func datasync(f *os.File) error { return f.Sync() }
