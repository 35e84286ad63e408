package netio_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// A read that times out is withdrawn and loses nothing: the bytes that were
// received before (held by a Reader) and those that arrive after go to the
// next read, in every receiving form.
func TestReadDeadlineLosesNothing(t *testing.T) {
	type read func(ctx context.Context, c *netio.Conn, r *netio.Reader) ([]byte, error)
	for _, tc := range []struct {
		name   string
		before string // sent before the deadline
		after  string // sent once the read timed out
		want   string // what the next read returns
		read   read
	}{
		{"Recv", "", "late", "late", func(ctx context.Context, c *netio.Conn, _ *netio.Reader) ([]byte, error) {
			return c.Recv().Await(ctx)
		}},
		{"Next", "", "late", "late", func(ctx context.Context, c *netio.Conn, _ *netio.Reader) ([]byte, error) {
			return future.Next[[]byte](ctx, c)
		}},
		{"ReadLine", "ab", "c\n", "abc", func(ctx context.Context, _ *netio.Conn, r *netio.Reader) ([]byte, error) {
			return r.ReadLine().Await(ctx)
		}},
		{"NextLine", "ab", "c\n", "abc", func(ctx context.Context, _ *netio.Conn, r *netio.Reader) ([]byte, error) {
			return r.NextLine(ctx)
		}},
		{"NextN", "ab", "cd", "abc", func(ctx context.Context, _ *netio.Conn, r *netio.Reader) ([]byte, error) {
			return r.NextN(ctx, 3)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := started(t)
			l := listen(t, ex)
			nc := dialNet(t, l)
			c := accept(t, l)
			io.WriteString(nc, tc.before)
			const d = 30 * time.Millisecond
			type res struct {
				first, second error
				got           string
				waited        time.Duration
			}
			sent := make(chan struct{})
			out := future.Spawn(ex, func(ctx context.Context) (res, error) {
				r := netio.NewReader(c, 0)
				start := time.Now()
				c.SetReadDeadline(start.Add(d))
				var x res
				_, x.first = tc.read(ctx, c, r)
				x.waited = time.Since(start)
				c.SetReadDeadline(time.Time{})
				close(sent) // the peer sends the rest now
				b, err := tc.read(ctx, c, r)
				x.got, x.second = string(b), err
				return x, nil
			})
			<-sent
			io.WriteString(nc, tc.after)
			x, _ := spindletest.Await(t, out)
			if !errors.Is(x.first, os.ErrDeadlineExceeded) {
				t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", x.first)
			}
			if x.waited < d {
				t.Errorf("the deadline fired after %v, before its %v", x.waited, d)
			}
			if x.second != nil || x.got != tc.want {
				t.Errorf("next read: %q, %v; want %q", x.got, x.second, tc.want)
			}
		})
	}
}

// A deadline in the past fails reads at once; one moved later fires at the
// later time; a cleared one never fires.
func TestReadDeadlineMoves(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	err := onLoop(t, ex, func() error {
		c.SetReadDeadline(time.Now().Add(-time.Second))
		_, ok := c.TryRecv()
		_, _, err := c.PollRecv(nopWaker{})
		if ok {
			return errors.New("TryRecv returned bytes past the deadline")
		}
		return err
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("PollRecv past the deadline: %v", err)
	}

	const early, late = 5 * time.Millisecond, 60 * time.Millisecond
	start := time.Now()
	f := onLoop(t, ex, func() *future.Future[[]byte] {
		c.SetReadDeadline(start.Add(early))
		c.SetReadDeadline(start.Add(late)) // later: the first timer arms itself again
		return c.Recv()
	})
	if _, err := spindletest.Await(t, f); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Recv: %v, want os.ErrDeadlineExceeded", err)
	}
	if el := time.Since(start); el < late {
		t.Errorf("the deadline moved to %v fired after %v", late, el)
	}

	// Cleared before it fires: the read waits for the bytes.
	f = onLoop(t, ex, func() *future.Future[[]byte] {
		c.SetReadDeadline(time.Now().Add(early))
		c.SetReadDeadline(time.Time{})
		return c.Recv()
	})
	// The timer of the cleared deadline has had its time to fire once this
	// round trip of the loop runs after it.
	time.AfterFunc(2*early, func() { io.WriteString(nc, "ok") })
	if b, err := spindletest.Await(t, f); err != nil || string(b) != "ok" {
		t.Fatalf("Recv after the deadline was cleared: %q, %v", b, err)
	}
}

