//go:build linux

package main

// Hardware counters (retired instructions and CPU cycles) for the runner,
// opened with perf_event_open(2) through golang.org/x/sys/unix.
//
// Go runs a goroutine on whichever thread is free, so openHWCounters opens
// a counter per event on every thread of the process (/proc/self/task),
// inherited by the threads they create, retrying until no thread appeared
// meanwhile: from then on every thread is counted (main locks its thread
// first, which starts the runtime's template thread early). A reading is
// process-wide, as the malloc count is, and user space only; counters the
// kernel multiplexed are scaled by time_enabled/time_running. Where the
// kernel refuses the events (ENOENT in a VM without a PMU, EACCES or EPERM
// under perf_event_paranoid, EOPNOTSUPP) the table's inst and cycles
// columns read n/a.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// hwCounters holds the counters' file descriptors, one per event and
// thread.
type hwCounters struct{ inst, cycles []int }

// perfReading is one read(2) of a counter; ok is false when it failed.
type perfReading struct {
	value, enabled, running uint64
	ok                      bool
}

// hwSample is a reading of every counter.
type hwSample struct{ inst, cycles []perfReading }

// openHWCounters opens and enables the counters on every thread.
func openHWCounters() (*hwCounters, error) {
	for range 20 {
		before, err := threads()
		if err != nil {
			return nil, err
		}
		h := &hwCounters{}
		for _, tid := range before {
			a, errA := perfOpen(unix.PERF_COUNT_HW_INSTRUCTIONS, tid)
			b, errB := perfOpen(unix.PERF_COUNT_HW_CPU_CYCLES, tid)
			if err := errors.Join(errA, errB); err != nil {
				for _, fd := range []int{a, b} {
					if fd >= 0 {
						unix.Close(fd)
					}
				}
				if errors.Is(err, unix.ESRCH) {
					continue // the thread exited meanwhile
				}
				h.close()
				return nil, fmt.Errorf("perf_event_open: %w", err)
			}
			h.inst, h.cycles = append(h.inst, a), append(h.cycles, b)
		}
		after, err := threads()
		appeared := slices.ContainsFunc(after, func(tid int) bool {
			_, found := slices.BinarySearch(before, tid)
			return !found
		})
		if err == nil && len(h.inst) > 0 && !appeared {
			for _, fd := range slices.Concat(h.inst, h.cycles) {
				if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
					h.close()
					return nil, fmt.Errorf("perf counters: ioctl(ENABLE): %w", err)
				}
			}
			return h, nil
		}
		h.close()
	}
	return nil, errors.New("perf counters: threads kept appearing while opening them")
}

// perfOpen opens a disabled, inherited user-space counter of a hardware
// event on thread tid.
func perfOpen(event uint64, tid int) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_HARDWARE,
		Size:        unix.PERF_ATTR_SIZE_VER5,
		Config:      event,
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
		Bits:        unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	return unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// close closes the counters.
func (h *hwCounters) close() {
	for _, fd := range slices.Concat(h.inst, h.cycles) {
		unix.Close(fd)
	}
	h.inst, h.cycles = nil, nil
}

// sampleInto reads every counter into s, reusing its slices.
func (h *hwCounters) sampleInto(s *hwSample) {
	s.inst, s.cycles = readAll(h.inst, s.inst[:0]), readAll(h.cycles, s.cycles[:0])
}

func readAll(fds []int, dst []perfReading) []perfReading {
	var buf [24]byte
	for _, fd := range fds {
		var r perfReading
		if n, err := unix.Read(fd, buf[:]); err == nil && n == len(buf) {
			ne := binary.NativeEndian
			r = perfReading{ne.Uint64(buf[0:]), ne.Uint64(buf[8:]), ne.Uint64(buf[16:]), true}
		}
		dst = append(dst, r)
	}
	return dst
}

// since returns the instructions and cycles counted from prev to s, and
// whether every counter gave a figure.
func (s hwSample) since(prev hwSample) (inst, cycles float64, ok bool) {
	inst, okA := scaledDelta(prev.inst, s.inst)
	cycles, okB := scaledDelta(prev.cycles, s.cycles)
	return inst, cycles, okA && okB
}

// scaledDelta sums the counters' increments, each scaled up by the share
// of the interval the counter was not scheduled on the hardware.
func scaledDelta(before, after []perfReading) (total float64, ok bool) {
	if len(before) != len(after) || len(after) == 0 {
		return 0, false
	}
	for i, b := range after {
		a := before[i]
		if !a.ok || !b.ok || b.value < a.value || b.enabled < a.enabled || b.running < a.running {
			return 0, false // a failed read, or a counter that went back
		}
		dv, de, dr := float64(b.value-a.value), float64(b.enabled-a.enabled), float64(b.running-a.running)
		switch {
		case de == 0: // not enabled during the interval: nothing to add
		case dr == 0:
			return 0, false // enabled but never on the hardware: no figure
		default:
			total += dv * max(de/dr, 1)
		}
	}
	return total, true
}

// threads lists the process's thread ids, sorted.
func threads() ([]int, error) {
	names, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("perf counters: %w", err)
	}
	var tids []int
	for _, n := range names {
		if tid, err := strconv.Atoi(n.Name()); err == nil && tid > 0 {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}
