package sim

// The faults a test sets: the network's (World.Faults) and each host's
// disk's (Host.Disk), and the count of those the network drew
// (World.Hits). Faults, Hits and DiskFaults are types of this package, so
// that their fields are documented here, with the same fields as the
// simulation's internal ones: the pointer conversions between them below
// compile only while the fields are the same.

import (
	"math/rand"
	"time"

	"github.com/spindle-rt/spindle/internal/simdisk"
	"github.com/spindle-rt/spindle/internal/simnet"
)

// Faults are the chances and delays the network draws from, for every
// connection of the world. World.Faults returns the world's, which start
// as a quiet network's (the defaults below) and may be changed before or
// during a run: a change holds from the next thing the network draws.
type Faults struct {
	// MinDelay and MaxDelay bound how long one piece of a write takes to
	// reach the peer (drawn between them; MinDelay when MaxDelay is not
	// above it). The bytes of one direction of a connection always
	// arrive in the order they were written. Default 10µs and 500µs.
	MinDelay, MaxDelay time.Duration
	// MaxPieces is how many pieces a write may be cut into, each
	// arriving on its own (1: whole). Default 3.
	MaxPieces int
	// Window is how many bytes a writer may have on the way to its peer
	// or arrived and unread there, as TCP's window: a write takes no
	// more, and the writer hears Writable once the peer reads. Must be
	// above 0. Default 64 KiB.
	Window int
	// ShortWrite is the chance that a write takes fewer bytes than the
	// window allows (the rest waits for the next Writable). Default 0.
	ShortWrite float64
	// Refuse is the chance that a connect to a listening address is
	// refused (ECONNREFUSED). Default 0.
	Refuse float64
	// SlowConnect is the chance that a connect takes SlowDelay longer
	// than a piece of a write would. Default 0.
	SlowConnect float64
	SlowDelay   time.Duration
	// CrashSilent is the chance that a connection with an end on a host
	// that crashes (World.Crash) goes silent: its peer hears nothing and
	// its bytes vanish until the host is up again, when the next ones
	// reset it. Otherwise the peer is reset at once. Drawn per
	// connection. Default 0.5.
	CrashSilent float64
	// DownUnanswered is the chance, drawn once per crash, that connects
	// to the host while it is down go unanswered (retried until they time
	// out with ETIMEDOUT, as across a partition); otherwise they are
	// refused (ECONNREFUSED). Default 0.5.
	DownUnanswered float64
	// AcceptFail is the chance that an accept that finds a connection
	// waiting fails as when descriptors run out: with EMFILE (the
	// process's) or ENFILE (the system's), at even odds. The connection
	// stays queued, first, for the next accept, as in the kernel's
	// backlog; netio's accept loop (Serve, Server) counts the failure
	// (Stats.AcceptErrors), logs the first of a spell, and tries again
	// after its back-off, on the loop's clock. Drawn per accept. Default
	// 0.
	AcceptFail float64
	// AcceptAbort is the chance that an accept that finds a connection
	// waiting (and does not fail by AcceptFail) finds it aborted
	// (ECONNABORTED): the connection is dropped and its client is reset
	// (ECONNRESET, on its connect if that has not ended yet, else on its
	// next read or write), as when a peer resets a connection before the
	// server takes it. netio's accept goes on at once with the next
	// connection, as on the kernel's sockets, and counts nothing. Drawn
	// per accept. Default 0.
	AcceptAbort float64
}

// Hits count the faults the network has drawn so far that only the
// program sees (World.Hits): a test compares them with what its program
// reports.
type Hits struct {
	// AcceptFailed counts the accepts failed with EMFILE or ENFILE
	// (Faults.AcceptFail).
	AcceptFailed uint64
	// AcceptAborted counts the connections dropped at accept with
	// ECONNABORTED (Faults.AcceptAbort), each client reset.
	AcceptAborted uint64
}

