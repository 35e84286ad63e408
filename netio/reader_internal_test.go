package netio

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

const safety = 20 * time.Second

// pair returns a connection served by a running executor and its peer, a
// package net connection; both are closed when the test ends.
func pair(t testing.TB) (*executor.Executor, *Conn, net.Conn) {
	t.Helper()
	ex := executor.New()
	ex.Start()
	t.Cleanup(func() { ex.Close() })
	l, err := Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	nc, err := net.DialTimeout("tcp", l.Addr().String(), safety)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(safety))
	t.Cleanup(func() { nc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	c, err := l.Accept().Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ex, c, nc
}

// A token split at any point across receives, or several in one receive,
// reads the same; the reader asks for a receive only once it has carried
// what it holds. Each chunk is written once the reader has received the
// chunks before it, so the splits are the table's.
func TestReaderSplits(t *testing.T) {
	type op struct {
		kind  string // line, slice, n, any
		arg   int
		want  string // the token, or the error's text
		isErr bool
	}
	line := func(w string) op { return op{kind: "line", want: w} }
	for _, tc := range []struct {
		name   string
		max    int
		chunks []string
		ops    []op
		end    bool // the peer closes after the chunks
	}{
		{"one receive", 0, []string{"a\nbb\r\nccc\n"}, []op{line("a"), line("bb"), line("ccc")}, false},
		{"split lines", 0, []string{"he", "llo\nwo", "r", "ld\n"}, []op{line("hello"), line("world")}, false},
		{"split after cr", 0, []string{"x\r", "\ny\n"}, []op{line("x"), line("y")}, false},
		{"empty lines", 0, []string{"\n\r\n", "\n"}, []op{line(""), line(""), line("")}, false},
		{"delimiter", 0, []string{"a;b", "b;"}, []op{{kind: "slice", arg: ';', want: "a;"}, {kind: "slice", arg: ';', want: "bb;"}}, false},
		{"mixed", 0, []string{"$3\r\nfo", "o\r\n+OK\r\n"}, []op{line("$3"), {kind: "n", arg: 5, want: "foo\r\n"}, line("+OK")}, false},
		{"n across three", 0, []string{"ab", "cd", "efg"}, []op{{kind: "n", arg: 6, want: "abcdef"}, {kind: "any", want: "g"}}, false},
		{"n zero", 0, []string{"z"}, []op{{kind: "n", arg: 0, want: ""}, {kind: "any", want: "z"}}, false},
		{"raw after a line", 0, []string{"HELLO\nraw", " bytes"}, []op{line("HELLO"), {kind: "any", want: "raw"}, {kind: "any", want: " bytes"}}, false},
		{"at the limit", 5, []string{"abcd\n", "ab", "cd\r\n"}, []op{line("abcd"), line("abcd")}, false}, // the "\r" counts
		{"too long in one", 4, []string{"abcde\n"}, []op{{kind: "line", want: ErrTooLong.Error(), isErr: true}, {kind: "line", want: ErrTooLong.Error(), isErr: true}}, false},
		{"too long across", 4, []string{"ab", "cde"}, []op{{kind: "line", want: ErrTooLong.Error(), isErr: true}}, false},
		{"n past the limit", 4, []string{"abcde"}, []op{{kind: "n", arg: 5, want: ErrTooLong.Error(), isErr: true}, {kind: "n", arg: 4, want: "abcd"}}, false},
		{"clean end", 0, []string{"last\n"}, []op{line("last"), {kind: "line", want: io.EOF.Error(), isErr: true}}, true},
		{"end in a line", 0, []string{"par", "t"}, []op{{kind: "line", want: io.ErrUnexpectedEOF.Error(), isErr: true}}, true},
		{"end in n", 0, []string{"abc"}, []op{{kind: "n", arg: 4, want: io.ErrUnexpectedEOF.Error(), isErr: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, c, nc := pair(t)
			var r *Reader
			got := make(chan string, len(tc.ops))
			task := future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
				r = NewReader(c, tc.max)
				for _, o := range tc.ops {
					var b []byte
					var err error
					switch o.kind {
					case "line":
						b, err = r.NextLine(ctx)
					case "slice":
						b, err = r.NextSlice(ctx, byte(o.arg))
					case "n":
						b, err = r.NextN(ctx, o.arg)
					case "any":
						b, err = future.Next[[]byte](ctx, r)
					}
					if err != nil {
						got <- "error: " + err.Error()
					} else {
						got <- string(b)
					}
				}
				return struct{}{}, nil
			})
			sent := 0
			for _, ch := range tc.chunks {
				if _, err := io.WriteString(nc, ch); err != nil {
					t.Fatal(err)
				}
				sent += len(ch)
				waitGot(t, ex, &r, task, sent)
			}
			if tc.end {
				nc.(*net.TCPConn).CloseWrite()
			}
			for i, o := range tc.ops {
				want := o.want
				if o.isErr {
					want = "error: " + want
				}
				select {
				case g := <-got:
					if g != want {
						t.Errorf("op %d (%s %d): got %q, want %q", i, o.kind, o.arg, g, want)
					}
				case <-time.After(safety):
					t.Fatalf("op %d: no result", i)
				}
			}
		})
	}
}

// within reports whether b is a part of buf.
func within(b, buf []byte) bool {
	if len(b) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&buf[0]))
	return p >= lo && p < lo+uintptr(len(buf))
}

// waitGot waits until the reader has received n bytes or the task is done.
func waitGot(t *testing.T, ex *executor.Executor, r **Reader, task *future.Future[struct{}], n int) {
	t.Helper()
	deadline := time.Now().Add(safety)
	for time.Now().Before(deadline) {
		ok, _ := future.Call(ex, func() (bool, error) {
			return task.Ready() || (*r != nil && (*r).got >= int64(n)), nil
		}).Await(context.Background())
		if ok {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("the reader did not receive %d bytes", n)
}

// A token straddling receives is carried in a pooled buffer, given back
// once it has been read; one within a receive is not copied.
func TestReaderBuffers(t *testing.T) {
	ex, c, nc := pair(t)
	var r *Reader
	type state struct {
		line    string
		inRecv  bool // the line is c's read buffer
		carried bool // the reader holds a carry buffer
	}
	res := make(chan state, 4)
	task := future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		r = NewReader(c, 0)
		for range 3 {
			b, err := r.NextLine(ctx)
			if err != nil {
				return struct{}{}, err
			}
			in := within(b, c.rbuf)
			res <- state{string(b), in, r.buf != nil}
		}
		return struct{}{}, nil
	})
	io.WriteString(nc, "whole\nhal")
	waitGot(t, ex, &r, task, 9)
	io.WriteString(nc, "ves\nnext\n")
	for _, want := range []state{{"whole", true, false}, {"halves", false, true}, {"next", true, false}} {
		select {
		case got := <-res:
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		case <-time.After(safety):
			t.Fatal("no line")
		}
	}
	if _, err := task.Await(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held, _ := future.Call(ex, func() (bool, error) { r.consume(); return r.buf != nil, nil }).Await(context.Background()); held {
		t.Error("the reader holds a carry buffer once everything is read")
	}
}
