package main

// BenchmarkFiles: files written and synced from a loop that also serves
// sockets. The clients are in a child process (bench/netcase); the files
// are in a directory of their own under os.TempDir(), removed at the end.
//
//   - echo/: 50 connections to a netio echo server on one loop, one 64-byte
//     request in flight on each (ns/req is wall time per request over all
//     of them). alone does nothing else; fileio has the same loop write a
//     file in 1 MiB chunks with package fileio, each an Append and a
//     DataSync, the next chunk once the sync is done; os_file makes the
//     same writes and fdatasyncs with os.File in tasks on the loop (the
//     trap: the loop waits in each system call). The writer writes for as
//     long as the clients run, starting the file again from empty every
//     1 GiB. The file cases first time b.N requests with no file work
//     (quiet), then b.N with it, in the same run, and report p50-us and
//     p99-us of the clients' round trips (quiet-p50-us, quiet-p99-us),
//     p99-ratio (p99 over quiet p99), stalls (the loop's stall reports at
//     a 10 ms threshold, executor.WithStallHandler, during the file phase),
//     MB/s and file-MB written.
//   - append_durable/: 64 writers append 64-byte records to one file, each
//     record durable before the writer's next: fileio's durable Appends
//     from 64 tasks on one loop (Appends and syncs of a batch share one
//     fdatasync: group commit), and os.File Write plus fdatasync under a
//     sync.Mutex from 64 goroutines. fsyncs/append is the fsyncs per
//     record.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
)

func init() {
	register(
		benchCase{Group: "Files", Name: "echo/alone", Unit: "req", Fn: filesEcho(nil)},
		benchCase{Group: "Files", Name: "echo/fileio", Unit: "req", Baseline: "echo/alone", Fn: filesEcho(startFileioWriter)},
		benchCase{Group: "Files", Name: "echo/os_file", Unit: "req", Baseline: "echo/alone", Kind: kindVariant, Fn: filesEcho(startOSFileWriter)},
		benchCase{Group: "Files", Name: "append_durable/fileio", Unit: "append", Baseline: "append_durable/os_file", Fn: appendDurableFileio},
		benchCase{Group: "Files", Name: "append_durable/os_file", Unit: "append", Kind: kindGo, Fn: appendDurableOSFile},
	)
}

const (
	filesConns     = 50                    // echo clients
	fileChunk      = 1 << 20               // bytes per write of the echo cases' writer
	fileCap        = 1 << 30               // the writer starts its file again from empty at this size
	stallThreshold = 10 * time.Millisecond // the loop's stall detector
	appendWriters  = 64                    // writers of append_durable
	appendRecord   = 64                    // bytes per record of append_durable
)

// fileWriter is the echo cases' file work, running on a loop until
// stop is set; then it sends its first error (nil if none) on done.
type fileWriter struct {
	stop    atomic.Bool
	written atomic.Int64 // bytes written and synced
	done    chan error
	close   func() error // closes the file, once the writer is done
	once    sync.Once
	err     error
}

func newFileWriter(close func() error) *fileWriter {
	return &fileWriter{done: make(chan error, 1), close: close}
}

// end stops the writer, waits for it and closes its file; it returns the
// first error of the writer or the close. Idempotent.
func (w *fileWriter) end() error {
	w.once.Do(func() {
		w.stop.Store(true)
		w.err = errors.Join(<-w.done, w.close())
	})
	return w.err
}

// startFileioWriter starts, on ex's loop, the fileio writer of file path:
// Append of a chunk, DataSync, and the next chunk once the sync is done.
func startFileioWriter(ex *executor.Executor, path string) (*fileWriter, error) {
	ctx := context.Background()
	f, err := fileio.Create(ex, path).Await(ctx)
	if err != nil {
		return nil, err
	}
	w := newFileWriter(func() error { _, err := f.Close().Await(ctx); return err })
	chunk := make([]byte, fileChunk)
	var size int64
	var next func()
	next = func() {
		if w.stop.Load() {
			w.done <- nil
			return
		}
		var appendErr error
		f.Append(chunk).OnComplete(func(_ int64, err error) { appendErr = err })
		f.DataSync().OnComplete(func(_ struct{}, err error) {
			if err = errors.Join(appendErr, err); err != nil {
				w.done <- err
				return
			}
			w.written.Add(fileChunk)
			if size += fileChunk; size < fileCap {
				next()
				return
			}
			size = 0
			f.Truncate(0).OnComplete(func(_ struct{}, err error) {
				if err != nil {
					w.done <- err
					return
				}
				next()
			})
		})
	}
	if err := ex.Submit(next); err != nil {
		return nil, errors.Join(err, w.close())
	}
	return w, nil
}

// startOSFileWriter starts the os.File writer of file path: each chunk
// is a task submitted to ex's loop that writes it and fdatasyncs, holding
// the loop, and the next is submitted once it is done, as work coming
// from elsewhere would be.
func startOSFileWriter(ex *executor.Executor, path string) (*fileWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := newFileWriter(f.Close)
	chunk := make([]byte, fileChunk)
	var off int64
	one := func() error { // on the loop: it blocks it
		if off >= fileCap {
			off = 0
			if err := f.Truncate(0); err != nil {
				return err
			}
		}
		if _, err := f.WriteAt(chunk, off); err != nil {
			return err
		}
		if err := fdatasync(f); err != nil {
			return err
		}
		off += fileChunk
		w.written.Add(fileChunk)
		return nil
	}
	go func() {
		errc := make(chan error, 1)
		for !w.stop.Load() {
			if err := ex.Submit(func() { errc <- one() }); err != nil {
				w.done <- err
				return
			}
			if err := <-errc; err != nil {
				w.done <- err
				return
			}
		}
		w.done <- nil
	}()
	return w, nil
}

