package fileio_test

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2), what a Durable append costs fileio, for the
// benchmarks' os.File baselines.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
