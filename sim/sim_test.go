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
			echoConn(c, nil)
		}
	})
	return l
}

// echoConn answers what c receives, passed through through (when not
// nil), until c or through fails.
func echoConn(c *netio.Conn, through func(ctx context.Context, b []byte) ([]byte, error)) {
	future.Spawn(c.Executor(), func(ctx context.Context) (struct{}, error) {
		defer c.Close()
		for {
			b, err := c.Recv().Await(ctx)
			if err == nil && through != nil {
				b, err = through(ctx, b)
			}
			if err != nil {
				return struct{}{}, nil
			}
			if _, err := c.Write(b); err != nil {
				return struct{}{}, nil
			}
		}
	})
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

// checkReplays runs body in a world of each seed from 1 to seeds twice:
// the two traces of a seed must be equal, those of different seeds not.
func checkReplays(t *testing.T, seeds int64, body func(w *sim.World)) {
	t.Helper()
	trace := func(seed int64) string {
		w := sim.New(seed)
		defer w.Close()
		body(w)
		return w.TraceHex()
	}
	seen := map[string]int64{}
	for seed := int64(1); seed <= seeds; seed++ {
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

// TestSimDeterminism runs seeds twice and compares the traces: equal for
// one seed, different across seeds.
func TestSimDeterminism(t *testing.T) {
	checkReplays(t, 5, func(w *sim.World) {
		w.Faults().ShortWrite = 0.2
		echoRun(t, w, 4)
	})
}

// Executor.Now on a loop the world steps is the world's clock, from
// midnight UTC, 1 January 2000: every loop of every host reads the same
// time, and it moves only as the world moves it, a timer's length at a
// time.
func TestSimExecutorNow(t *testing.T) {
	epoch := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	sim.Check(t, 3, func(t *testing.T, w *sim.World) {
		a := w.Host("a").Executor()
		g := w.Host("b").Group(2)
		exs := []*executor.Executor{a, g.Shard(0), g.Shard(1)}
		for i, ex := range exs {
			if got, want := ex.Now(), epoch.Add(w.Now()); !got.Equal(want) {
				t.Errorf("executor %d before the run: Now = %v, want %v", i, got, want)
			}
		}
		naps := []time.Duration{time.Millisecond, 90 * time.Minute, 24 * time.Hour}
		type reading struct{ before, after, world time.Time }
		got := make([][]reading, len(exs))
		for i, ex := range exs {
			future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
				for _, d := range naps {
					before := ex.Now()
					if _, err := future.Sleep(ex, d).Await(ctx); err != nil {
						return struct{}{}, err
					}
					got[i] = append(got[i], reading{before, ex.Now(), epoch.Add(w.Now())})
				}
				return struct{}{}, nil
			})
		}
		w.RunFor(48 * time.Hour)
		for i := range exs {
			if len(got[i]) != len(naps) {
				t.Fatalf("executor %d woke %d times, want %d", i, len(got[i]), len(naps))
			}
			for j, r := range got[i] {
				if !r.after.Equal(r.world) {
					t.Errorf("executor %d after its nap of %v: Now = %v, the world's clock %v", i, naps[j], r.after, r.world)
				}
				if el := r.after.Sub(r.before); el != naps[j] {
					t.Errorf("executor %d: a nap of %v took %v of Now, want exactly the nap", i, naps[j], el)
				}
			}
		}
	})
}
