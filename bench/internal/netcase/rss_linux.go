//go:build linux

package netcase

import (
	"os"
	"strconv"
	"strings"
)

// ioCalls returns how many read-like and write-like system calls the
// process has made so far (syscr and syscw of /proc/self/io, every thread),
// and true.
func ioCalls() (reads, writes int64, ok bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "syscr":
			reads, found = n, found+1
		case "syscw":
			writes, found = n, found+1
		}
	}
	return reads, writes, found == 2
}

// rss returns the resident set size of the process in bytes, and true.
func rss() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
