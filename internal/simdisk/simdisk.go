// Package simdisk is a simulated disk on fake time: named files, the
// bytes they hold, what of them is durable, and the faults that befall
// them, every choice drawn from one seeded *rand.Rand. It knows nothing
// of loops or of package fileio: fileio's simulated engine carries its
// operations out here, and package sim gives each host one Disk on the
// world's clock and its rand.
//
// The model. Every file (an inode) has two states: what a read sees now
// (data) and what would survive a crash (durable). A write changes data
// at once and is remembered as unsynced until a Sync of the file applies
// it to durable (the unsynced writes only, in order: a sync costs what was
// written since the last one, not the file's size). A Sync that fails
// (EIO) drops the writes it covered from the unsynced ones, as Linux
// marks the pages of a failed writeback clean: they stay in data, so reads
// still see them, but no later Sync makes them durable, and a Crash loses
// them; a program must assume them lost (write them again, or give up the
// file). A Crash rebuilds every file from durable: each unsynced write
// is, as the rand decides, kept whole, lost, or torn (a prefix of it
// kept), so a file may end up shorter, with a hole of zeros, or with part
// of its last write. Names (create, rename, remove) and Truncate are
// durable when they complete, as on a journaling file system that commits
// its metadata in order; a Truncate cuts the unsynced writes beyond the
// new size, so nothing it removed comes back at a crash.
//
// Invariants:
//   - everything runs on one goroutine (the simulation's driver and the
//     loops it steps): nothing here locks;
//   - every choice (latency, a failed sync, how a crash treats each
//     unsynced write) is drawn from Rand in an order that depends only on
//     what happened before, and files are visited in name order, never a
//     map's, so one seed gives one run;
//   - used is the sum of the lengths of every live inode's data (named or
//     still open), and never exceeds Faults.Capacity when that is set: a
//     write that does not fit writes what fits and fails with ENOSPC;
//   - durable only changes by a successful Sync, a Truncate, or a Crash;
//     data is durable with the writes made since applied in the order
//     they were made: the unsynced ones and those a failed Sync dropped,
//     which are in data only;
//   - a Handle refers to its inode until it is closed; an inode without a
//     name lives while a handle refers to it; a Crash ends every handle
//     (gen), as the crash of its host ends every process.
package simdisk

import (
	"io/fs"
	"math/rand"
	"path"
	"slices"
	"syscall"
	"time"
)

// Scheduler is the clock a Disk runs on and its queue of events: the
// simulated network's (simnet.Net) under package sim.
type Scheduler interface {
	// Now returns the time in nanoseconds.
	Now() int64
	// After runs fn d from now, on the scheduler's goroutine.
	After(d time.Duration, fn func())
}

// Faults are the latencies and faults the disk draws from. The zero value
// is an instant disk without faults; New uses DefaultFaults.
type Faults struct {
	// MinLatency and MaxLatency bound how long one operation takes.
	MinLatency, MaxLatency time.Duration
	// MinSync and MaxSync bound how long a Sync takes.
	MinSync, MaxSync time.Duration
	// SyncEIO is the chance that a Sync fails with EIO. The writes a
	// failed Sync covered (every write to the file since its last
	// successful Sync) are lost to the disk: reads still see them until a
	// crash, which drops them, and no later Sync makes them durable, as
	// Linux marks the pages of a failed writeback clean.
	SyncEIO float64
	// Capacity is how many bytes the disk holds (the sum of its files'
	// sizes); 0 is no limit. A write past it writes what fits and fails
	// with ENOSPC.
	Capacity int64
	// CrashKeep, CrashTear and CrashLose weigh what a crash does to each
	// unsynced write: keep it whole, tear it (keep a prefix), or lose it.
	// All zero: the three are equally likely.
	CrashKeep, CrashTear, CrashLose float64
}

// DefaultFaults are the latencies of a quiet SSD: no faults.
var DefaultFaults = Faults{
	MinLatency: 5 * time.Microsecond, MaxLatency: 50 * time.Microsecond,
	MinSync: 100 * time.Microsecond, MaxSync: 2 * time.Millisecond,
}

// Disk is one host's simulated disk. Make one with New.
type Disk struct {
	// Faults are the disk's own faults, used unless UseFaults points the
	// disk at others.
	Faults Faults
	// Record, when set, is told every operation carried out (a kind, two
	// numbers and bytes), for the simulation's trace.
	Record func(kind byte, a, b uint64, data []byte)

	f      *Faults // the faults in use: &Faults, or UseFaults's
	sched  Scheduler
	rand   *rand.Rand
	names  map[string]*inode
	open   []*Handle // open handles, each at its idx
	used   int64
	gen    uint64 // bumped by a crash
	nextID uint64
	syncs  uint64
	synced int64 // bytes Syncs applied to durable (the cost of syncs)
}

