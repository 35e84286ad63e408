package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// idleRun runs a server whose connections have an idle timeout of idle
// and a client that sends a few pieces, pausing between them for times
// the seed draws (each shorter than idle), then goes quiet. It returns
// when the server last received a byte and when its receive failed with
// netio.ErrIdleTimeout, on the world's clock.
func idleRun(t *testing.T, w *sim.World, idle time.Duration) (last, fired time.Duration) {
	t.Helper()
	srvH, cliH := w.Host("server"), w.Host("client")
	srv := srvH.Executor(executor.WithName("server"))
	cli := cliH.Executor(executor.WithName("client"))
	l, err := netio.Listen(srv, "tcp", ":7000", netio.WithIdleTimeout(idle))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := false
	future.Spawn(srv, func(ctx context.Context) (struct{}, error) {
		c, err := l.Accept().Await(ctx)
		if err != nil {
			t.Errorf("accept: %v", err)
			return struct{}{}, nil
		}
		defer c.Close()
		for {
			b, err := c.Recv().Await(ctx)
			if err != nil {
				if !errors.Is(err, netio.ErrIdleTimeout) {
					t.Errorf("receive: %v, want netio.ErrIdleTimeout", err)
				}
				fired, done = w.Now(), true
				w.Record('I', uint64(fired), uint64(last), nil)
				return struct{}{}, nil
			}
			last = w.Now()
			w.Record('R', uint64(last), uint64(len(b)), b)
		}
	})
	rng := w.Rand()
	pauses := make([]time.Duration, 1+rng.Intn(4))
	for i := range pauses {
		pauses[i] = time.Duration(1+rng.Int63n(int64(idle)-1)) / 2 // well within the timeout
	}
	future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
		c, err := netio.Dial(ctx, cli, "tcp", srvH.Addr(7000)).Await(ctx)
		if err != nil {
			t.Errorf("dial: %v", err)
			return struct{}{}, nil
		}
		defer c.Close()
		for i, p := range pauses {
			if _, err := c.Write([]byte{'a' + byte(i)}); err != nil {
				t.Errorf("write: %v", err)
				return struct{}{}, nil
			}
			if _, err := future.Sleep(cli, p).Await(ctx); err != nil {
				return struct{}{}, nil
			}
		}
		// Quiet from here; the server's idle timeout closes the connection.
		_, _ = c.Recv().Await(ctx)
		return struct{}{}, nil
	})
	if !w.RunUntil(func() bool { return done }, time.Hour) {
		t.Fatalf("no idle timeout after %v (%d steps)", w.Now(), w.Steps())
	}
	return last, fired
}

// An idle timeout runs on the loop's clock: on a simulated loop it fires
// exactly idle after the last byte arrived, on the world's clock, and two
// runs of one seed fire at the same simulated time with the same trace.
func TestSimIdleTimeoutReplays(t *testing.T) {
	const idle = 3 * time.Second
	type run struct {
		last, fired time.Duration
		trace       string
	}
	once := func(seed int64) run {
		w := sim.New(seed)
		defer w.Close()
		last, fired := idleRun(t, w, idle)
		return run{last, fired, w.TraceHex()}
	}
	for seed := int64(1); seed <= 5; seed++ {
		a, b := once(seed), once(seed)
		if a != b {
			t.Fatalf("seed %d: two runs differ: %+v and %+v", seed, a, b)
		}
		if a.fired-a.last != idle {
			t.Errorf("seed %d: the idle timeout fired %v after the last byte, want %v", seed, a.fired-a.last, idle)
		}
		if a.last <= 0 {
			t.Errorf("seed %d: no byte received before the timeout (last at %v)", seed, a.last)
		}
	}
}
