//go:build linux && !purego

package fileio

// The io_uring engine: the loop's files on the loop's io_uring
// (internal/uring), the ring the loop waits in. Each op is one entry,
// handed to the kernel by the loop's next io_uring_enter (the one that
// also waits, so a batch's writes and fsyncs cost no system call of their
// own) and handed back from its completion, on the loop. The kernel
// carries out on its own workers what would wait (an fsync, a read that
// misses the page cache), and the copy of a large read or write
// (inlineRW), so the loop's enter never stalls on it. The ops: OPENAT
// then a STATX of the new descriptor (the size Append starts at), READ
// and WRITE (resubmitted from where a short one stopped until whole, or
// the end of the file for a read), FSYNC (IORING_FSYNC_DATASYNC for
// DataSync), STATX (of a path, or AT_EMPTY_PATH of a descriptor),
// FTRUNCATE, RENAMEAT, UNLINKAT (then UNLINKAT with AT_REMOVEDIR, as
// os.Remove), CLOSE. An op whose operation the kernel's ring lacks (its
// probe does not list it: FTRUNCATE before Linux 6.9) goes to a worker
// pool of the engine's own, which carries it out on the descriptor with
// the plain system call; fileio says so once per operation (log/slog).
//
// Invariants (loop-owned unless said):
//   - an op on the ring has a slot: slots[i] is the op whose entry
//     carries i in its user_data, from its submission until its
//     completion, so the memory the entry names (the op's buffer, its
//     paths as C strings, its statx buffer, all reachable from the op)
//     stays alive until the kernel is done with it; n counts the slots
//     taken;
//   - a ringFile's refs count its open reference and the ops started on
//     it (on the ring or the pool) that have not completed; they are
//     dropped on the loop for the ring's, on a worker for the pool's. The
//     last reference closes the descriptor: by the CLOSE entry of the
//     File's Close (its result is the Close's), or by close(2) directly
//     once the executor has closed, so it is closed exactly once and never
//     under an op in flight;
//   - closed is set once the executor has closed (the state's interrupt,
//     which the ring's Closing brings about first if the ring closes
//     first): from then on no op is handed back or resubmitted; a
//     completion only lets go of what its op held (a descriptor an open
//     made is closed). The ring cancels what is in flight and hands the
//     completions over before it closes (Pending); the ops it could not
//     drain in time keep their memory forever (ringOrphans).

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
)

// maxRW is the most one READ or WRITE entry asks for; a longer op goes on
// in further entries.
const maxRW = 1 << 30

// inlineRW is the size from which a READ or WRITE goes to the kernel's
// workers at once (IOSQE_ASYNC): below it the kernel copies the bytes
// within the loop's io_uring_enter when it can do so without waiting
// (the page cache), as cheap as a hand-off; above it that copy would be
// a stall of the loop's own.
const inlineRW = 16 << 10

// ringFile is the io_uring engine's handle: a descriptor.
type ringFile struct {
	fd   int32
	refs atomic.Int32
}

func (h *ringFile) ref() { h.refs.Add(1) }

// unref drops a reference; the last closes the descriptor with close(2)
// (the ring's CLOSE serves a File's Close: ringEngine.start).
func (h *ringFile) unref() error {
	if h.refs.Add(-1) == 0 {
		return os.NewSyscallError("close", unix.Close(int(h.fd)))
	}
	return nil
}

type ringEngine struct {
	lp     *loop.Loop
	ring   *uring.Ring
	tag    uring.Tag
	slots  []*op
	free   []uint32
	n      int
	has    [opClose + 1]bool // the op kinds the ring carries out
	pool   *pool             // for the others, made on first use
	size   int               // the pool's size
	closed bool              // the executor has closed (see above)
}

var (
	_ engine        = (*ringEngine)(nil)
	_ uring.Handler = (*ringEngine)(nil)
)

// opcodes says which operations each op kind needs of the kernel.
var opcodes = [opClose + 1][]uint8{
	opOpen:     {uring.OpOpenat, uring.OpStatx},
	opRead:     {uring.OpRead},
	opWrite:    {uring.OpWrite},
	opSync:     {uring.OpFsync},
	opDataSync: {uring.OpFsync},
	opTruncate: {uring.OpFtruncate},
	opFstat:    {uring.OpStatx},
	opStat:     {uring.OpStatx},
	opRename:   {uring.OpRenameat},
	opRemove:   {uring.OpUnlinkat},
	opClose:    {uring.OpClose},
}

