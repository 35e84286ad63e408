//go:build linux

package main

// Hardware counters (retired instructions and CPU cycles) for the runner,
// opened with the raw perf_event_open(2) syscall.
//
// What is counted. Go runs a goroutine on whichever OS thread is free, so a
// counter on one thread would miss most of a benchmark. openHWCounters
// therefore opens one counter per event on every thread the process has at
// that moment (the entries of /proc/self/task), each with inherit=1 so that
// every thread created later by a counted thread gets a counter of its own
// that the kernel sums into the parent's reading. It retries until the set
// of threads did not change while it was opening them, so no thread is
// counted twice or missed: together the counters cover every thread of the
// process from the moment they are opened on. main also calls
// runtime.LockOSThread before opening them: coverage does not depend on it
// (every thread is counted, whichever one a goroutine runs on), but it
// starts the runtime's template thread (the one that creates threads on
// behalf of locked ones) early, so that thread is counted directly.
//
// A reading is thus process-wide: the benchmark goroutines, the executors'
// loops, the garbage collector's workers, sysmon and Ms spinning for work
// all count, much as the malloc count (a process-wide figure) does. The
// Meter reads the counters around the measured loop only, so fixture setup
// and the testing package's ramp-up rounds are not counted.
//
// Not counted: anything in the kernel or the hypervisor (exclude_kernel and
// exclude_hv: system-call and page-fault work is invisible, and unprivileged
// users with perf_event_paranoid=2 may count only user space anyway), other
// processes, and everything before the counters were opened. When the
// kernel multiplexes the counters the figures are scaled by
// time_enabled/time_running; a run whose counter never got a hardware slot
// has no figure.
//
// Where the kernel refuses the events (no PMU exposed to a VM answers
// ENOENT; perf_event_paranoid or a container answers EACCES or EPERM; some
// CPUs answer EOPNOTSUPP) openHWCounters returns the error, and the runner
// prints n/a in the inst and cycles columns and writes null in the JSON.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unsafe"
)

// perf_event_open(2) constants from include/uapi/linux/perf_event.h.
const (
	perfTypeHardware = 0 // PERF_TYPE_HARDWARE
	perfTypeSoftware = 1 // PERF_TYPE_SOFTWARE

	perfCountHWCPUCycles    = 0 // PERF_COUNT_HW_CPU_CYCLES
	perfCountHWInstructions = 1 // PERF_COUNT_HW_INSTRUCTIONS

	// perfAttrSize is PERF_ATTR_SIZE_VER5; kernels that know a larger
	// struct treat the missing tail as zero.
	perfAttrSize = 112

	perfFormatTotalTimeEnabled = 1 << 0 // PERF_FORMAT_TOTAL_TIME_ENABLED
	perfFormatTotalTimeRunning = 1 << 1 // PERF_FORMAT_TOTAL_TIME_RUNNING

	// Bit numbers of the attr bit-field word.
	perfBitDisabled      = 0
	perfBitInherit       = 1
	perfBitExcludeKernel = 5
	perfBitExcludeHV     = 6

	perfFlagFDCloexec = 1 << 3 // PERF_FLAG_FD_CLOEXEC

	// perfReadSize is what read(2) returns with the read_format above:
	// value, time_enabled, time_running.
	perfReadSize = 24
)

// hwCounters is the pair of events (instructions, cycles) opened on every
// thread of the process; see the comment at the top of this file.
type hwCounters struct {
	inst, cycles []int // file descriptors, one per thread counted directly
}

// perfReading is one read(2) of a counter.
type perfReading struct {
	value, enabled, running uint64
	ok                      bool
}

// hwSample is a reading of every counter, in the order of hwCounters' fds.
type hwSample struct {
	inst, cycles []perfReading
}

// openHWCounters opens the instruction and cycle counters on every thread of
// the process and enables them.
func openHWCounters() (*hwCounters, error) {
	return openCounters(perfTypeHardware, perfCountHWInstructions, perfTypeHardware, perfCountHWCPUCycles)
}

