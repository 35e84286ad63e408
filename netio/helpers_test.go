package netio_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// started returns a running executor closed when the test ends.
func started(t testing.TB) *executor.Executor {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	return ex
}

// listen opens a listener on ex at a free loopback port.
func listen(t testing.TB, ex *executor.Executor, opts ...netio.ListenOption) *netio.Listener {
	t.Helper()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// echo serves l: every connection gets back what it sends, until EOF.
func echo(l *netio.Listener) { netio.Serve(l, echoConn) }

// echoConn writes back what c receives, until EOF.
func echoConn(c *netio.Conn) {
	onRecv(c, func(b []byte) error {
		_, err := c.Write(b)
		return err
	})
}

// onRecv calls fn, on the loop, with everything c receives, with Recv and
// OnComplete; once a receive or fn fails it closes c.
func onRecv(c *netio.Conn, fn func([]byte) error) {
	var next func([]byte, error)
	next = func(b []byte, err error) {
		if err == nil {
			err = fn(b)
		}
		if err != nil {
			c.Close()
			return
		}
		c.Recv().OnComplete(next)
	}
	c.Recv().OnComplete(next)
}

// dialNet connects to l with package net, closed when the test ends.
func dialNet(t testing.TB, l *netio.Listener) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout(l.Addr().Network(), l.Addr().String(), spindletest.Safety)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(spindletest.Safety))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// readN reads exactly n bytes from r.
func readN(t testing.TB, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// onLoop runs fn on ex's loop and waits for its result.
func onLoop[T any](t testing.TB, ex *executor.Executor, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	if err := ex.Submit(func() { ch <- fn() }); err != nil {
		t.Fatal(err)
	}
	return spindletest.Recv(t, ch)
}

var ioReadFull = io.ReadFull

var _ = context.Background

// logRecords captures what is logged with log/slog while a test runs.
type logRecords struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Message)
	h.mu.Unlock()
	return nil
}
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

func (h *logRecords) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if len(m) >= len(prefix) && m[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

func captureLog(t *testing.T) *logRecords {
	h := &logRecords{}
	old := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(old) })
	return h
}