// ringEngineOf returns an io_uring engine for lp's files, or nil for the
// pool: the loop waits in its ring already, or cfg (or SPINDLE_NETIO)
// asks for one and the loop can have it: not one that waits in epoll,
// nor, on SPINDLE_NETIO's word alone, one whose sockets netio.Use gave
// to epoll (uring.Declined). Loop only.
func ringEngineOf(lp *loop.Loop, cfg Config) engine {
	if cfg.Engine == EnginePool {
		return nil
	}
	r := uring.Existing(lp)
	if r == nil && wantRing(cfg) && (cfg.Engine == EngineURing || !uring.Declined(lp)) {
		var err error
		if r, err = uring.Of(lp); err != nil {
			if cfg.Engine == EngineURing || !errors.Is(err, uring.ErrOtherIO) {
				ringRefused(err) // asked for by name, or refused by the kernel
			}
			return nil
		}
	}
	if r == nil || r.Closing() {
		return nil
	}
	e := &ringEngine{lp: lp, ring: r, size: cfg.Workers}
	var lacks []string
	for k, ops := range opcodes {
		e.has[k] = true
		for _, c := range ops {
			if !r.Supports(c) {
				e.has[k] = false
			}
		}
		if !e.has[k] {
			lacks = append(lacks, (&op{kind: opKind(k)}).opName())
		}
	}
	if len(lacks) > 0 {
		noteLacks(lacks)
	}
	e.tag = r.Register(e)
	return e
}

var (
	refusedOnce sync.Once
	lacksMu     sync.Mutex
	lacksSaid   = map[string]bool{}
)

// ringRefused says, once, that the ring was asked for and refused.
func ringRefused(err error) {
	refusedOnce.Do(func() {
		slog.Warn("fileio: io_uring was asked for (Config.Engine or SPINDLE_NETIO=uring), and the loop cannot have it; the worker pool serves the files",
			"err", err)
	})
}

// noteLacks says, once per operation, which ops go to the pool.
func noteLacks(ops []string) {
	lacksMu.Lock()
	defer lacksMu.Unlock()
	var news []string
	for _, o := range ops {
		if !lacksSaid[o] {
			lacksSaid[o] = true
			news = append(news, o)
		}
	}
	if len(news) > 0 {
		slog.Info("fileio: the kernel's io_uring lacks these file operations; the worker pool carries them out", "ops", news)
	}
}

func (e *ringEngine) name() string { return string(EngineURing) }

// start submits o to the ring, or hands it to the pool when the ring
// lacks its operation.
func (e *ringEngine) start(o *op) {
	if o.kind == opJob || !e.has[o.kind] { // a caller's job is the pool's always
		if e.pool == nil {
			e.pool = newPool(e.size)
			e.pool.do = runRaw
		}
		e.pool.start(o)
		return
	}
	if o.h != nil {
		if o.kind == opClose {
			h := o.h.(*ringFile)
			if h.refs.Add(-1) != 0 { // not the last: another op holds it (the executor closed)
				_ = e.lp.ScheduleOffLoop(o, nil, 0)
				return
			}
		} else {
			o.h.ref()
		}
	}
	switch o.kind {
	case opOpen, opStat, opRename, opRemove:
		a := &ringAux{p1: cstr(o.path)}
		if o.kind == opRename {
			a.p2 = cstr(o.path2)
		}
		o.aux = a
	case opFstat:
		o.aux = &ringAux{}
	}
	e.submit(o)
}

// ringAux is what a path op or a stat keeps while it is in flight.
type ringAux struct {
	p1, p2 []byte // the paths, NUL-terminated
	stx    unix.Statx_t
	fd     int32 // what OPENAT returned, while its STATX is in flight
	err    error // UNLINKAT's, while the AT_REMOVEDIR one is in flight
}

var emptyPath = []byte{0}

