//go:build linux && !purego

package uring

// The kernel's list of the operations it carries out
// (IORING_REGISTER_PROBE), so a component submits only what the running
// kernel knows and hands the rest to another way.
//
// Invariants: a Ring probes once, on the first Supports, and keeps the
// answer (the kernel's opcodes do not change under a running ring).

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const probeOps = 256 // IORING_OP_LAST stays far below

type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

type probe struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [probeOps]probeOp
}

const opSupported = 1 << 0 // IO_URING_OP_SUPPORTED

// probeRegister is io_uring_register(IORING_REGISTER_PROBE); a variable
// so that a test can make the kernel lack an operation (Lack).
var probeRegister = func(fd int, p *probe) error {
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), regProbe, uintptr(unsafe.Pointer(p)), probeOps, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Supports reports whether the kernel carries out operation op
// (IORING_OP_*) on this ring. A kernel that cannot say (before Linux 5.6,
// which has no probe) is taken to lack it. Loop only.
func (r *Ring) Supports(op uint8) bool {
	if r.probed == nil {
		var p probe
		if err := probeRegister(r.fd, &p); err != nil {
			p = probe{}
		}
		r.probed = new([probeOps]bool)
		for _, o := range p.ops[:min(int(p.opsLen), probeOps)] {
			if o.flags&opSupported != 0 {
				r.probed[o.op] = true
			}
		}
	}
	return r.probed[op]
}

// Lack makes every ring probed from now on report the operations ops as
// unsupported, as an older kernel would, until the returned func is
// called. For tests; not safe while rings are being probed.
func Lack(ops ...uint8) (restore func()) {
	real := probeRegister
	probeRegister = func(fd int, p *probe) error {
		if err := real(fd, p); err != nil {
			return err
		}
		for i := range p.ops {
			for _, op := range ops {
				if p.ops[i].op == op {
					p.ops[i].flags &^= opSupported
				}
			}
		}
		return nil
	}
	return func() { probeRegister = real }
}
