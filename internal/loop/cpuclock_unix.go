//go:build unix

package loop

import "syscall"

// processCPU returns the CPU time the process has used so far (user and
// system, all threads), in ns, and true; false when the kernel does not
// say. The watchdog reads it to tell a frozen process from a late check.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