// openCounters opens two events, (typA, cfgA) in inst and (typB, cfgB) in
// cycles, on every thread of the process with inherit set, retrying until
// no thread appeared while they were being opened. Tests use it with
// software events, which work where hardware ones are refused.
func openCounters(typA uint32, cfgA uint64, typB uint32, cfgB uint64) (*hwCounters, error) {
	const attempts = 20
	for range attempts {
		before, err := listThreads()
		if err != nil {
			return nil, err
		}
		h := &hwCounters{}
		for _, tid := range before {
			a, err := perfOpen(typA, cfgA, tid)
			if errors.Is(err, syscall.ESRCH) {
				continue // the thread exited meanwhile
			}
			if err != nil {
				h.close()
				return nil, fmt.Errorf("perf_event_open(%s): %w", eventName(typA, cfgA), err)
			}
			b, err := perfOpen(typB, cfgB, tid)
			if err != nil {
				syscall.Close(a)
				if errors.Is(err, syscall.ESRCH) {
					continue
				}
				h.close()
				return nil, fmt.Errorf("perf_event_open(%s): %w", eventName(typB, cfgB), err)
			}
			h.inst = append(h.inst, a)
			h.cycles = append(h.cycles, b)
		}
		after, err := listThreads()
		if err != nil {
			h.close()
			return nil, err
		}
		if len(h.inst) > 0 && subsetOf(after, before) {
			if err := h.enable(); err != nil {
				h.close()
				return nil, err
			}
			return h, nil
		}
		// A thread was created while the counters were being opened: it
		// may or may not have inherited one. Start over.
		h.close()
	}
	return nil, fmt.Errorf("perf counters: threads kept appearing while opening them (%d attempts)", attempts)
}

// eventName names an event for error messages.
func eventName(typ uint32, cfg uint64) string {
	switch {
	case typ == perfTypeHardware && cfg == perfCountHWInstructions:
		return "instructions"
	case typ == perfTypeHardware && cfg == perfCountHWCPUCycles:
		return "cycles"
	}
	return fmt.Sprintf("type %d config %d", typ, cfg)
}

// enable resets and enables every counter. The ioctls reach the inherited
// counters of threads created since the open as well.
func (h *hwCounters) enable() error {
	for _, fd := range slices.Concat(h.inst, h.cycles) {
		if err := perfIoctl(fd, perfIocReset); err != nil {
			return fmt.Errorf("perf counters: ioctl(RESET): %w", err)
		}
		if err := perfIoctl(fd, perfIocEnable); err != nil {
			return fmt.Errorf("perf counters: ioctl(ENABLE): %w", err)
		}
	}
	return nil
}

// close disables and closes every counter.
func (h *hwCounters) close() {
	if h == nil {
		return
	}
	for _, fd := range slices.Concat(h.inst, h.cycles) {
		_ = perfIoctl(fd, perfIocDisable)
		syscall.Close(fd)
	}
	h.inst, h.cycles = nil, nil
}

// sampleInto reads every counter into s, reusing s's buffers so that a
// reading does not allocate once s has been filled before.
func (h *hwCounters) sampleInto(s *hwSample) {
	s.inst = readAll(h.inst, s.inst[:0])
	s.cycles = readAll(h.cycles, s.cycles[:0])
}

// readAll appends one reading per fd to dst.
func readAll(fds []int, dst []perfReading) []perfReading {
	var buf [perfReadSize]byte
	for _, fd := range fds {
		n, err := syscall.Read(fd, buf[:])
		if err != nil || n != perfReadSize {
			dst = append(dst, perfReading{})
			continue
		}
		dst = append(dst, decodeReading(buf))
	}
	return dst
}

// since returns the instructions and cycles counted between prev and s,
// summed over all threads, and whether both figures are valid.
func (s hwSample) since(prev hwSample) (inst, cycles float64, ok bool) {
	inst, okA := scaledDelta(prev.inst, s.inst)
	cycles, okB := scaledDelta(prev.cycles, s.cycles)
	return inst, cycles, okA && okB
}

// scaledDelta sums, over counters, the growth of each counter's value from
// before to after, scaled up by time_enabled/time_running where the kernel
// multiplexed it. It fails when a reading failed or a counter was enabled
// but never running (no estimate possible).
func scaledDelta(before, after []perfReading) (float64, bool) {
	if len(before) != len(after) || len(after) == 0 {
		return 0, false
	}
	total := 0.0
	for i := range after {
		a, b := before[i], after[i]
		if !a.ok || !b.ok || b.value < a.value || b.enabled < a.enabled || b.running < a.running {
			return 0, false
		}
		dv := float64(b.value - a.value)
		de := float64(b.enabled - a.enabled)
		dr := float64(b.running - a.running)
		switch {
		case dr == 0 && de == 0:
			// The thread did not run: nothing to add.
		case dr == 0:
			return 0, false
		case de > dr:
			total += dv * de / dr
		default:
			total += dv
		}
	}
	return total, true
}