// inode is one file's bytes.
type inode struct {
	id       uint64
	data     []byte  // what a read sees now
	durable  []byte  // what survives a crash
	unsynced []write // writes since the last sync, in order
	mode     fs.FileMode
	mtime    int64
	named    int // names that refer to it (0 or 1: no links)
	handles  int // open handles
}

// write is an unsynced write.
type write struct {
	off  int64
	data []byte
}

// Handle is an open file of a Disk.
type Handle struct {
	d      *Disk
	ino    *inode
	name   string
	flag   int
	gen    uint64
	idx    int
	closed bool
}

// New returns an empty disk on s whose choices are drawn from rng.
func New(s Scheduler, rng *rand.Rand) *Disk {
	d := &Disk{Faults: DefaultFaults, sched: s, rand: rng, names: map[string]*inode{}}
	d.f = &d.Faults
	return d
}

// UseFaults makes the disk draw from *f instead of its Faults field,
// from now on (package sim points it at the faults of its own Disk type).
func (d *Disk) UseFaults(f *Faults) { d.f = f }

// Now returns the disk's time in nanoseconds.
func (d *Disk) Now() int64 { return d.sched.Now() }

// After runs fn d from now, on the disk's clock.
func (d *Disk) After(t time.Duration, fn func()) { d.sched.After(t, fn) }

// Latency draws how long an operation takes; sync for a Sync.
func (d *Disk) Latency(sync bool) time.Duration {
	lo, hi := d.f.MinLatency, d.f.MaxLatency
	if sync {
		lo, hi = d.f.MinSync, d.f.MaxSync
	}
	if hi <= lo {
		return max(lo, 0)
	}
	return lo + time.Duration(d.rand.Int63n(int64(hi-lo)))
}

// Gen returns the disk's generation: how many times it crashed. An
// operation that began before a crash and would land after it never
// happened (package fileio's simulated engine checks it).
func (d *Disk) Gen() uint64 { return d.gen }

// Syncs returns how many Syncs the disk has carried out (failed ones
// included).
func (d *Disk) Syncs() uint64 { return d.syncs }

// Used returns the bytes the disk's files hold.
func (d *Disk) Used() int64 { return d.used }

func (d *Disk) record(kind byte, a, b uint64, data []byte) {
	if d.Record != nil {
		d.Record(kind, a, b, data)
	}
}

func clean(name string) string { return path.Clean("/" + name) }

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// Open opens name with os.OpenFile's flags and returns the handle and
// the file's size.
func (d *Disk) Open(name string, flag int, perm fs.FileMode) (*Handle, int64, error) {
	if name == "" {
		return nil, 0, pathErr("open", name, syscall.ENOENT)
	}
	key := clean(name)
	ino := d.names[key]
	switch {
	case ino == nil && flag&syscall.O_CREAT == 0:
		return nil, 0, pathErr("open", name, syscall.ENOENT)
	case ino != nil && flag&syscall.O_CREAT != 0 && flag&syscall.O_EXCL != 0:
		return nil, 0, pathErr("open", name, syscall.EEXIST)
	case ino == nil:
		d.nextID++
		ino = &inode{id: d.nextID, mode: perm & fs.ModePerm, mtime: d.Now(), named: 1}
		d.names[key] = ino
	}
	h := &Handle{d: d, ino: ino, name: name, flag: flag, gen: d.gen, idx: len(d.open)}
	d.open = append(d.open, h)
	ino.handles++
	if flag&syscall.O_TRUNC != 0 && flag&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		d.truncate(ino, 0)
	}
	d.record('o', ino.id, uint64(flag), []byte(key))
	return h, int64(len(ino.data)), nil
}

// check fails an operation on a handle that is closed or from before a
// crash.
func (h *Handle) check(op string) error {
	if h.closed || h.gen != h.d.gen {
		return pathErr(op, h.name, syscall.EBADF)
	}
	return nil
}

// Name returns the name the handle was opened with.
func (h *Handle) Name() string { return h.name }

// ReadAt reads into p from off: n < len(p) only at the end of the file
// (no io.EOF: the caller decides what the end means).
func (h *Handle) ReadAt(p []byte, off int64) (int, error) {
	if err := h.check("read"); err != nil {
		return 0, err
	}
	if h.flag&syscall.O_WRONLY != 0 {
		return 0, pathErr("read", h.name, syscall.EBADF)
	}
	n := 0
	if off < int64(len(h.ino.data)) {
		n = copy(p, h.ino.data[off:])
	}
	h.d.record('r', h.ino.id, uint64(off), p[:n])
	return n, nil
}