func cstr(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// submit fills o's next entry and gives o a slot until it completes.
func (e *ringEngine) submit(o *op) {
	var i uint32
	if k := len(e.free); k > 0 {
		i = e.free[k-1]
		e.free = e.free[:k-1]
	} else {
		i = uint32(len(e.slots))
		e.slots = append(e.slots, nil)
	}
	e.slots[i] = o
	e.n++
	s := e.ring.Next()
	s.UserData = uring.UserData(e.tag, uint64(i))
	var fd int32
	if h, ok := o.h.(*ringFile); ok {
		fd = h.fd
	}
	switch o.kind {
	case opOpen:
		a := o.aux.(*ringAux)
		if o.stage == 0 {
			s.Opcode = uring.OpOpenat
			s.Fd = unix.AT_FDCWD
			s.Addr = addr(a.p1)
			s.Len = syscallMode(o.perm)
			s.OpFlags = uint32(o.flag | unix.O_CLOEXEC)
			break
		}
		e.statx(s, a.fd, emptyPath, unix.AT_EMPTY_PATH, unix.STATX_SIZE, a)
	case opRead, opWrite:
		s.Opcode = uring.OpRead
		if o.kind == opWrite {
			s.Opcode = uring.OpWrite
		}
		s.Fd = fd
		s.Addr = addr(o.buf[o.n:])
		s.Len = uint32(min(len(o.buf)-o.n, maxRW))
		s.Off = uint64(o.off + int64(o.n))
		if s.Len >= inlineRW {
			s.Flags |= uring.SQEAsync // the copy on a kernel worker, not in the loop's enter
		}
	case opSync, opDataSync:
		s.Opcode = uring.OpFsync
		s.Fd = fd
		if o.kind == opDataSync {
			s.OpFlags = uring.FsyncDatasync
		}
	case opTruncate:
		s.Opcode = uring.OpFtruncate
		s.Fd = fd
		s.Off = uint64(o.off)
	case opFstat:
		e.statx(s, fd, emptyPath, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, o.aux.(*ringAux))
	case opStat:
		a := o.aux.(*ringAux)
		e.statx(s, unix.AT_FDCWD, a.p1, 0, unix.STATX_BASIC_STATS, a)
	case opRename:
		a := o.aux.(*ringAux)
		s.Opcode = uring.OpRenameat
		s.Fd = unix.AT_FDCWD
		s.Addr = addr(a.p1)
		dirfd := int32(unix.AT_FDCWD)
		s.Len = uint32(dirfd)
		s.Off = addr(a.p2)
	case opRemove:
		a := o.aux.(*ringAux)
		s.Opcode = uring.OpUnlinkat
		s.Fd = unix.AT_FDCWD
		s.Addr = addr(a.p1)
		if o.stage == 1 {
			s.OpFlags = unix.AT_REMOVEDIR
		}
	case opClose:
		s.Opcode = uring.OpClose
		s.Fd = fd
	}
}

func (e *ringEngine) statx(s *uring.SQE, fd int32, path []byte, flags, mask uint32, a *ringAux) {
	s.Opcode = uring.OpStatx
	s.Fd = fd
	s.Addr = addr(path)
	s.OpFlags = flags
	s.Len = mask
	s.Off = uint64(uintptr(unsafe.Pointer(&a.stx)))
}

// Complete brings an entry's completion to its op (uring.Handler): the op
// goes on with its next entry, or is handed back to the loop.
func (e *ringEngine) Complete(c uring.CQE) {
	i := uint32(c.Bits())
	o := e.slots[i]
	e.slots[i] = nil
	e.free = append(e.free, i)
	e.n--
	if e.closed {
		e.abandon(o, c.Res)
		return
	}
	if !e.landed(o, c.Res) {
		e.submit(o) // its next entry
		return
	}
	if o.h != nil && o.kind != opClose {
		_ = o.h.unref()
	}
	o.aux = nil
	e.lp.PostRunnable(o, nil, 0)
}

// landed records an entry's result in o and reports whether o is done.
func (e *ringEngine) landed(o *op, res int32) bool {
	var err error
	if res < 0 {
		err = syscall.Errno(-res)
	}
	name := o.path
	if o.f != nil {
		name = o.f.name
	}
	switch o.kind {
	case opOpen:
		a := o.aux.(*ringAux)
		if o.stage == 0 {
			if err != nil {
				o.err = pathErr("open", name, err)
				return true
			}
			a.fd, o.stage = res, 1
			return false
		}
		if err != nil {
			unix.Close(int(a.fd))
			o.err = pathErr("stat", name, err)
			return true
		}
		h := &ringFile{fd: a.fd}
		h.refs.Store(1)
		o.nh, o.size = h, int64(a.stx.Size)
	case opRead, opWrite:
		if err != nil {
			o.err = pathErr(o.opName(), name, err)
			return true
		}
		o.n += int(res)
		if o.n == len(o.buf) {
			return true
		}
		if res == 0 {
			if o.kind == opWrite {
				o.err = pathErr("write", name, io.ErrShortWrite)
			}
			return true // a read at the end of the file
		}
		return false
	case opFstat, opStat:
		if err != nil {
			o.err = pathErr("stat", name, err)
			return true
		}
		o.info = statxInfo(filepath.Base(name), &o.aux.(*ringAux).stx)
	case opRename:
		if err != nil {
			o.err = &os.LinkError{Op: "rename", Old: o.path, New: o.path2, Err: err}
		}
	case opRemove:
		a := o.aux.(*ringAux)
		if o.stage == 0 && err != nil {
			a.err, o.stage = err, 1 // not a file, maybe a directory: as os.Remove
			return false
		}
		if o.stage == 1 && err != nil {
			if err != syscall.ENOTDIR {
				a.err = err
			}
			o.err = pathErr("remove", name, a.err)
		}
	default:
		if err != nil {
			o.err = pathErr(o.opName(), name, err)
		}
	}
	return true
}

// abandon lets go of what o held once the executor has closed: it is
// never handed back.
func (e *ringEngine) abandon(o *op, res int32) {
	switch {
	case o.kind == opOpen && o.stage == 0 && res >= 0:
		unix.Close(int(res))
	case o.kind == opOpen && o.stage == 1:
		unix.Close(int(o.aux.(*ringAux).fd))
	case o.kind == opClose && res == -int32(unix.ECANCELED):
		unix.Close(int(o.h.(*ringFile).fd)) // cancelled before it ran
	case o.h != nil && o.kind != opClose:
		_ = o.h.unref()
	}
	o.aux = nil
}

// Closing is told by the ring that it closes (the executor does): the
// state fails what is pending and shuts the engine, if its own close
// watch has not yet, so that nothing is submitted once the ring cancels
// what is in flight.
func (e *ringEngine) Closing() {
	if st, ok := e.lp.Local(stateKey{}).(*state); ok {
		(*stateWatch)(st).Interrupt(executor.ErrClosed)
	}
	e.shut()
}

// Pending reports whether an op is on the ring (uring.Handler).
func (e *ringEngine) Pending() bool { return e.n > 0 }

// ringOrphans holds the ops of rings closed while the kernel still had
// them in flight: the memory they name must never be reused.
var ringOrphans struct {
	mu  sync.Mutex
	ops []*op
}

// Closed is told by the ring that it has closed (uring.Handler). What was
// not drained keeps its memory; its descriptors are let go.
func (e *ringEngine) Closed(drained bool) {
	if drained {
		return
	}
	ringOrphans.mu.Lock()
	defer ringOrphans.mu.Unlock()
	for i, o := range e.slots {
		if o != nil {
			e.slots[i] = nil
			ringOrphans.ops = append(ringOrphans.ops, o)
			if o.h != nil && o.kind != opClose {
				_ = o.h.unref()
			}
		}
	}
}

func (e *ringEngine) shut() {
	e.closed = true
	if e.pool != nil {
		e.pool.shut()
	}
}

func (e *ringEngine) release(h handle) { _ = h.unref() }

func (e *ringEngine) wait() {
	if e.pool != nil {
		e.pool.wait()
	}
}

// syscallMode is os's: the permission bits and setuid, setgid, sticky.
func syscallMode(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		o |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		o |= syscall.S_ISVTX
	}
	return o
}

