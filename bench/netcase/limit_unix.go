//go:build unix

package netcase

import "syscall"

// RaiseFileLimit raises the soft limit on open files to the hard limit and
// returns the soft limit in force.
func RaiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = want.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			lim = want
		}
	}
	return uint64(lim.Cur)
}