// decodeReading decodes what read(2) returns for a counter opened with
// read_format TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING.
func decodeReading(buf [perfReadSize]byte) perfReading {
	return perfReading{
		value:   binary.NativeEndian.Uint64(buf[0:]),
		enabled: binary.NativeEndian.Uint64(buf[8:]),
		running: binary.NativeEndian.Uint64(buf[16:]),
		ok:      true,
	}
}

// perfAttr builds struct perf_event_attr for a counting (not sampling)
// event: disabled until enabled by ioctl, inherited by threads created
// later, user space only.
func perfAttr(typ uint32, config uint64) [perfAttrSize]byte {
	var a [perfAttrSize]byte
	ne := binary.NativeEndian
	ne.PutUint32(a[0:], typ)                                                    // type
	ne.PutUint32(a[4:], perfAttrSize)                                           // size
	ne.PutUint64(a[8:], config)                                                 // config
	ne.PutUint64(a[16:], 0)                                                     // sample_period: counting only
	ne.PutUint64(a[24:], 0)                                                     // sample_type
	ne.PutUint64(a[32:], perfFormatTotalTimeEnabled|perfFormatTotalTimeRunning) // read_format
	ne.PutUint64(a[40:], cBit(perfBitDisabled)|cBit(perfBitInherit)|
		cBit(perfBitExcludeKernel)|cBit(perfBitExcludeHV)) // the bit-field word
	return a
}

// cBit returns the mask of bit-field member i (0 = first declared) of a
// 64-bit C bit-field word: compilers allocate bit-fields from the least
// significant bit on little-endian targets and from the most significant
// bit on big-endian ones.
func cBit(i uint) uint64 {
	if bigEndian() {
		return 1 << (63 - i)
	}
	return 1 << i
}

// bigEndian reports whether the machine is big-endian.
func bigEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 0
}

// perfOpen opens a counter on thread tid, any CPU, in no group.
func perfOpen(typ uint32, config uint64, tid int) (int, error) {
	attr := perfAttr(typ, config)
	cpu, group := -1, -1
	fd, _, errno := syscall.Syscall6(syscall.SYS_PERF_EVENT_OPEN,
		uintptr(unsafe.Pointer(&attr[0])), uintptr(tid), uintptr(cpu), uintptr(group),
		perfFlagFDCloexec, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// perf ioctl numbers, without the direction bits (_IO('$', n)).
const (
	perfIocEnable  = 0x2400 // PERF_EVENT_IOC_ENABLE
	perfIocDisable = 0x2401 // PERF_EVENT_IOC_DISABLE
	perfIocReset   = 0x2403 // PERF_EVENT_IOC_RESET
)

// ioctlRequest adds the architecture's _IOC_NONE direction bits to an _IO
// request number: 0 on most architectures, 1<<29 on mips and powerpc.
func ioctlRequest(nr uintptr, goarch string) uintptr {
	switch goarch {
	case "mips", "mipsle", "mips64", "mips64le", "ppc64", "ppc64le":
		return nr | 1<<29
	}
	return nr
}

// perfIoctl issues an argument-less perf ioctl on fd.
func perfIoctl(fd int, nr uintptr) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), ioctlRequest(nr, runtime.GOARCH), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// listThreads returns the ids of the process's threads.
func listThreads() ([]int, error) {
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("perf counters: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("perf counters: reading /proc/self/task: %w", err)
	}
	return parseTIDs(names), nil
}

// parseTIDs turns the entries of /proc/self/task into sorted thread ids,
// skipping anything that is not a number.
func parseTIDs(names []string) []int {
	var tids []int
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil || tid <= 0 {
			continue
		}
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	return tids
}

// subsetOf reports whether every element of a (sorted) is in b (sorted).
func subsetOf(a, b []int) bool {
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			return false
		}
	}
	return true
}
