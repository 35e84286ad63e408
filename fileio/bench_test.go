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
	writers := []struct {
		name  string
		write writer
	}{
		{"none", nil},
		{"fileio", fileioWrite},
		{"os_file", osWrite},
	}
	for _, wr := range writers {
		engs := []fileio.Engine{fileio.EnginePool}
		if wr.name == "fileio" {
			engs = benchEngines(b)
		}
		for _, eng := range engs {
			name := wr.name
			if wr.name == "fileio" {
				name += "/" + string(eng)
			}
			b.Run(name, func(b *testing.B) { loopLatency(b, eng, wr.write) })
		}
	}
}

// benchEngines are the engines a benchmark of fileio runs on: the pool,
// and io_uring where the kernel grants a ring.
func benchEngines(b *testing.B) []fileio.Engine {
	if err := ringRefusal(); err != nil {
		b.Logf("io_uring not measured: %v", err)
		return []fileio.Engine{fileio.EnginePool}
	}
	return engines
}

type writer func(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error)

const chunk = 64 << 10

func fileioWrite(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error) {
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
}

func osWrite(ctx context.Context, ex *executor.Executor, path string, stop *atomic.Bool, chunks *atomic.Int64) (int64, error) {
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
}

func loopLatency(b *testing.B, eng fileio.Engine, write writer) {
	ex := newOn(b, eng)
	ex.Start()
	defer ex.Close()
	var stop atomic.Bool
	var chunks atomic.Int64
	var written *future.Future[int64]
	if write != nil {
		path := filepath.Join(b.TempDir(), "f")
		written = future.Spawn(ex, func(ctx context.Context) (int64, error) { return write(ctx, ex, path, &stop, &chunks) })
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
}

// BenchmarkDurableAppend measures durable appends of 100 bytes made by 64
// tasks at once: fileio (group commit: the appends of a batch share one
// write and one fsync) against os_file (64 goroutines, each write then
// fdatasync under a mutex, as without group commit). fsyncs/op is how
// many fsyncs each append cost.
func BenchmarkDurableAppend(b *testing.B) {
	const clients, size = 64, 100
	rec := make([]byte, size)
	for _, eng := range benchEngines(b) {
		b.Run("fileio/"+string(eng), func(b *testing.B) { durableAppend(b, eng, rec, clients) })
	}
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

// durableAppend is BenchmarkDurableAppend's fileio case on eng.
func durableAppend(b *testing.B, eng fileio.Engine, rec []byte, clients int) {
	ex := newOn(b, eng)
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
}

// BenchmarkOps measures one operation at a time, awaited from a goroutine,
// on each engine: ReadAt and WriteAt of 4 KiB, and a Durable Append of 100
// bytes (one write and one fsync each). allocs/op is what a caller pays
// per operation, the engine's share included.
func BenchmarkOps(b *testing.B) {
	ops := []struct {
		name string
		run  func(f *fileio.File, buf []byte) error
	}{
		{"ReadAt", func(f *fileio.File, buf []byte) error {
			_, err := f.ReadAt(0, len(buf)).Await(context.Background())
			return err
		}},
		{"WriteAt", func(f *fileio.File, buf []byte) error {
			_, err := f.WriteAt(buf, 0).Await(context.Background())
			return err
		}},
		{"DurableAppend", func(f *fileio.File, buf []byte) error {
			_, err := f.Append(buf[:100], fileio.Durable).Await(context.Background())
			return err
		}},
	}
	for _, o := range ops {
		for _, eng := range benchEngines(b) {
			b.Run(o.name+"/"+string(eng), func(b *testing.B) {
				ex := newOn(b, eng)
				ex.Start()
				defer ex.Close()
				f, err := fileio.Create(ex, filepath.Join(b.TempDir(), "f")).Await(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				buf := make([]byte, 4096)
				if _, err := f.WriteAt(buf, 0).Await(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := o.run(f, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
