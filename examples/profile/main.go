// Command profile shows how a CPU profile splits by executor: two loops,
// "api" and "batch", burn CPU, one in timer callbacks and the other in a
// spawned task that never waits, and every sample taken while a loop runs its work carries the pprof
// label spindle.executor with that loop's name.
//
//	go run ./examples/profile -cpuprofile cpu.pprof
//	go tool pprof -tags cpu.pprof
//	go tool pprof -tagfocus=spindle.executor=batch -top cpu.pprof
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

func main() {
	out := flag.String("cpuprofile", "cpu.pprof", "write the CPU profile to this file")
	d := flag.Duration("d", 2*time.Second, "how long the loops run")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), *d, f); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// run profiles the two loops for d and writes the profile to w.
func run(ctx context.Context, d time.Duration, w io.Writer) error {
	if err := pprof.StartCPUProfile(w); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	api := executor.New(executor.WithName("api"))
	batch := executor.New(executor.WithName("batch"))
	api.Start()
	batch.Start()
	defer api.Close()
	defer batch.Close()
	deadline := time.Now().Add(d)

	// api: a short callback every millisecond, like requests arriving.
	handled := future.NewPromise[int](api)
	n := 0
	var handle func()
	handle = func() {
		n += handleRequest()
		if time.Now().Before(deadline) {
			api.AfterFunc(time.Millisecond, handle)
		} else {
			handled.Resolve(n)
		}
	}
	if err := api.Submit(handle); err != nil {
		return err
	}

	// batch: a spawned task that does three times as much work per turn
	// and yields the loop between turns.
	crunched := future.Spawn(batch, func(ctx context.Context) (int, error) {
		n := 0
		for time.Now().Before(deadline) {
			n += crunch()
			if err := future.Yield(ctx); err != nil {
				return n, err
			}
		}
		return n, nil
	})

	if _, err := handled.Future().Await(ctx); err != nil {
		return err
	}
	_, err := crunched.Await(ctx)
	return err
}

// handleRequest stands for the work of one request on the api loop.
func handleRequest() int { return spin(1000) }

// crunch stands for one turn of the batch loop's work.
func crunch() int { return spin(3000) }

// spin burns CPU in proportion to n.
//
//go:noinline
func spin(n int) int {
	var x uint32
	for i := range uint32(n) * 1000 {
		x ^= i * 2654435761
	}
	return int(x & 1)
}