// DiskFaults are the latencies and faults a host's disk draws from:
// Disk.Faults, which start as a quiet SSD's (the defaults below) and may
// be changed before or during a run.
type DiskFaults struct {
	// MinLatency and MaxLatency bound how long one operation (open,
	// read, write, stat, rename, remove, truncate, close) takes on the
	// world's clock. Default 5µs and 50µs.
	MinLatency, MaxLatency time.Duration
	// MinSync and MaxSync bound how long a sync (File.Sync, DataSync, a
	// Durable write's) takes. Default 100µs and 2ms.
	MinSync, MaxSync time.Duration
	// SyncEIO is the chance that a sync fails with EIO. The writes a
	// failed sync covered (every write to the file since its last
	// successful sync) are lost to the disk: reads still see them until
	// a crash, which drops them, and no later sync makes them durable
	// (Linux marks the pages of a failed writeback clean). A program must
	// assume them lost: write them again and sync again, or stop using
	// the file. Default 0.
	SyncEIO float64
	// Capacity is how many bytes the disk holds (the sum of its files'
	// sizes); 0 is no limit. A write past it writes what fits and fails
	// with ENOSPC; a truncate past it fails with ENOSPC. Default 0.
	Capacity int64
	// CrashKeep, CrashTear and CrashLose weigh what a crash does to each
	// write not yet synced: keep it whole, tear it (keep a prefix of it,
	// maybe none), or lose it, drawn per write. All zero (the default):
	// the three are equally likely.
	CrashKeep, CrashTear, CrashLose float64
}

// The conversions below compile only while the fields are the same.
var (
	_ = (*simnet.Faults)((*Faults)(nil))
	_ = (*simnet.Hits)((*Hits)(nil))
	_ = (*simdisk.Faults)((*DiskFaults)(nil))
)

// Disk is a host's simulated disk: its files, what of them is durable
// (survives a crash), and the latencies and faults it draws from. Package
// fileio's operations on a loop of the host run on it, on the world's
// clock, and are in the world's trace. A file holds what a read sees now
// and what would survive a crash: a write is durable once a sync of its
// file succeeds; names (create, rename, remove) and truncates are durable
// once they complete. The disk outlives the host's crashes: its program,
// started again, finds what the crash left.
type Disk struct {
	// Faults are the latencies and faults the disk draws from; the test
	// may change them at any time.
	Faults DiskFaults

	d *simdisk.Disk
}

func newDisk(w *World) *Disk {
	d := &Disk{Faults: DiskFaults(simdisk.DefaultFaults), d: simdisk.New(w.net, w.rng)}
	d.d.UseFaults((*simdisk.Faults)(&d.Faults))
	d.d.Record = w.net.Record
	return d
}

// ReadFile returns a copy of what the file called name holds now (what
// a read sees, synced or not); ok is false if there is none.
func (d *Disk) ReadFile(name string) (data []byte, ok bool) { return d.d.ReadFile(name) }

// WriteFile makes the file called name hold data, durably, at once: for
// a test that starts its program on a disk with files on it.
func (d *Disk) WriteFile(name string, data []byte) { d.d.WriteFile(name, data) }

// Remove removes the file called name, durably, at once.
func (d *Disk) Remove(name string) error { return d.d.Remove(name) }

// Used returns how many bytes the disk's files hold.
func (d *Disk) Used() int64 { return d.d.Used() }

// Syncs returns how many syncs the disk has carried out, failed ones
// included.
func (d *Disk) Syncs() uint64 { return d.d.Syncs() }

// Crash crashes the disk alone, as a power cut under a program that goes
// on (World.Crash crashes the host, which crashes its disk): every file
// handle open on it fails from then on, and each file is rebuilt from
// what was durable, with each write not yet synced kept, torn or lost as
// rng and Faults decide; writes a failed sync lost are dropped.
func (d *Disk) Crash(rng *rand.Rand) { d.d.Crash(rng) }