// WriteAt writes p at off. A write past the disk's capacity writes what
// fits and fails with ENOSPC.
func (h *Handle) WriteAt(p []byte, off int64) (int, error) {
	if err := h.check("write"); err != nil {
		return 0, err
	}
	if h.flag&(syscall.O_WRONLY|syscall.O_RDWR) == 0 {
		return 0, pathErr("write", h.name, syscall.EBADF)
	}
	d, ino := h.d, h.ino
	end := off + int64(len(p))
	var err error
	if grow := end - int64(len(ino.data)); grow > 0 && d.f.Capacity > 0 && d.used+grow > d.f.Capacity {
		room := d.f.Capacity - d.used
		end = max(int64(len(ino.data))+room, off)
		p = p[:end-off]
		err = pathErr("write", h.name, syscall.ENOSPC)
	}
	if len(p) > 0 {
		if grow := end - int64(len(ino.data)); grow > 0 {
			ino.data = append(ino.data, make([]byte, grow)...)
			d.used += grow
		}
		copy(ino.data[off:], p)
		ino.unsynced = append(ino.unsynced, write{off: off, data: slices.Clone(p)})
		ino.mtime = d.Now()
	}
	d.record('w', ino.id, uint64(off), p)
	return len(p), err
}

// Sync makes what the file holds durable, or fails with EIO as the
// faults say.
func (h *Handle) Sync() error {
	if err := h.check("sync"); err != nil {
		return err
	}
	d, ino := h.d, h.ino
	d.syncs++
	if d.f.SyncEIO > 0 && d.rand.Float64() < d.f.SyncEIO {
		d.record('F', ino.id, uint64(len(ino.unsynced)), nil)
		clear(ino.unsynced)
		ino.unsynced = ino.unsynced[:0] // lost: in data only (see the package doc)
		return pathErr("sync", h.name, syscall.EIO)
	}
	for _, w := range ino.unsynced {
		ino.durable = apply(ino.durable, w.off, w.data)
		d.synced += int64(len(w.data))
	}
	clear(ino.unsynced)
	ino.unsynced = ino.unsynced[:0]
	d.record('f', ino.id, uint64(len(ino.durable)), nil)
	return nil
}

// apply writes p at off in b, growing b with zeros as needed.
func apply(b []byte, off int64, p []byte) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

// Truncate changes the file's size.
func (h *Handle) Truncate(size int64) error {
	if err := h.check("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", h.name, syscall.EINVAL)
	}
	if h.flag&(syscall.O_WRONLY|syscall.O_RDWR) == 0 {
		return pathErr("truncate", h.name, syscall.EINVAL)
	}
	d := h.d
	if grow := size - int64(len(h.ino.data)); grow > 0 && d.f.Capacity > 0 && d.used+grow > d.f.Capacity {
		return pathErr("truncate", h.name, syscall.ENOSPC)
	}
	d.truncate(h.ino, size)
	return nil
}

// truncate sets ino's size, durably, and cuts its unsynced writes to it.
func (d *Disk) truncate(ino *inode, size int64) {
	d.used += size - int64(len(ino.data))
	ino.data = resize(ino.data, size)
	ino.durable = resize(ino.durable, size)
	ws := ino.unsynced[:0]
	for _, w := range ino.unsynced {
		if w.off >= size {
			continue
		}
		if w.off+int64(len(w.data)) > size {
			w.data = w.data[:size-w.off]
		}
		ws = append(ws, w)
	}
	ino.unsynced = ws
	ino.mtime = d.Now()
	d.record('t', ino.id, uint64(size), nil)
}

