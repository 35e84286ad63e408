package netio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// sendFileData is the file SendFile sends: larger than a socket takes at
// once, so that the send meets a full socket and goes on at its pace.
func sendFileData(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size+123)
	for i := range data {
		data[i] = byte(i*31 + i>>11)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

var sendFileCases = []struct {
	name string
	body func(t *testing.T, e *env)
}{
	{"Ordered", sendFileOrdered},
	{"ShortFile", sendFileShort},
}

func TestSendFile(t *testing.T) {
	for _, tc := range sendFileCases {
		t.Run(tc.name, func(t *testing.T) { onAll(t, tc.body) })
	}
}

func TestSimSendFile(t *testing.T) {
	for _, tc := range sendFileCases {
		t.Run(tc.name, func(t *testing.T) { onSim(t, tc.body) })
	}
}

// sendFileOrdered: the file's bytes (a range of it, twice) come after the
// output written before and before that written after; a Write while a
// send is under way fails and writes nothing.
func sendFileOrdered(t *testing.T, e *env) {
	f, data := sendFileData(t, e.size(3<<20))
	l := e.listen()
	off, n := int64(1000), int64(len(data)-2123)
	want := append([]byte("head"), data[off:off+n]...)
	want = append(want, "middle"...)
	want = append(want, data[:10]...)
	want = append(want, "tail"...)
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		c.WriteString("head")
		fut := c.SendFile(f, off, n)
		// The kernel may take it all at once (a large loopback buffer):
		// then the send is over, and writing goes on.
		if !fut.Ready() {
			if _, err := c.WriteString("x"); !errors.Is(err, netio.ErrSendFilePending) {
				return fmt.Errorf("Write during SendFile: %v, want ErrSendFilePending", err)
			}
			if _, err := c.SendFile(f, 0, 1).Await(ctx); !errors.Is(err, netio.ErrSendFilePending) {
				return fmt.Errorf("second SendFile: %v, want ErrSendFilePending", err)
			}
		} else if e.w != nil {
			return errors.New("the simulated network took 3 MiB at once")
		}
		if _, err := fut.Await(ctx); err != nil {
			return fmt.Errorf("SendFile: %v", err)
		}
		if b := c.Buffered(); b != 0 {
			return fmt.Errorf("Buffered after SendFile: %d", b)
		}
		// The copy path reads the file through fileio's workers, a job
		// per 64 KiB piece, never on the loop; sendfile(2) needs none.
		pieces, ops := uint64((n+64<<10-1)/(64<<10)), fileio.StatsOf(e.srv).Ops
		if zc := e.backend() == "epoll"; zc && ops != 0 || !zc && ops < pieces {
			return fmt.Errorf("%s: %d file operations for %d pieces", e.backend(), ops, pieces)
		}
		c.WriteString("middle")
		if _, err := c.SendFile(f, 0, 10).Await(ctx); err != nil {
			return fmt.Errorf("SendFile: %v", err)
		}
		if _, err := c.SendFile(f, 0, 0).Await(ctx); err != nil {
			return fmt.Errorf("SendFile of nothing: %v", err)
		}
		_, err := c.WriteString("tail")
		return err
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		got, err := readAll(ctx, c)
		if err != io.EOF || !bytes.Equal(got, want) {
			return fmt.Errorf("got %d bytes (%v), want %d: first difference at %d", len(got), err, len(want), firstDiff(got, want))
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// sendFileShort: a file shorter than the range fails the send with
// io.ErrUnexpectedEOF, and the connection with it.
func sendFileShort(t *testing.T, e *env) {
	f, data := sendFileData(t, e.size(3<<20))
	l := e.listen()
	srv := e.serveOne(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		_, err := c.SendFile(f, int64(len(data))-10, 100).Await(ctx)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("SendFile past the end: %v, want io.ErrUnexpectedEOF", err)
		}
		if _, err := c.WriteString("x"); err == nil {
			return errors.New("Write after a failed SendFile succeeded")
		}
		return nil
	})
	cli := e.dial(l, func(ctx context.Context, c *netio.Conn) error {
		defer c.Close()
		got, _ := readAll(ctx, c)
		if len(got) > 10 {
			return fmt.Errorf("got %d bytes, want at most the 10 the file has", len(got))
		}
		return nil
	})
	must(e, srv)
	must(e, cli)
}

// TestSendFileTLS: over TLS the file is read on fileio's workers (never
// on the loop) and sealed in order: the client gets the bytes written
// before, the range, and those written after.
func TestSendFileTLS(t *testing.T) {
	f, data := sendFileData(t, 3<<20)
	ex := started(t)
	l := listenTLS(t, ex, serverConfig())
	const off, n = 777, 2<<20 + 5
	errs := make(chan error, 1)
	netio.Serve(l, func(c *netio.Conn) {
		c.WriteString("head")
		c.SendFile(f, off, n).OnComplete(func(_ struct{}, err error) {
			if err == nil {
				_, err = c.WriteString("tail")
			}
			c.Close()
			errs <- err
		})
	})
	tc := mustDialTLS(t, l, clientConfig())
	got, err := io.ReadAll(tc)
	if err != nil {
		t.Fatal(err)
	}
	if err := spindletest.Recv(t, errs); err != nil {
		t.Fatalf("SendFile over TLS: %v", err)
	}
	want := append(append([]byte("head"), data[off:off+n]...), "tail"...)
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d: first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	if ops := fileio.StatsOf(ex).Ops; ops < (n+64<<10-1)/(64<<10) {
		t.Fatalf("%d file operations for a %d-byte range: not read on the workers", ops, n)
	}
}
