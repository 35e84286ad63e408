package fileio_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
)

// BenchmarkLoopLatency measures how long work submitted to a loop waits
// while the loop writes and fsyncs a file: none (no file work), fileio
// (appends of 64 KiB, each durable, through this package) and os_file
// (the same writes and fdatasyncs with os.File, on the loop). One op is
// one round trip of a goroutine's Submit to the loop, one every 100 µs or
// so (the round trips go on until the writer has written 16 chunks); p99-ns/op is the figure the
// loop's other clients see, MB/s what the writer wrote meanwhile.
func BenchmarkLoopLatency(b *testing.B) {
	const chunk = 64 << 10
	writers := []struct {
		name  string
		write func(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error)
	}{
		{"none", nil},
		{"fileio", func(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error) {
			f, err := fileio.Create(ex, path).Await(ctx)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			buf := make([]byte, chunk)
			var n int64
			for !stop.Load() {
				if _, err := f.Append(buf, fileio.Durable).Await(ctx); err != nil {
					return n, err
				}
				n += chunk
				chunks.Add(1)
			}
			return n, nil
		}},
		{"os_file", func(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error) {
			f, err := os.Create(path)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			buf := make([]byte, chunk)
			var n int64
			for !stop.Load() {
				if _, err := f.WriteAt(buf, n); err != nil { // on the loop: it blocks it
					return n, err
				}
				if err := datasync(f); err != nil {
					return n, err
				}
				n += chunk
				chunks.Add(1)
				if err := future.Yield(ctx); err != nil { // let the queue run between writes
					return n, err
				}
			}
			return n, nil
		}},
	}
	for _, wr := range writers {
		b.Run(wr.name, func(b *testing.B) {
			ex := executor.New()
			ex.Start()
			defer ex.Close()
			var stop atomic.Bool
			var chunks atomic.Int64
			var written *future.Future[int64]
			if wr.write != nil {
				path := filepath.Join(b.TempDir(), "f")
				written = future.Spawn(ex, func(ctx context.Context) (int64, error) { return wr.write(ctx, ex, path, &stop, &chunks) })
			}
			lat := make([]time.Duration, 0, b.N)
			ch := make(chan struct{}, 1)
			ping := func() { ch <- struct{}{} }
			b.ResetTimer()
			start := time.Now()
			// At least b.N round trips, and on for as long as the writer
			// takes to write and sync minChunks chunks, so that every case
			// measures the loop while it writes.
			const minChunks = 16
			for i := 0; i < b.N || (written != nil && chunks.Load() < minChunks); i++ {
				t0 := time.Now()
				if err := ex.Submit(ping); err != nil {
					b.Fatal(err)
				}
				<-ch
				lat = append(lat, time.Since(t0))
				time.Sleep(100 * time.Microsecond) // a client's pace, not a spin that takes a core from the writer
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stop.Store(true)
			if written != nil {
				n, err := written.Await(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n)/elapsed.Seconds()/1e6, "MB/s")
			}
			slices.Sort(lat)
			b.ReportMetric(float64(elapsed)/float64(len(lat)), "ns/op")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns/op")
			b.ReportMetric(float64(lat[len(lat)-1]), "max-ns/op")
		})
	}
}

// BenchmarkDurableAppend measures durable appends of 100 bytes made by 64
// tasks at once: fileio (group commit: the appends of a batch share one
// write and one fsync) against os_file (64 goroutines, each write then
// fdatasync under a mutex, as without group commit). fsyncs/op is how
// many fsyncs each append cost.
func BenchmarkDurableAppend(b *testing.B) {
	const clients, size = 64, 100
	rec := make([]byte, size)
	b.Run("fileio", func(b *testing.B) {
		ex := executor.New()
		ex.Start()
		defer ex.Close()
		f, err := fileio.Create(ex, filepath.Join(b.TempDir(), "f")).Await(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		before := fileio.StatsOf(ex)
		var left atomic.Int64
		left.Store(int64(b.N))
		b.ResetTimer()
		g := future.NewGroup(context.Background(), ex)
		for c := 0; c < clients; c++ {
			g.Go(func(ctx context.Context) error {
				for left.Add(-1) >= 0 {
					if _, err := f.Append(rec, fileio.Durable).Await(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err := g.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		after := fileio.StatsOf(ex)
		b.ReportMetric(float64(after.Fsyncs-before.Fsyncs)/float64(b.N), "fsyncs/op")
		f.Close().Await(context.Background())
	})
	b.Run("os_file", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var mu sync.Mutex
		var off int64
		var left atomic.Int64
		left.Store(int64(b.N))
		b.ResetTimer()
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					mu.Lock()
					_, err := f.WriteAt(rec, off)
					off += size
					if err == nil {
						err = datasync(f)
					}
					mu.Unlock()
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(1, "fsyncs/op")
	})
}