// resize returns b cut or grown (with zeros) to n bytes.
func resize(b []byte, n int64) []byte {
	if int64(len(b)) >= n {
		return b[:n:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

// Info is a file's description, as fs.FileInfo.
type Info struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime int64
}

func (i *Info) Name() string       { return path.Base(i.name) }
func (i *Info) Size() int64        { return i.size }
func (i *Info) Mode() fs.FileMode  { return i.mode }
func (i *Info) ModTime() time.Time { return time.Unix(0, 0).Add(time.Duration(i.mtime)).UTC() }
func (i *Info) IsDir() bool        { return false }
func (i *Info) Sys() any           { return nil }

func (ino *inode) info(name string) *Info {
	return &Info{name: name, size: int64(len(ino.data)), mode: ino.mode, mtime: ino.mtime}
}

// Stat describes the open file.
func (h *Handle) Stat() (fs.FileInfo, error) {
	if err := h.check("stat"); err != nil {
		return nil, err
	}
	return h.ino.info(h.name), nil
}

// Close closes the handle; an inode without a name goes with its last
// handle.
func (h *Handle) Close() error {
	if err := h.check("close"); err != nil {
		return err
	}
	h.closed = true
	d := h.d
	last := d.open[len(d.open)-1]
	d.open[h.idx], last.idx = last, h.idx
	d.open = d.open[:len(d.open)-1]
	h.ino.handles--
	d.gone(h.ino)
	d.record('c', h.ino.id, 0, nil)
	return nil
}

// gone frees ino's bytes once neither a name nor a handle refers to it.
func (d *Disk) gone(ino *inode) {
	if ino.named == 0 && ino.handles == 0 {
		d.used -= int64(len(ino.data))
		ino.data, ino.durable, ino.unsynced = nil, nil, nil
	}
}

// Stat describes the file called name.
func (d *Disk) Stat(name string) (fs.FileInfo, error) {
	ino := d.names[clean(name)]
	if ino == nil {
		return nil, pathErr("stat", name, syscall.ENOENT)
	}
	return ino.info(name), nil
}

// Rename gives oldname's file the name newname, replacing a file of that
// name.
func (d *Disk) Rename(oldname, newname string) error {
	o, n := clean(oldname), clean(newname)
	ino := d.names[o]
	if ino == nil {
		return linkErr(oldname, newname, syscall.ENOENT)
	}
	if o == n {
		return nil
	}
	if old := d.names[n]; old != nil {
		old.named--
		d.gone(old)
	}
	delete(d.names, o)
	d.names[n] = ino
	d.record('m', ino.id, 0, []byte(n))
	return nil
}

// LinkError is os.LinkError's shape (os is not imported here).
type LinkError struct {
	Op, Old, New string
	Err          error
}

func (e *LinkError) Error() string { return e.Op + " " + e.Old + " " + e.New + ": " + e.Err.Error() }
func (e *LinkError) Unwrap() error { return e.Err }

func linkErr(oldname, newname string, err error) error {
	return &LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
}

// Remove removes the name; the file's bytes go with its last handle.
func (d *Disk) Remove(name string) error {
	key := clean(name)
	ino := d.names[key]
	if ino == nil {
		return pathErr("remove", name, syscall.ENOENT)
	}
	delete(d.names, key)
	ino.named--
	d.gone(ino)
	d.record('u', ino.id, 0, []byte(key))
	return nil
}

// Crash is the crash of the disk's host: every handle ends, files that
// only handles kept alive go, and every file is rebuilt from what was
// durable, with each of its unsynced writes kept, lost or torn as rng
// decides (see the package doc). The simulation calls it when it crashes
// the host.
func (d *Disk) Crash(rng *rand.Rand) {
	d.gen++
	for _, h := range d.open {
		h.closed = true
		h.ino.handles--
	}
	d.open = nil
	names := make([]string, 0, len(d.names))
	for n := range d.names {
		names = append(names, n)
	}
	slices.Sort(names)
	keep, tear, lose := d.f.CrashKeep, d.f.CrashTear, d.f.CrashLose
	if sum := keep + tear + lose; sum > 0 {
		keep, tear = keep/sum, tear/sum
	} else {
		keep, tear = 1.0/3, 1.0/3
	}
	d.used = 0
	for _, n := range names {
		ino := d.names[n]
		data := slices.Clone(ino.durable)
		for _, w := range ino.unsynced {
			p := w.data
			switch r := rng.Float64(); {
			case r < keep:
			case r < keep+tear && len(p) > 0:
				p = p[:rng.Intn(len(p))]
			default:
				p = nil
			}
			if len(p) == 0 {
				continue
			}
			data = apply(data, w.off, p)
			d.record('X', ino.id, uint64(w.off), p)
		}
		ino.data, ino.durable, ino.unsynced = data, slices.Clone(data), nil
		d.used += int64(len(data))
	}
	d.record('C', d.gen, uint64(d.used), nil)
}

// ReadFile returns a copy of what the file called name holds now, for
// tests; ok is false if there is none.
func (d *Disk) ReadFile(name string) (data []byte, ok bool) {
	ino := d.names[clean(name)]
	if ino == nil {
		return nil, false
	}
	return slices.Clone(ino.data), true
}

// WriteFile makes the file called name hold data, durably, for tests
// that start from a disk with files on it.
func (d *Disk) WriteFile(name string, data []byte) {
	key := clean(name)
	ino := d.names[key]
	if ino == nil {
		d.nextID++
		ino = &inode{id: d.nextID, mode: 0o644, named: 1}
		d.names[key] = ino
	}
	d.used += int64(len(data)) - int64(len(ino.data))
	ino.data, ino.durable, ino.unsynced = slices.Clone(data), slices.Clone(data), nil
	ino.mtime = d.Now()
}
