//go:build linux && !purego

package fileio_test

import (
	"testing"

	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/internal/uring"
)

// TestRingLacks runs the io_uring engine on a kernel that lacks
// operations (as older kernels do: FTRUNCATE came in Linux 6.9): the ops
// that need them go to the pool, on the ring's descriptors, and every
// result is the same.
func TestRingLacks(t *testing.T) {
	if err := ringRefusal(); err != nil {
		t.Skipf("the kernel refuses io_uring here: %v", err)
	}
	cases := []struct {
		name string
		ops  []uint8
	}{
		{"ftruncate", []uint8{uring.OpFtruncate}},
		{"statx", []uint8{uring.OpStatx}},
		{"paths", []uint8{uring.OpRenameat, uring.OpUnlinkat}},
		{"every file op", []uint8{uring.OpOpenat, uring.OpStatx, uring.OpRead, uring.OpWrite, uring.OpFsync,
			uring.OpFtruncate, uring.OpRenameat, uring.OpUnlinkat, uring.OpClose}},
	}
	bodies := []struct {
		name string
		run  func(t *testing.T, eng fileio.Engine)
	}{
		{"ops", testOps}, {"errors", testErrors}, {"group commit", testGroupCommit},
		{"file size limit", testFileSizeLimit}, {"shutdown", testShutdownWaits}, {"like os", testLikeOS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer uring.Lack(c.ops...)()
			for _, b := range bodies {
				t.Run(b.name, func(t *testing.T) { b.run(t, fileio.EngineURing) })
			}
		})
	}
}