// statInfo is an fs.FileInfo made from a statx, as os.Stat's: Sys returns
// a *syscall.Stat_t.
type statInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	sys   syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.size }
func (s *statInfo) Mode() fs.FileMode  { return s.mode }
func (s *statInfo) ModTime() time.Time { return s.mtime }
func (s *statInfo) IsDir() bool        { return s.mode.IsDir() }
func (s *statInfo) Sys() any           { return &s.sys }

// set stores v in a field whose integer type depends on the architecture.
func set[T ~int32 | ~int64 | ~uint32 | ~uint64](p *T, v uint64) { *p = T(v) }

func tsOf(t unix.StatxTimestamp) syscall.Timespec {
	return syscall.NsecToTimespec(t.Sec*1e9 + int64(t.Nsec))
}

// statxInfo describes x as os.Stat does (os's fillFileStatFromSys).
func statxInfo(name string, x *unix.Statx_t) fs.FileInfo {
	s := &statInfo{name: name, size: int64(x.Size)}
	st := &s.sys
	set(&st.Dev, unix.Mkdev(x.Dev_major, x.Dev_minor))
	set(&st.Ino, x.Ino)
	set(&st.Nlink, uint64(x.Nlink))
	set(&st.Mode, uint64(x.Mode))
	st.Uid, st.Gid = x.Uid, x.Gid
	set(&st.Rdev, unix.Mkdev(x.Rdev_major, x.Rdev_minor))
	set(&st.Size, x.Size)
	set(&st.Blksize, uint64(x.Blksize))
	set(&st.Blocks, x.Blocks)
	st.Atim, st.Mtim, st.Ctim = tsOf(x.Atime), tsOf(x.Mtime), tsOf(x.Ctime)
	s.mtime = time.Unix(x.Mtime.Sec, int64(x.Mtime.Nsec))
	m := uint32(x.Mode)
	s.mode = fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		s.mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		s.mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		s.mode |= fs.ModeDir
	case syscall.S_IFIFO:
		s.mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		s.mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		s.mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		s.mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		s.mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		s.mode |= fs.ModeSticky
	}
	return s
}

