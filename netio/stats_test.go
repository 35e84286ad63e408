package netio_test

import (
	"context"
	"testing"

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
	want := netio.Stats{Accepted: 3, Closed: 3}
	if got := netio.StatsOf(ex); got != want {
		t.Fatalf("StatsOf after Shutdown = %+v, want %+v", got, want)
	}
}
