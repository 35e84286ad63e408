//go:build linux

package netcase

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setNice sets the nice value of every thread of the process to n; the
// threads the runtime starts later inherit it from the thread that starts
// them.
func setNice(n int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil {
			return err
		}
	}
	return nil
}