// runRaw is the pool's work for the io_uring engine's ops the ring lacks:
// the plain system calls, on the descriptor. Off the loop.
func runRaw(o *op) {
	switch o.kind {
	case opJob:
		runJob(o)
		return
	case opOpen:
		fd, err := unix.Open(o.path, o.flag|unix.O_CLOEXEC, syscallMode(o.perm))
		if err != nil {
			o.err = pathErr("open", o.path, err)
			return
		}
		var x unix.Statx_t
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_SIZE, &x); err != nil {
			unix.Close(fd)
			o.err = pathErr("stat", o.path, err)
			return
		}
		h := &ringFile{fd: int32(fd)}
		h.refs.Store(1)
		o.nh, o.size = h, int64(x.Size)
		return
	case opStat, opRename, opRemove:
		run(o) // package os's, on the path
		return
	}
	h := o.h.(*ringFile)
	fd, name := int(h.fd), o.f.name
	var err error
	switch o.kind {
	case opRead, opWrite:
		for o.n < len(o.buf) {
			var k int
			b := o.buf[o.n:min(len(o.buf), o.n+maxRW)]
			if o.kind == opRead {
				k, err = unix.Pread(fd, b, o.off+int64(o.n))
			} else {
				k, err = unix.Pwrite(fd, b, o.off+int64(o.n))
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil || k == 0 {
				if err == nil && o.kind == opWrite {
					err = io.ErrShortWrite
				}
				break
			}
			o.n += k
		}
	case opSync:
		err = ignoringEINTR(func() error { return unix.Fsync(fd) })
	case opDataSync:
		err = ignoringEINTR(func() error { return unix.Fdatasync(fd) })
	case opTruncate:
		err = ignoringEINTR(func() error { return unix.Ftruncate(fd, o.off) })
	case opFstat:
		var x unix.Statx_t
		if err = unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &x); err == nil {
			o.info = statxInfo(filepath.Base(name), &x)
		}
	case opClose:
		// The shared code starts opClose once nothing else is in flight
		// on the file: this drops the last reference and closes it.
		if err := h.unref(); err != nil {
			o.err = pathErr("close", name, errors.Unwrap(err))
		}
		return
	}
	if err != nil {
		o.err = pathErr(o.opName(), name, err)
	}
	_ = h.unref()
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