// Past the write deadline, Write and Flush fail with
// os.ErrDeadlineExceeded, and so does a Flush that waited for a peer that
// does not read; the output already written is not lost.
func TestWriteDeadline(t *testing.T) {
	ex := started(t)
	l := listen(t, ex, netio.WithOutputLimit(0))
	nc := dialNet(t, l)
	c := accept(t, l)
	const size = 16 << 20 // more than the kernel's socket buffers hold
	chunk := strings.Repeat("w", 64<<10)
	flushed := onLoop(t, ex, func() *future.Future[struct{}] {
		for range size / len(chunk) {
			c.WriteString(chunk)
		}
		c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
		return c.Flush()
	})
	if _, err := spindletest.Await(t, flushed); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Flush to a peer that does not read: %v, want os.ErrDeadlineExceeded", err)
	}
	type wr struct {
		err  error
		left int
	}
	w := onLoop(t, ex, func() wr {
		_, err := c.WriteString("more")
		return wr{err, c.Buffered()}
	})
	if !errors.Is(w.err, os.ErrDeadlineExceeded) || w.left == 0 {
		t.Fatalf("Write past the deadline: %v with %d bytes buffered; want os.ErrDeadlineExceeded and the output kept", w.err, w.left)
	}
	flushed = onLoop(t, ex, func() *future.Future[struct{}] {
		c.SetWriteDeadline(time.Time{})
		c.WriteString("end")
		return c.Flush()
	})
	got, err := io.ReadAll(io.LimitReader(nc, size+3))
	if err != nil || len(got) != size+3 || string(got[size:]) != "end" {
		t.Fatalf("the peer read %d bytes (%v), want %d ending in \"end\"", len(got), err, size+3)
	}
	if _, err := spindletest.Await(t, flushed); err != nil {
		t.Fatalf("Flush once the deadline was cleared: %v", err)
	}
}

// An idle connection is closed: its receive fails with ErrIdleTimeout,
// which matches os.ErrDeadlineExceeded, and the peer reads EOF. Traffic
// keeps it open.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	ex := started(t)
	l := listen(t, ex, netio.WithIdleTimeout(idle))
	ended := make(chan error, 1)
	netio.Serve(l, func(c *netio.Conn) {
		onRecvErr(c, func(b []byte) { c.Write(b) }, func(err error) { ended <- err })
	})
	nc := dialNet(t, l)
	var lastWrite time.Time
	for i := range 10 { // 10 echoes, 10 ms apart: never idle for long
		if i > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		lastWrite = time.Now()
		io.WriteString(nc, "x")
		readN(t, nc, 1)
	}
	err := spindletest.Recv(t, ended)
	if !errors.Is(err, netio.ErrIdleTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("receive of an idle connection: %v, want ErrIdleTimeout", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("ErrIdleTimeout is not a net.Error with Timeout: %v", err)
	}
	// The server received the last byte after it was written.
	if el := time.Since(lastWrite); el < idle {
		t.Errorf("closed %v after the last byte was sent; idle timeout %v", el, idle)
	}
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil {
		t.Errorf("the peer read %q, %v; want EOF", b, err)
	}
}

// onRecvErr calls fn with everything c receives and end with the error
// that ends it.
func onRecvErr(c *netio.Conn, fn func([]byte), end func(error)) {
	var next func([]byte, error)
	next = func(b []byte, err error) {
		if err != nil {
			end(err)
			c.Close()
			return
		}
		fn(b)
		c.Recv().OnComplete(next)
	}
	c.Recv().OnComplete(next)
}
