package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the metadata needed to read it back) to
// the disk, as fileio's DataSync does.
func fdatasync(f *os.File) error {
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