// filesDir makes the directory of a case's files under os.TempDir(); it
// is removed when b ends.
func filesDir(b *testing.B) string {
	dir, err := os.MkdirTemp("", "spindle-bench-files-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// skipIfFull skips b when err says the disk is full, and fails it on any
// other error.
func skipIfFull(b *testing.B, err error) {
	b.Helper()
	switch {
	case err == nil:
	case errors.Is(err, syscall.ENOSPC):
		b.Skipf("the disk of %s is full (%v): the Files cases need free space there (up to %d MiB)", os.TempDir(), err, fileCap>>20)
	default:
		b.Fatal(err)
	}
}

// filesEcho returns an echo case: b.N requests from the clients, alone
// (start nil) or, after as many with no file work, beside the writer
// start starts on the same loop.
func filesEcho(start func(ex *executor.Executor, path string) (*fileWriter, error)) func(b *testing.B) {
	return func(b *testing.B) {
		var stalls atomic.Int64
		ex := newExecutor(executor.WithStallHandler(stallThreshold, func(executor.Stall) { stalls.Add(1) }))
		srv, err := netcase.ServeSpindle(ex)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := srv.Close(); err != nil {
				b.Error(err)
			}
		}()
		cl := netcase.StartClients(b)
		defer cl.Close()
		if err := cl.Dial(srv.Addr(), filesConns); err != nil {
			b.Fatal(err)
		}
		if _, err := cl.Run(filesConns*8, 1); err != nil { // warm up
			b.Fatal(err)
		}
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
		var quiet netcase.Latency
		if start != nil {
			if quiet, _, err = cl.Timed(b.N); err != nil {
				b.Fatal(err)
			}
		}
		var w *fileWriter
		if start != nil {
			w, err = start(ex, filepath.Join(filesDir(b), "echo.data"))
			skipIfFull(b, err)
			defer w.end() // on an early return; before the server closes the loop
		}
		s0 := stalls.Load()
		m := startMeter(b)
		t0 := time.Now()
		lat, n, err := cl.Timed(b.N)
		elapsed := time.Since(t0)
		m.Stop(b, "req", float64(max(n, 1)), -1)
		s1 := stalls.Load()
		var werr error
		if w != nil {
			werr = w.end()
		}
		if err != nil {
			b.Fatal(err)
		}
		skipIfFull(b, werr)
		b.ReportMetric(us(lat.P50), "p50-us")
		b.ReportMetric(us(lat.P99), "p99-us")
		b.ReportMetric(float64(s1-s0), "stalls")
		if w == nil {
			return
		}
		mb := float64(w.written.Load()) / 1e6
		b.ReportMetric(us(quiet.P50), "quiet-p50-us")
		b.ReportMetric(us(quiet.P99), "quiet-p99-us")
		b.ReportMetric(float64(lat.P99)/float64(quiet.P99), "p99-ratio")
		b.ReportMetric(mb/elapsed.Seconds(), "MB/s")
		b.ReportMetric(mb, "file-MB")
	}
}

// appendDurableFileio: appendWriters tasks on one loop each append
// records durably, one at a time, until b.N have been appended.
func appendDurableFileio(b *testing.B) {
	ex := newExecutor()
	ex.Start()
	defer ex.Close()
	ctx := context.Background()
	f, err := fileio.Create(ex, filepath.Join(filesDir(b), "append.data")).Await(ctx)
	skipIfFull(b, err)
	defer func() {
		if _, err := f.Close().Await(ctx); err != nil {
			b.Error(err)
		}
	}()
	rec := make([]byte, appendRecord)
	var left atomic.Int64
	left.Store(int64(b.N))
	writer := func(ctx context.Context) error {
		for left.Add(-1) >= 0 {
			if _, err := f.Append(rec, fileio.Durable).Await(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	s0 := fileio.StatsOf(ex)
	m := startMeter(b)
	tasks := make([]*future.Future[struct{}], appendWriters)
	for i := range tasks {
		tasks[i] = future.SpawnErr(ex, writer)
	}
	var errs []error
	for _, t := range tasks {
		_, err := t.Await(ctx)
		errs = append(errs, err)
	}
	m.Stop(b, "append", float64(b.N), -1)
	skipIfFull(b, errors.Join(errs...))
	s1 := fileio.StatsOf(ex)
	if got := s1.Appends - s0.Appends; got != uint64(b.N) {
		b.Fatalf("%d appends accepted, want %d", got, b.N)
	}
	b.ReportMetric(float64(s1.Fsyncs-s0.Fsyncs)/float64(b.N), "fsyncs/append")
}

// appendDurableOSFile: the same with appendWriters goroutines, each record
// written and fdatasynced under a mutex.
func appendDurableOSFile(b *testing.B) {
	f, err := os.Create(filepath.Join(filesDir(b), "append.data"))
	skipIfFull(b, err)
	defer f.Close()
	rec := make([]byte, appendRecord)
	var mu sync.Mutex
	var left, fsyncs atomic.Int64
	left.Store(int64(b.N))
	errs := make(chan error, appendWriters)
	m := startMeter(b)
	var wg sync.WaitGroup
	for range appendWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				mu.Lock()
				_, err := f.Write(rec)
				if err == nil {
					err = fdatasync(f)
					fsyncs.Add(1)
				}
				mu.Unlock()
				if err != nil {
					errs <- fmt.Errorf("append: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m.Stop(b, "append", float64(b.N), -1)
	close(errs)
	skipIfFull(b, <-errs)
	b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs/append")
}
