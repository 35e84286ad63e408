package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync puts f's data on disk, and the metadata needed to read it
// back (its size), not its times.
func fdatasync(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
