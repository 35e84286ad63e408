// Package fileio reads, writes, syncs, opens and closes files from an
// executor's loop without blocking it: every operation is a future
// completed on the loop, and the system calls run elsewhere.
//
// # Why
//
// Every os.File call is a blocking system call: made on the loop's
// goroutine, one slow fsync (a fraction of a millisecond on a quiet SSD,
// many on a busy disk) stalls every connection and timer of that loop.
// future.Go moves a call off the loop, but with a goroutine per call and
// no order between calls. fileio is what Node's fs and tokio's fs are: a
// few worker goroutines per executor do the system calls, and the results
// come back to the loop as futures, in the loop's order of things.
//
// # Use
//
//	f, err := fileio.Create(ex, "/var/lib/app/log").Await(ctx)
//	off, err := f.Append(record, fileio.Durable).Await(ctx) // on the disk when it completes
//	b, err := f.ReadAt(off, len(record)).Await(ctx)
//	err = f.Close().Await(ctx)
//
// From a callback on the loop, chain instead of awaiting:
//
//	f.Append(record, fileio.Durable).OnComplete(func(off int64, err error) { reply(err) })
//
// Work fileio has no function for (the files of an fs.FS or an
// http.FileSystem, which may block) runs on the same workers with Do,
// which returns a future, or Start, which hands on a Job whose Done runs
// on the loop and allocates nothing once warm (web's file server and
// netio's SendFile read their files so):
//
//	b, err := fileio.Do(ex, func() ([]byte, error) { return fs.ReadFile(fsys, name) }).Await(ctx)
//
// Open, Create, OpenFile, Stat, Rename and Remove take the executor;
// File has ReadAt, WriteAt, Append, Sync, DataSync, Truncate, Stat and
// Close; NewReader and NewWriter read and write a File sequentially.
// Every function and method may be called from any goroutine; the
// futures belong to the executor and complete on its loop.
//
// # What runs where
//
// The loop only keeps each File's state and hands operations on. A pool
// of worker goroutines per executor (DefaultWorkers, 4, as libuv's; set
// with Configure before the first operation) carries out the system
// calls, at most that many at once, and hands each result back to the
// loop through its inbox. Workers are started when there is work and
// none is free, and end when the executor closes, as soon as the system
// call they are in returns. On a loop that package sim steps, the same
// operations run on the host's simulated disk instead (sim.Host.Disk), on
// the world's clock, with the latencies and faults its seed draws: a
// failed fsync, a full disk, and a crash that keeps, loses or tears what
// was not synced. On Linux, the loop's io_uring is to carry them out
// where the loop has one; until then the pool does everywhere.
//
// # Appends and group commit
//
// Appends made during one batch of the loop (the tasks it runs between
// two looks at its inbox and timers) go out in one write at the batch
// boundary, in the order they were made, end to end. Syncs asked for in
// one batch (Sync, DataSync, and every write made Durable) share one
// fsync: that is group commit, what makes durable writes cheap, as
// redis-server's "appendfsync always" writes and fsyncs once per loop
// iteration. A sync completes only after an fsync that began once every
// write accepted on the File before it had completed, so a write accepted
// after a round began is never reported covered by it: it waits for the
// next round. Stats counts the syncs asked for (Syncs) and the fsyncs
// started (Fsyncs).
//
// # Errors
//
// Errors are values, the ones package os returns: an *fs.PathError naming
// the operation and the file (errors.Is(err, syscall.ENOSPC), EIO, EBADF,
// fs.ErrNotExist...), *os.LinkError for Rename. An operation on a closed
// File fails with fs.ErrClosed; on an executor that has closed, with
// executor.ErrClosed. A failed append write fails every Append it
// carried, and what it may have written in part is truncated away before
// the next one, so the file holds whole appends only. Once an fsync of a
// File has failed, every later sync of it fails with ErrSyncFailed: the
// kernel may have dropped the pages that did not reach the disk, so a
// later fsync that succeeds would prove nothing about them.
//
// # Closing
//
// Close closes a File once everything asked of it before has been carried
// out (appends written, syncs done) and returns the close's error. A
// Shutdown of the executor waits for the file operations in flight, as
// for its other work. Close of the executor does not wait: what is
// pending fails with executor.ErrClosed at once, and each open file is
// closed exactly once, as soon as the system calls in flight on it have
// returned; no worker outlives its system call.
//
// # Buffers
//
// WriteAt, Append and Writer.Write copy the bytes they are given, which
// may be reused as soon as the call returns; ReadAt and Reader.Read return
// a new slice the caller owns. A cancelled future stops the waiting, not
// the system call.
//
// # Files
//
//	doc.go          this guide
//	file.go         File, Open/Create/OpenFile, Stat, Rename, Remove, ReadAt, WriteAt, Truncate, Close
//	commit.go       appends, the writes a sync covers, sync rounds (group commit)
//	stream.go       Reader and Writer
//	job.go          Job, Start and Do: the caller's blocking work on the workers
//	state.go        the per-loop state: flusher, drainer, the executor's close
//	engine.go       the engine contract (and where the io_uring engine goes)
//	engine_pool.go  the worker pool
//	engine_sim.go   the simulated disk's engine (package sim)
//	stats.go        Stats, Configure
package fileio
