package netio_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// TestStatsAfterShutdown: a server reads its final counts once its
// executor has shut down gracefully, those of a connection still open
// then included (the shutdown closes it).
func TestStatsAfterShutdown(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	for i := range 3 {
		nc := dialNet(t, l)
		c := accept(t, l)
		if i < 2 {
			c.Close()
			nc.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
	defer cancel()
	if err := ex.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want := netio.Stats{Accepted: 3, Closed: 3, Backend: servedBy(t, ex)}
	if got := netio.StatsOf(ex); got != want {
		t.Fatalf("StatsOf after Shutdown = %+v, want %+v", got, want)
	}
}

// servedBy returns what Stats.Backend names for ex, a loop of the
// program's own that has served a socket, and fails the test unless it is
// one that hostBackends allows.
func servedBy(t testing.TB, ex *executor.Executor) string {
	t.Helper()
	b := netio.StatsOf(ex).Backend
	if !slices.Contains(hostBackends(), b) {
		t.Errorf("Stats.Backend = %q, want one of %q", b, hostBackends())
	}
	return b
}

// Stats.Backend names what serves an executor's sockets: nothing before
// the first, then the simulation's, or the host's (epoll, io_uring when
// asked for, the portable one with -tags purego), on both ends.
func TestStatsBackend(t *testing.T) { onAll(t, statsBackend) }

func TestSimStatsBackend(t *testing.T) { onSim(t, statsBackend) }

func statsBackend(t *testing.T, e *env) {
	for _, ex := range []*executor.Executor{e.srv, e.cli} {
		if b := netio.StatsOf(ex).Backend; b != "" {
			t.Errorf("%s before its first socket: Backend = %q, want \"\"", ex.Name(), b)
		}
	}
	l := e.listen()
	echo(l)
	must(e, e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		c.Write([]byte("x"))
		_, err := c.Recv().Await(ctx)
		c.Close()
		return err
	}))
	want := e.backend()
	for _, ex := range []*executor.Executor{e.srv, e.cli} {
		if b := netio.StatsOf(ex).Backend; b != want {
			t.Errorf("%s: Backend = %q, want %q", ex.Name(), b, want)
		}
	}
}

// SPINDLE_NETIO_REQUIRE names the backend the host's loops must run on
// (CI sets it to io_uring for its SPINDLE_NETIO=uring pass): a loop served
// by any other fails, so a pass that asked for io_uring cannot succeed on
// epoll because the kernel refused the ring. Unset, there is nothing to
// check.
func TestRequiredBackend(t *testing.T) {
	want := os.Getenv("SPINDLE_NETIO_REQUIRE")
	if want == "" {
		t.Skip("SPINDLE_NETIO_REQUIRE is not set: no backend is required")
	}
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	defer nc.Close()
	accept(t, l).Close()
	if got := netio.StatsOf(ex).Backend; got != want {
		t.Fatalf("the loop's sockets are served by %q, but SPINDLE_NETIO_REQUIRE=%s (SPINDLE_NETIO=%q)", got, want, os.Getenv("SPINDLE_NETIO"))
	}
}
