package netio_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// watchFD0 puts the write end of a pipe in place of the process's file
// descriptor 0 until the test ends, and returns a function that reports
// how many bytes were written to it since. The pipe does not block (a
// write to it takes what fits, never the loop), and the descriptor the
// process had is put back.
func watchFD0(t *testing.T) (written func() int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	saved, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		saved = -1 // the process has no descriptor 0: close it again after
	}
	if err := unix.Dup2(p[1], 0); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		if saved >= 0 {
			unix.Close(saved)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if saved >= 0 {
			unix.Dup2(saved, 0)
			unix.Close(saved)
		} else {
			unix.Close(0)
		}
		unix.Close(p[0])
		unix.Close(p[1])
	})
	buf := make([]byte, 64<<10)
	return func() int {
		n := 0
		for {
			k, err := unix.Read(p[0], buf)
			if k <= 0 || err != nil {
				return n
			}
			n += k
		}
	}
}
