package main

// The simulation's client of the protocol itself: inline requests (quotes,
// escapes, tabs, empty lines), empty and null multibulks, a bulk whose
// terminator is not CRLF, large arguments, all sent in pieces; and, now
// and then, a request redis-server refuses (a protocol error), whose
// error reply is the last: the connection then ends, what follows
// unanswered. The replies are redis-server 7.0's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// protoErrors are requests redis-server refuses, and its error reply.
var protoErrors = []struct{ req, reply string }{
	{"SET k \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"ECHO \"a\"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{"*1\r\n+foo\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
	{"*2\r\n$4\r\nECHO\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"*3\r\n$3\r\nSET\r\n$2\r\nrk\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
	{"*99999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
	{strings.Repeat("a", 70000), "-ERR Protocol error: too big inline request\r\n"},
}

// protoScript draws requests and their replies; bad tells whether it
// ends with a protocol error (then the connection ends after its reply).
func protoScript(rng *rand.Rand, id, big int) (req, want string, bad bool) {
	var b, w strings.Builder
	key := fmt.Sprintf("rk%d:%d", id, rng.Intn(3))
	for range 1 + rng.Intn(12) {
		switch rng.Intn(12) {
		case 0:
			b.WriteString("PING\r\n")
			w.WriteString("+PONG\r\n")
		case 1:
			b.WriteString([]string{"\r\n", "  \r\n", "*0\r\n", "*-1\r\n"}[rng.Intn(4)]) // nothing to answer
		case 2:
			b.WriteString("ECHO \"\\x41\\n\"\r\n")
			w.WriteString("$2\r\nA\n\r\n")
		case 3:
			fmt.Fprintf(&b, "SET %s \"a b\"\r\nget %s\r\n", key, key)
			w.WriteString("+OK\r\n$3\r\na b\r\n")
		case 4:
			fmt.Fprintf(&b, "set %s 'x y'\r\nGET %s\r\n", key, key)
			w.WriteString("+OK\r\n$3\r\nx y\r\n")
		case 5:
			b.WriteString("*2\r\n$4\r\nECHO\r\n$3\r\nabcXY") // the bulk's terminator is not checked
			w.WriteString("$3\r\nabc\r\n")
		case 6:
			v := strings.Repeat(string(rune('a'+rng.Intn(26))), 1+rng.Intn(big))
			b.Write(cmd("ECHO", v))
			w.WriteString(bulk(v))
		case 7:
			b.WriteString("ping\tpong\r\n")
			w.WriteString("$4\r\npong\r\n")
		case 8:
			b.WriteString("PING\n")
			w.WriteString("+PONG\r\n")
		case 9:
			b.WriteString("ECHO\r\n")
			w.WriteString(errArityR("echo"))
		default:
			b.Write(cmd("ECHO", "\r\n"))
			w.WriteString(bulk("\r\n"))
		}
	}
	if rng.Intn(2) == 0 {
		e := protoErrors[rng.Intn(len(protoErrors))]
		b.WriteString(e.req)
		w.WriteString(e.reply)
		if rng.Intn(2) == 0 && !strings.HasPrefix(e.req, "aaa") {
			b.WriteString("PING\r\n") // after the error: never answered
		}
		bad = true
	}
	return b.String(), w.String(), bad
}

// protoClient sends a script in pieces, some time apart, and reads
// exactly the replies it wants; after a protocol error, the end of the
// stream.
func (r *simRun) protoClient(ctx context.Context, ex *executor.Executor, id int, rng *rand.Rand) error {
	c, err := r.dial(ctx, ex)
	if err != nil {
		return r.ended(err, false)
	}
	defer c.Close()
	req, want, bad := protoScript(rng, id, r.big)
	for rest := req; rest != ""; {
		n := len(rest)
		if rng.Intn(2) == 0 {
			n = 1 + rng.Intn(n)
		}
		if _, err := c.WriteString(rest[:n]); err != nil {
			return r.ended(err, false)
		}
		rest = rest[n:]
		if rest != "" && rng.Intn(2) == 0 {
			if _, err := future.Sleep(ex, time.Duration(rng.Intn(5000))*time.Microsecond).Await(ctx); err != nil {
				return err
			}
		}
	}
	var got []byte
	for len(got) < len(want) {
		b, err := c.Recv().Await(ctx)
		if err != nil {
			if !strings.HasPrefix(want, string(got)) {
				break
			}
			if err := r.ended(err, len(got) == 0); err != nil {
				return fmt.Errorf("protocol client %d: after %s of %s: %w", id, short(string(got)), short(want), err)
			}
			return nil
		}
		got = append(got, b...)
	}
	r.w.Record('p', uint64(id), 0, got)
	if string(got) != want {
		return fmt.Errorf("protocol client %d: sent %s, got %s, want %s", id, short(req), short(string(got)), short(want))
	}
	if bad {
		p := &replies{c: c}
		return r.theEnd(ctx, p, fmt.Sprint("protocol client ", id))
	}
	return nil
}

// TestSimLongLineInPieces: an inline request past 64 KB without its end,
// whose last piece arrives while the server gives the line its grace, is
// refused all the same (redis-server refuses it at once), then the
// connection ends: the grace starts again at the last piece, which no
// wake-up follows.
func TestSimLongLineInPieces(t *testing.T) {
	sim.Check(t, 5, func(t *testing.T, w *sim.World) {
		srvH, cliH := w.Host("redis"), w.Host("client")
		simServer(srvH, 2, 0, func(v any) { t.Errorf("panic on a shard: %v", v) })
		cli := cliH.Executor(executor.WithName("client"))
		r := &simRun{w: w, addr: srvH.Addr(simPort)}
		var got []byte
		var end error
		f := future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
			c, err := r.dial(ctx, cli)
			if err != nil {
				return struct{}{}, err
			}
			defer c.Close()
			c.WriteString("PING\r\n" + strings.Repeat("a", 66000))
			if _, err := future.Sleep(cli, lineGrace/2).Await(ctx); err != nil {
				return struct{}{}, err
			}
			c.WriteString(strings.Repeat("a", 4000))
			for {
				b, err := c.Recv().Await(ctx)
				if err != nil {
					end = err
					return struct{}{}, nil
				}
				got = append(got, b...)
			}
		})
		if !w.RunUntil(f.Ready, time.Minute) {
			t.Fatalf("no end after %v: got %q", w.Now(), got)
		}
		if want := "+PONG\r\n-ERR Protocol error: too big inline request\r\n"; string(got) != want || !errors.Is(end, io.EOF) {
			t.Fatalf("got %q, then %v; want %q, then EOF", got, end, want)
		}
	})
}
