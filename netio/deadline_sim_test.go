package netio_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// A deadline is a time on the loop's clock (Executor.Now): on a simulated
// loop, one set d ahead of it fails the pending receive exactly d later on
// the simulated clock, and a receive before then is not disturbed. In odd
// seeds the deadline is moved later after the first receive (as a server
// does per request): it then fails the receive d after the move, not at
// the time first set.
func TestSimReadDeadlineOnFakeTime(t *testing.T) {
	const d = 7 * time.Second
	sim.Check(t, 3, func(t *testing.T, w *sim.World) {
		sh, sx, cx := simPair(w)
		l, err := netio.Listen(sx, "tcp", ":7000")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var set, first, fired time.Duration
		var got string
		done := false
		future.Spawn(sx, func(ctx context.Context) (struct{}, error) {
			c, err := l.Accept().Await(ctx)
			if err != nil {
				t.Errorf("accept: %v", err)
				return struct{}{}, nil
			}
			defer c.Close()
			set = w.Now()
			if err := c.SetReadDeadline(sx.Now().Add(d)); err != nil {
				t.Errorf("SetReadDeadline: %v", err)
			}
			b, err := c.Recv().Await(ctx) // the client's byte, a second in
			if err != nil {
				t.Errorf("first receive: %v", err)
				return struct{}{}, nil
			}
			got, first = string(b), w.Now()
			if w.Seed()%2 == 1 {
				set = w.Now()
				if err := c.SetReadDeadline(sx.Now().Add(d)); err != nil {
					t.Errorf("SetReadDeadline, moved: %v", err)
				}
			}
			_, err = c.Recv().Await(ctx)
			fired, done = w.Now(), true
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("second receive: %v, want os.ErrDeadlineExceeded", err)
			}
			return struct{}{}, nil
		})
		future.Spawn(cx, func(ctx context.Context) (struct{}, error) {
			c, err := netio.Dial(ctx, cx, "tcp", sh.Addr(7000)).Await(ctx)
			if err != nil {
				t.Errorf("dial: %v", err)
				return struct{}{}, nil
			}
			defer c.Close()
			if _, err := future.Sleep(cx, time.Second).Await(ctx); err != nil {
				return struct{}{}, nil
			}
			c.Write([]byte("a"))
			_, _ = c.Recv().Await(ctx) // quiet until the server closes
			return struct{}{}, nil
		})
		if !w.RunUntil(func() bool { return done }, time.Hour) {
			t.Fatalf("no deadline after %v of simulated time", w.Now())
		}
		if got != "a" || w.Seed()%2 == 0 && first-set < time.Second {
			t.Errorf("first receive: %q at %v after the deadline was set, want \"a\" a second in", got, first-set)
		}
		if fired-set != d {
			t.Errorf("the deadline fired %v after it was set, want %v", fired-set, d)
		}
	})
}
