package netio_test

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// A handler that panics loses its connection, not the server: the
// connection is closed (its client sees the end instead of waiting for
// ever), the panic reaches the executor's panic handler, and the next
// connection is served.
func TestHandlerPanic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(l *netio.Listener, h func(*netio.Conn))
	}{
		{"Serve", func(l *netio.Listener, h func(*netio.Conn)) { netio.Serve(l, h) }},
		{"Server", func(l *netio.Listener, h func(*netio.Conn)) {
			s := &netio.Server{Handler: h}
			s.Serve(l)
			t.Cleanup(func() { s.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var panics atomic.Int64
			ex := executor.New(executor.WithPanicHandler(func(any) { panics.Add(1) }))
			ex.Start()
			t.Cleanup(func() { ex.Close() })
			l := listen(t, ex)
			n := 0
			tc.serve(l, func(c *netio.Conn) {
				n++
				if n == 1 {
					c.WriteString("partial")
					panic("handler fails")
				}
				c.WriteString("served")
				c.Close()
			})
			first := dialNet(t, l)
			first.SetReadDeadline(time.Now().Add(spindletest.Safety))
			if b, err := io.ReadAll(first); err != nil || string(b) != "partial" {
				t.Fatalf("the connection whose handler panicked: read %q, %v; want what was written, then its end", b, err)
			}
			second := dialNet(t, l)
			second.SetReadDeadline(time.Now().Add(spindletest.Safety))
			if b, err := io.ReadAll(second); err != nil || string(b) != "served" {
				t.Fatalf("the next connection: read %q, %v", b, err)
			}
			if got := panics.Load(); got != 1 {
				t.Errorf("panic handler called %d times, want 1", got)
			}
		})
	}
}
