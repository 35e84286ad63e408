package netio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// Reading lines that are already there allocates nothing, in the try
// form, in ReadLines and in a task's NextLine.
func TestReaderNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const lines = 4000
	for _, form := range []string{"TryReadLine", "ReadLines", "NextLine"} {
		t.Run(form, func(t *testing.T) {
			ex := started(t)
			l := listen(t, ex)
			nc := dialNet(t, l)
			c := accept(t, l)
			io.WriteString(nc, strings.Repeat("a line of text\r\n", lines))
			var allocs float64
			switch form {
			case "TryReadLine":
				// Turns of the loop, each trying 100 reads: on the portable
				// backend a try that finds nothing asks for the next
				// receive, which comes in a later turn.
				r := onLoop(t, ex, func() *netio.Reader { return netio.NewReader(c, 0) })
				n := 0
				for turn := 0; n < lines/2; turn++ {
					if turn > 1000 {
						t.Fatalf("%d lines read in %d turns", n, turn)
					}
					a := onLoop(t, ex, func() float64 {
						return testing.AllocsPerRun(100, func() {
							if _, ok := r.TryReadLine(); ok {
								n++
							}
						})
					})
					if turn > 0 {
						allocs = max(allocs, a)
					}
				}
			case "ReadLines", "NextLine":
				// Measure the whole read of the lines, then subtract the
				// fixed cost of one read (a future, a task) from the same
				// read of a tenth of them.
				r := onLoop(t, ex, func() *netio.Reader { return netio.NewReader(c, 0) })
				read := func(n int) float64 { // reads 2n lines: AllocsPerRun runs fn once more first
					return float64(allocsOf(t, func() {
						f := onLoop(t, ex, func() *future.Future[struct{}] {
							if form == "NextLine" {
								return future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
									for range n {
										if _, err := r.NextLine(ctx); err != nil {
											return struct{}{}, err
										}
									}
									return struct{}{}, nil
								})
							}
							k := 0
							return r.ReadLines(func([]byte) error {
								if k++; k == n {
									return errStop
								}
								return nil
							})
						})
						if _, err := spindletest.Await(t, f); err != nil && err != errStop {
							t.Fatal(err)
						}
					}))
				}
				read(1)                             // warm the pools up
				small, big := read(100), read(1800) // 3802 lines in all
				allocs = (big - small) / 1700
			}
			// The reader allocates nothing per line; the portable
			// backend's receives (16 KiB each) may cost its goroutines'
			// hand-over an allocation now and then.
			if allocs > 0 && (!portable || allocs >= 0.01) {
				t.Errorf("%s: %.4f allocations per line, want 0", form, allocs)
			}
		})
	}
}

// ReadLines answers every line of pipelining clients, in order, whatever
// the split of the bytes.
func TestReadLinesPipelined(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	netio.Serve(l, func(c *netio.Conn) {
		netio.NewReader(c, 0).ReadLines(func(line []byte) error {
			c.Write(line)
			c.WriteString("\n")
			return nil
		}).OnComplete(func(struct{}, error) { c.Close() })
	})
	const clients, perClient = 8, 500
	spindletest.Parallel(clients, func(i int) {
		nc := dialNet(t, l)
		go func() {
			w := bufio.NewWriterSize(nc, 1000) // splits lines anywhere
			for k := range perClient {
				w.WriteString("client " + strconv.Itoa(i) + " line " + strconv.Itoa(k) + "\n")
			}
			w.Flush()
			nc.(*net.TCPConn).CloseWrite()
		}()
		br := bufio.NewReader(nc)
		for k := range perClient {
			s, err := br.ReadString('\n')
			if want := "client " + strconv.Itoa(i) + " line " + strconv.Itoa(k) + "\n"; s != want || err != nil {
				t.Errorf("got %q, %v; want %q", s, err, want)
				return
			}
		}
		if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
			t.Errorf("after the last line: %q, %v; want EOF", b, err)
		}
	})
}

// A cancelled ReadLine is withdrawn: the line goes to the next read.
func TestReaderCancel(t *testing.T) {
	ex := started(t)
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	var r *netio.Reader
	f := onLoop(t, ex, func() *future.Future[[]byte] {
		r = netio.NewReader(c, 0)
		first := r.ReadLine()
		first.Cancel()
		return r.ReadLine()
	})
	io.WriteString(nc, "kept\n")
	if b, err := spindletest.Await(t, f); err != nil || string(b) != "kept" {
		t.Fatalf("ReadLine after a cancelled one: %q, %v", b, err)
	}
	pv := onLoop(t, ex, func() (pv any) {
		defer func() { pv = recover() }()
		r.ReadLine()
		r.ReadLine()
		return nil
	})
	if msg, _ := pv.(string); !strings.HasPrefix(msg, "netio:") || !strings.Contains(msg, "another read is pending") {
		t.Errorf("a second pending read: panic %v", pv)
	}
}

var errStop = errors.New("stop")

// allocsOf returns the allocations of the whole process while fn runs.
func allocsOf(t *testing.T, fn func()) uint64 {
	t.Helper()
	return uint64(testing.AllocsPerRun(1, fn))
}

// A panic in ReadLines' function fails its future with a
// *future.PanicError that carries it (as a panic in a Then callback fails
// the derived future), and not the executor's panic handler; the line it
// panicked on is consumed and the Reader reads on.
func TestReadLinesPanic(t *testing.T) {
	panics := make(chan any, 1)
	ex := executor.New(executor.WithPanicHandler(func(v any) { panics <- v }))
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	l := listen(t, ex)
	nc := dialNet(t, l)
	c := accept(t, l)
	var r *netio.Reader
	var seen []string
	f := onLoop(t, ex, func() *future.Future[struct{}] {
		r = netio.NewReader(c, 0)
		return r.ReadLines(func(line []byte) error {
			seen = append(seen, string(line))
			if string(line) == "boom" {
				panic("boom")
			}
			return nil
		})
	})
	io.WriteString(nc, "one\nboom\nafter\n")
	_, err := spindletest.Await(t, f)
	var pe *future.PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("ReadLines: %v, want a *future.PanicError of boom", err)
	}
	next := onLoop(t, ex, func() *future.Future[[]byte] { return r.ReadLine() })
	if b, err := spindletest.Await(t, next); err != nil || string(b) != "after" {
		t.Errorf("ReadLine after the panic: %q, %v; want \"after\"", b, err)
	}
	if !slices.Equal(seen, []string{"one", "boom"}) {
		t.Errorf("the function saw %q", seen)
	}
	select {
	case v := <-panics:
		t.Errorf("the panic handler got %v: the future carries the panic", v)
	default:
	}
}
