package fileio

// Figures of the files of an executor, and its configuration.
//
// Invariants:
//   - the counters of a loop are written only by the goroutine that holds
//     it and read by any goroutine, so each is an atomic;
//   - a loop's counters and its Config are in their registries, which
//     hold the loop weakly, from the moment they are made until the loop
//     has been garbage collected: after the executor has closed, StatsOf
//     still says what it did.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// Stats are the figures of one executor's files.
type Stats struct {
	// Engine names what carries out the executor's file operations:
	// "pool" (worker goroutines doing the system calls) or "sim" (the
	// simulated disk of a loop that package sim steps). It is "" until the
	// executor's first file operation.
	Engine string
	// Open is the number of files open now.
	Open int
	// Ops counts the operations handed to the engine: opens, reads,
	// writes (one per batch of appends), syncs, closes and the rest, and
	// the jobs (Start, Do).
	Ops uint64
	// Reads and Writes count the read and write operations carried out;
	// BytesRead and BytesWritten the bytes they moved.
	Reads, Writes           uint64
	BytesRead, BytesWritten uint64
	// Appends counts the Appends accepted.
	Appends uint64
	// Syncs counts the syncs asked for: Sync, DataSync and Durable writes.
	Syncs uint64
	// Fsyncs counts the fsyncs (or fdatasyncs) started. Syncs asked for in
	// one batch of the loop share one: Syncs / Fsyncs is how many each
	// served (group commit).
	Fsyncs uint64
}

type counters struct {
	engine                  string // set before registration, then read-only
	open                    atomic.Int64
	ops, reads, writes      atomic.Uint64
	bytesRead, bytesWritten atomic.Uint64
	appends, syncs, fsyncs  atomic.Uint64
}

// count records that o starts.
func (c *counters) count(o *op) {
	c.ops.Add(1)
	if o.kind == opSync || o.kind == opDataSync {
		c.fsyncs.Add(1)
	}
}

// landed records o's result.
func (c *counters) landed(o *op) {
	switch o.kind {
	case opRead:
		c.reads.Add(1)
		c.bytesRead.Add(uint64(o.n))
	case opWrite:
		c.writes.Add(1)
		c.bytesWritten.Add(uint64(o.n))
	}
}

var registry sync.Map // weak.Pointer[loop.Loop] -> *counters

func register(lp *loop.Loop, c *counters) {
	k := weak.Make(lp)
	registry.Store(k, c)
	runtime.AddCleanup(lp, func(k weak.Pointer[loop.Loop]) { registry.Delete(k) }, k)
}

// StatsOf returns the figures of ex's files; once ex has closed, its
// final ones. Any goroutine.
func StatsOf(ex *executor.Executor) Stats {
	v, ok := registry.Load(weak.Make(loopOf(ex, "StatsOf")))
	if !ok {
		return Stats{}
	}
	c := v.(*counters)
	return Stats{
		Engine: c.engine, Open: int(c.open.Load()),
		Ops: c.ops.Load(), Reads: c.reads.Load(), Writes: c.writes.Load(),
		BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(),
		Appends: c.appends.Load(), Syncs: c.syncs.Load(), Fsyncs: c.fsyncs.Load(),
	}
}

// Config is how an executor's files are served.
type Config struct {
	// Workers is the size of the executor's worker pool: how many file
	// system calls run at once for it. 0 means DefaultWorkers.
	Workers int
}

type configEntry struct {
	mu   sync.Mutex
	cfg  Config
	used bool
}

var configs sync.Map // weak.Pointer[loop.Loop] -> *configEntry

// ErrConfigured is returned by Configure once the executor's files are
// served (its first file operation has begun): the configuration is fixed
// from then on.
var ErrConfigured = errorString("fileio: Configure after the executor's first file operation")

type errorString string

func (e errorString) Error() string { return string(e) }

// Configure sets how ex's files are served. Call it before ex's first file
// operation; after that it returns ErrConfigured and changes nothing.
// Workers must not be negative. Any goroutine.
func Configure(ex *executor.Executor, c Config) error {
	lp := loopOf(ex, "Configure")
	if c.Workers < 0 {
		return errorString("fileio: Configure with a negative number of workers")
	}
	k := weak.Make(lp)
	v, loaded := configs.LoadOrStore(k, &configEntry{cfg: c})
	e := v.(*configEntry)
	if !loaded {
		runtime.AddCleanup(lp, func(k weak.Pointer[loop.Loop]) { configs.Delete(k) }, k)
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.used {
		return ErrConfigured
	}
	e.cfg = c
	return nil
}

// configOf returns lp's configuration and fixes it. Loop only.
func configOf(lp *loop.Loop) Config {
	k := weak.Make(lp)
	v, loaded := configs.LoadOrStore(k, &configEntry{})
	e := v.(*configEntry)
	if !loaded {
		runtime.AddCleanup(lp, func(k weak.Pointer[loop.Loop]) { configs.Delete(k) }, k)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.used = true
	c := e.cfg
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	return c
}
