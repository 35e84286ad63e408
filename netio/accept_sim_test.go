package netio_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// Accepts that fail under the simulation take the path they take on the
// kernel's sockets. The seed draws the chances of the network's accept
// faults (sim.Faults.AcceptFail: EMFILE or ENFILE, the connection stays
// queued; AcceptAbort: ECONNABORTED, the connection is dropped and its
// client reset) and clients that connect at times it draws, each sending
// a line and reading its echo, connecting again after a reset. Every
// client is served in the end; the server's counters say what the
// network did (an accepted connection per client, an accept error per
// EMFILE or ENFILE, a reset per abort and nothing counted for it), the
// first failure of each spell is logged, the accept loop waited its
// back-off after each failure on the world's clock, and the listener
// still serves once the faults stop. One seed, one trace.
func TestSimAcceptFaults(t *testing.T) {
	logs := captureLog(t)
	const minDelay = 5 * time.Millisecond // Serve's first back-off
	var total sim.Hits
	seeds := sim.Seeds(20)
	checkReplayed(t, len(seeds), func(t *testing.T, w *sim.World) {
		rng := w.Rand()
		f := w.Faults()
		f.AcceptFail = []float64{0, 0.2, 0.5, 0.8}[rng.Intn(4)]
		f.AcceptAbort = []float64{0, 0.1, 0.3}[rng.Intn(3)]
		sh, sx, cx := simPair(w)
		l, err := netio.Listen(sx, "tcp", ":7000")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var lastAccept time.Duration
		netio.Serve(l, func(c *netio.Conn) {
			lastAccept = w.Now()
			echoConn(c)
		})
		logged := logs.count("netio: accept")

		clients := 10 + rng.Intn(10)
		attempts, resets, served := 0, 0, 0
		var errs []error
		// serve connects until the server echoes msg, again after each
		// reset; it returns true once served.
		serve := func(ctx context.Context, msg string) (bool, error) {
			for try := range 100 {
				attempts++
				c, err := netio.Dial(ctx, cx, "tcp", sh.Addr(7000)).Await(ctx)
				if err == nil {
					c.WriteString(msg)
					var got []byte
					for len(got) < len(msg) && err == nil {
						var b []byte
						b, err = c.Recv().Await(ctx)
						got = append(got, b...)
					}
					c.Close()
					if err == nil {
						if string(got) != msg {
							return false, fmt.Errorf("%s: echo %q", msg, got)
						}
						w.Record('e', uint64(try), 0, got)
						return true, nil
					}
				}
				if !errors.Is(err, syscall.ECONNRESET) {
					return false, fmt.Errorf("%s, connect %d: %w; want the echo or a reset", msg, try, err)
				}
				resets++
				if _, err := future.Sleep(cx, time.Duration(rng.Intn(3000))*time.Microsecond).Await(ctx); err != nil {
					return false, err
				}
			}
			return false, fmt.Errorf("%s: reset 100 times", msg)
		}
		for i := range clients {
			start := time.Duration(rng.Intn(50_000)) * time.Microsecond
			future.Spawn(cx, func(ctx context.Context) (struct{}, error) {
				if _, err := future.Sleep(cx, start).Await(ctx); err != nil {
					return struct{}{}, err
				}
				ok, err := serve(ctx, fmt.Sprintf("client %d", i))
				if ok {
					served++
				}
				if err != nil {
					errs = append(errs, err)
				}
				return struct{}{}, nil
			})
		}
		if !w.RunUntil(func() bool { return served == clients || len(errs) > 0 }, time.Hour) {
			t.Fatalf("%d of %d clients served after %v of simulated time (%d connects, %d resets, hits %+v, %+v)",
				served, clients, w.Now(), attempts, resets, w.Hits(), netio.StatsOf(sx))
		}
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}

		hit, st := w.Hits(), netio.StatsOf(sx)
		t.Logf("faults %v/%v: %d clients, %d connects, %d resets, last accept at %v; hits %+v; stats %+v",
			f.AcceptFail, f.AcceptAbort, clients, attempts, resets, lastAccept, hit, st)
		total.AcceptFailed += hit.AcceptFailed
		total.AcceptAborted += hit.AcceptAborted
		w.Record('h', hit.AcceptFailed, hit.AcceptAborted, nil)
		if st.Accepted != uint64(clients) {
			t.Errorf("Stats.Accepted = %d, want %d: one per client (aborted connections are never accepted)", st.Accepted, clients)
		}
		if st.AcceptErrors != hit.AcceptFailed {
			t.Errorf("Stats.AcceptErrors = %d, want %d: the accepts the network failed with EMFILE or ENFILE", st.AcceptErrors, hit.AcceptFailed)
		}
		if uint64(resets) != hit.AcceptAborted || attempts != clients+resets {
			t.Errorf("%d connects, %d resets; want a reset per connection aborted at accept (%d), and a connect per client besides", attempts, resets, hit.AcceptAborted)
		}
		// The first failure of a spell is logged, not the others.
		if n := logs.count("netio: accept") - logged; n > int(hit.AcceptFailed) || (n == 0) != (hit.AcceptFailed == 0) {
			t.Errorf("%d accept failures logged for %d failed accepts; want one per spell of failures", n, hit.AcceptFailed)
		}
		// One accept loop: each failure delays the next try by the
		// back-off, on the world's clock.
		if least := time.Duration(hit.AcceptFailed) * minDelay; lastAccept < least {
			t.Errorf("last accept at %v, after %d failed accepts; want their back-off, %v at least", lastAccept, hit.AcceptFailed, least)
		}

		// The faults stop: the listener, still served by the same loop,
		// takes a new client at once.
		f.AcceptFail, f.AcceptAbort = 0, 0
		at := w.Now()
		last := future.Spawn(cx, func(ctx context.Context) (bool, error) { return serve(ctx, "last") })
		if !w.RunUntil(last.Ready, time.Minute) {
			t.Fatalf("a client after the faults stopped: not served after %v", w.Now()-at)
		}
		if r, _ := last.Peek(); !r.Value || r.Err != nil || w.Now()-at > time.Second {
			t.Fatalf("a client after the faults stopped: served %v, %v, after %v", r.Value, r.Err, w.Now()-at)
		}
	})
	// The faults did happen, of both kinds, over the default seeds.
	if len(seeds) >= 20 && (total.AcceptFailed == 0 || total.AcceptAborted == 0) {
		t.Errorf("over %d seeds the network drew %+v; want both faults", len(seeds), total)
	}
}
