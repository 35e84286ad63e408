package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// echoServer serves an echo on ex at port.
func echoServer(t *testing.T, ex *executor.Executor, port int) *netio.Listener {
	l, err := netio.Listen(ex, "tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		t.Fatal(err)
	}
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		for {
			c, err := l.Accept().Await(ctx)
			if err != nil {
				return struct{}{}, nil
			}
			future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
				defer c.Close()
				for {
					b, err := c.Recv().Await(ctx)
					if err != nil {
						return struct{}{}, nil
					}
					if _, err := c.Write(b); err != nil {
						return struct{}{}, nil
					}
				}
			})
		}
	})
	return l
}

// echoRun runs clients that each send random bytes and check the echo.
// It returns the number of clients whose echo came back whole.
func echoRun(t *testing.T, w *sim.World, clients int) int {
	srvH, cliH := w.Host("server"), w.Host("client")
	srv := srvH.Executor(executor.WithName("server"))
	echoServer(t, srv, 7000)
	cli := cliH.Executor(executor.WithName("client"))
	rng := w.Rand()
	ok, done := 0, 0
	for i := 0; i < clients; i++ {
		msg := make([]byte, 1+rng.Intn(200<<10))
		rng.Read(msg)
		future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
			defer func() { done++ }()
			c, err := netio.Dial(ctx, cli, "tcp", srvH.Addr(7000)).Await(ctx)
			if err != nil {
				t.Errorf("dial: %v", err)
				return struct{}{}, err
			}
			defer c.Close()
			c.Write(msg)
			var got []byte
			for len(got) < len(msg) {
				b, err := c.Recv().Await(ctx)
				if err != nil {
					t.Errorf("client %d: recv after %d of %d bytes: %v", i, len(got), len(msg), err)
					return struct{}{}, err
				}
				got = append(got, b...)
			}
			if !bytes.Equal(got, msg) {
				t.Errorf("client %d: the echo differs", i)
				return struct{}{}, nil
			}
			ok++
			return struct{}{}, nil
		})
	}
	if !w.RunUntil(func() bool { return done == clients }, time.Minute) {
		t.Fatalf("%d of %d clients done after %v (%d steps)", done, clients, w.Now(), w.Steps())
	}
	return ok
}

func TestSimEcho(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		w.Faults().ShortWrite = 0.2
		if n := echoRun(t, w, 8); n != 8 {
			t.Fatalf("%d of 8 echoes whole", n)
		}
	})
}

// TestSimDeterminism runs seeds twice and compares the traces: equal for
// one seed, different across seeds.
func TestSimDeterminism(t *testing.T) {
	trace := func(seed int64) string {
		w := sim.New(seed)
		defer w.Close()
		w.Faults().ShortWrite = 0.2
		echoRun(t, w, 4)
		return w.TraceHex()
	}
	seen := map[string]int64{}
	for seed := int64(1); seed <= 5; seed++ {
		a, b := trace(seed), trace(seed)
		if a != b {
			t.Fatalf("seed %d: traces %s and %s differ", seed, a, b)
		}
		if s, dup := seen[a]; dup {
			t.Fatalf("seeds %d and %d have the same trace %s", s, seed, a)
		}
		seen[a] = seed
	}
}
