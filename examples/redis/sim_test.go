package main

// The server under simulation (package sim): shards, clients and the
// network between them stepped by one seed on fake time, every reply
// checked against a model of the commands.
//
//	go test ./examples/redis -run Sim -v                 # the default seeds
//	go test ./examples/redis -run Sim -sim.seed=7 -v     # one seed
//	go test ./examples/redis -run Sim -sim.runs=200 -v   # 200 seeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

const simPort = 6379

// simServer runs a server of shards on host h.
func simServer(h *sim.Host, shards, outLimit int, onPanic func(any)) *Server {
	s := simServerOf(h, Config{Shards: shards, OutputLimit: outLimit}, onPanic)
	if err := s.Listen("tcp", fmt.Sprintf(":%d", simPort)); err != nil {
		panic(err)
	}
	return s
}

// simServerOf makes a server of cfg.Shards shards on host h, with the
// keys placed by a fixed hash; it listens once told to.
func simServerOf(h *sim.Host, cfg Config, onPanic func(any)) *Server {
	g := h.Group(cfg.Shards, executor.WithName("redis"), executor.WithPanicHandler(onPanic))
	cfg.KeyHash = func(key []byte) uint64 { // keys expire on the shards' clock: the world's
		f := fnv.New64a()
		f.Write(key)
		return f.Sum64()
	}
	return New(g, cfg)
}

// cmd encodes a request.
func cmd(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// replyLen returns the length of the first complete reply in b, or false.
func replyLen(b []byte) (int, bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return 0, false
	}
	switch b[0] {
	case '+', '-', ':':
		return i + 2, true
	case '$':
		n, err := strconv.Atoi(string(b[1:i]))
		if err != nil {
			return 0, false
		}
		if n < 0 {
			return i + 2, true
		}
		if len(b) < i+2+n+2 {
			return 0, false
		}
		return i + 2 + n + 2, true
	case '*':
		n, err := strconv.Atoi(string(b[1:i]))
		if err != nil {
			return 0, false
		}
		off := i + 2
		for range max(n, 0) {
			k, ok := replyLen(b[off:])
			if !ok {
				return 0, false
			}
			off += k
		}
		return off, true
	}
	return 0, false
}

func bulk(v string) string   { return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n" }
func integer(n int) string   { return ":" + strconv.Itoa(n) + "\r\n" }
func array(n int) string     { return "*" + strconv.Itoa(n) + "\r\n" }
func simple(s string) string { return "+" + s + "\r\n" }

const nilBulk = "$-1\r\n"

// model is what a client knows of its own keys: the exact state, since
// no other client touches them. The keys of groupKeys, which every client
// touches, have no model but one rule (groupOp).
type model struct {
	strs  map[string]string
	lists map[string][]string
	hashs map[string]map[string]string
	ttl   map[string]*ttlKey
}

// ttlKey is a key set with PX: present for certain until low, gone for
// certain from high on (the server's clock is read somewhere between a
// request's sending and its reply).
type ttlKey struct {
	v         string
	low, high time.Duration
}

func newModel() *model {
	return &model{strs: map[string]string{}, lists: map[string][]string{}, hashs: map[string]map[string]string{}, ttl: map[string]*ttlKey{}}
}

// op is one request and how to check its reply.
type op struct {
	req   []byte
	want  []string // the replies allowed
	after func()   // applies the request to the model, once the reply checked
	sent  time.Duration
	check func(reply string, sent, got time.Duration) error // instead of want
}

// gen draws a request on the client's keys and the model's answer.
func (m *model) gen(rng *rand.Rand, id int) op {
	key := func(kind string) string { return fmt.Sprintf("c%d:%s%d", id, kind, rng.Intn(6)) }
	val := func() string {
		b := make([]byte, 1+rng.Intn(40))
		for i := range b {
			b[i] = 'a' + byte(rng.Intn(26))
		}
		return string(b)
	}
	getStr := func(k string) string {
		if v, ok := m.strs[k]; ok {
			return bulk(v)
		}
		return nilBulk
	}
	switch r := rng.Intn(18); r {
	case 0, 1:
		k, v := key("s"), val()
		return op{req: cmd("SET", k, v), want: []string{simple("OK")}, after: func() { m.strs[k] = v }}
	case 2, 3:
		k := key("s")
		return op{req: cmd("GET", k), want: []string{getStr(k)}}
	case 4: // cross-shard, most likely
		n := 1 + rng.Intn(4)
		ks := make([]string, n)
		want := array(n)
		for i := range ks {
			ks[i] = key("s")
			want += getStr(ks[i])
		}
		return op{req: cmd(append([]string{"MGET"}, ks...)...), want: []string{want}}
	case 5:
		n := 1 + rng.Intn(3)
		args := []string{"MSET"}
		kv := map[string]string{}
		for range n {
			k, v := key("s"), val()
			args = append(args, k, v)
			kv[k] = v
		}
		return op{req: cmd(args...), want: []string{simple("OK")}, after: func() {
			for k, v := range kv {
				m.strs[k] = v
			}
		}}
	case 6:
		n := 1 + rng.Intn(3)
		ks := []string{"DEL"}
		seen := map[string]bool{}
		del := 0
		for range n {
			k := key("s")
			ks = append(ks, k)
			if _, ok := m.strs[k]; ok && !seen[k] {
				del++
			}
			seen[k] = true
		}
		return op{req: cmd(ks...), want: []string{integer(del)}, after: func() {
			for k := range seen {
				delete(m.strs, k)
			}
		}}
	case 7:
		k1, k2 := key("s"), key("s")
		n := 0
		for _, k := range []string{k1, k2} {
			if _, ok := m.strs[k]; ok {
				n++
			}
		}
		return op{req: cmd("EXISTS", k1, k2), want: []string{integer(n)}}
	case 8:
		k := key("n")
		d := rng.Intn(21) - 10
		cur, _ := strconv.Atoi(m.strs[k])
		return op{req: cmd("INCRBY", k, strconv.Itoa(d)), want: []string{integer(cur + d)}, after: func() { m.strs[k] = strconv.Itoa(cur + d) }}
	case 9:
		k := key("n")
		cur, _ := strconv.Atoi(m.strs[k])
		return op{req: cmd("INCR", k), want: []string{integer(cur + 1)}, after: func() { m.strs[k] = strconv.Itoa(cur + 1) }}
	case 10:
		k, v := key("l"), val()
		front := rng.Intn(2) == 0
		name := "RPUSH"
		if front {
			name = "LPUSH"
		}
		return op{req: cmd(name, k, v), want: []string{integer(len(m.lists[k]) + 1)}, after: func() {
			if front {
				m.lists[k] = append([]string{v}, m.lists[k]...)
			} else {
				m.lists[k] = append(m.lists[k], v)
			}
		}}
	case 11:
		k := key("l")
		l := m.lists[k]
		if len(l) == 0 {
			return op{req: cmd("LPOP", k), want: []string{nilBulk}}
		}
		return op{req: cmd("LPOP", k), want: []string{bulk(l[0])}, after: func() {
			if len(l) == 1 {
				delete(m.lists, k)
			} else {
				m.lists[k] = l[1:]
			}
		}}
	case 12:
		k := key("l")
		want := array(len(m.lists[k]))
		for _, v := range m.lists[k] {
			want += bulk(v)
		}
		return op{req: cmd("LRANGE", k, "0", "-1"), want: []string{want}}
	case 13:
		k, f, v := key("h"), fmt.Sprint("f", rng.Intn(4)), val()
		_, had := m.hashs[k][f]
		added := 1
		if had {
			added = 0
		}
		return op{req: cmd("HSET", k, f, v), want: []string{integer(added)}, after: func() {
			if m.hashs[k] == nil {
				m.hashs[k] = map[string]string{}
			}
			m.hashs[k][f] = v
		}}
	case 14:
		k, f := key("h"), fmt.Sprint("f", rng.Intn(4))
		want := nilBulk
		if v, ok := m.hashs[k][f]; ok {
			want = bulk(v)
		}
		return op{req: cmd("HGET", k, f), want: []string{want}}
	case 16: // sets all or none
		n := 1 + rng.Intn(3)
		args := []string{"MSETNX"}
		var kv [][2]string
		exists := false
		for range n {
			k, v := key("s"), val()
			args = append(args, k, v)
			kv = append(kv, [2]string{k, v})
			_, had := m.strs[k]
			exists = exists || had
		}
		if exists {
			return op{req: cmd(args...), want: []string{integer(0)}}
		}
		return op{req: cmd(args...), want: []string{integer(1)}, after: func() {
			for _, p := range kv {
				m.strs[p[0]] = p[1]
			}
		}}
	case 15:
		k, v, ms := key("t"), val(), 1+rng.Intn(30)
		// The server's clock is in whole milliseconds: a millisecond of
		// slack on either side.
		tk := &ttlKey{v: v, low: time.Duration(ms-1) * time.Millisecond, high: time.Duration(1 << 62)}
		o := op{req: cmd("SET", k, v, "PX", strconv.Itoa(ms)), after: func() { m.ttl[k] = tk }}
		o.check = func(reply string, sent, got time.Duration) error {
			if reply != simple("OK") {
				return fmt.Errorf("got %q, want +OK", reply)
			}
			tk.low += sent
			tk.high = got + time.Duration(ms+1)*time.Millisecond
			return nil
		}
		return o
	default:
		k := key("t")
		t, ok := m.ttl[k]
		o := op{req: cmd("GET", k)}
		o.check = func(reply string, sent, got time.Duration) error {
			switch {
			case !ok:
				if reply != nilBulk {
					return fmt.Errorf("got %q, want nil (never set)", reply)
				}
			case got < t.low:
				if reply != bulk(t.v) {
					return fmt.Errorf("got %q before its expiry (live until %v at least, asked %v..%v), want %q", reply, t.low, sent, got, t.v)
				}
			case sent >= t.high:
				if reply != nilBulk {
					return fmt.Errorf("got %q after its expiry (gone by %v, asked %v..%v)", reply, t.high, sent, got)
				}
			default:
				if reply != nilBulk && reply != bulk(t.v) {
					return fmt.Errorf("got %q, want %q or nil", reply, t.v)
				}
			}
			return nil
		}
		return o
	}
}

// multi draws a transaction on the client's keys: MULTI, requests that
// gen draws (each answers QUEUED, and its reply goes in EXEC's), then
// EXEC, or DISCARD; and, now and then, a WATCH of a key before, which the
// client writes itself (EXEC then answers nil and runs nothing) or not.
// The requests' effects are applied to the model as they are drawn,
// unless the transaction does not run.
func (m *model) multi(rng *rand.Rand, id int) []op {
	var ops []op
	runs := true
	if rng.Intn(3) == 0 {
		k := fmt.Sprintf("c%d:s%d", id, rng.Intn(6))
		ops = append(ops, op{req: cmd("WATCH", k), want: []string{simple("OK")}})
		if rng.Intn(2) == 0 {
			v := fmt.Sprint("w", rng.Intn(100))
			ops = append(ops, op{req: cmd("SET", k, v), want: []string{simple("OK")}, after: func() { m.strs[k] = v }})
			runs = false
		}
	}
	discard := rng.Intn(6) == 0
	runs = runs && !discard
	ops = append(ops, op{req: cmd("MULTI"), want: []string{simple("OK")}})
	n := 1 + rng.Intn(4)
	var afters []func()
	exec := array(n)
	for len(afters) < n {
		o := m.gen(rng, id)
		if o.check != nil || len(o.want) != 1 {
			continue // a key with a time to live: its reply depends on when
		}
		ops = append(ops, op{req: o.req, want: []string{simple("QUEUED")}})
		exec += o.want[0]
		if o.after == nil {
			o.after = func() {}
		}
		if runs {
			o.after() // the next request's answer depends on it
		}
		afters = append(afters, o.after)
	}
	switch {
	case discard:
		ops = append(ops, op{req: cmd("DISCARD"), want: []string{simple("OK")}})
	case runs:
		ops = append(ops, op{req: cmd("EXEC"), want: []string{exec}})
	default:
		ops = append(ops, op{req: cmd("EXEC"), want: []string{"*-1\r\n"}})
	}
	return ops
}

// groupMulti draws a transaction that sets every group key (the writes
// between them sometimes), or deletes them all: whoever reads them sees
// all of it or none, as with MSET. Now and then the keys are watched
// first: EXEC then runs, or answers nil if another client wrote one.
func groupMulti(rng *rand.Rand, id int, seq *int) []op {
	*seq++
	v := fmt.Sprintf("c%d.%d", id, *seq)
	var ops []op
	watch := rng.Intn(3) == 0
	if watch {
		ops = append(ops, op{req: cmd(append([]string{"WATCH"}, groupKeys...)...), want: []string{simple("OK")}})
	}
	ops = append(ops, op{req: cmd("MULTI"), want: []string{simple("OK")}})
	del := rng.Intn(4) == 0
	exec := array(len(groupKeys))
	for _, k := range groupKeys {
		if del {
			ops = append(ops, op{req: cmd("DEL", k), want: []string{simple("QUEUED")}})
			continue
		}
		ops = append(ops, op{req: cmd("SET", k, v), want: []string{simple("QUEUED")}})
		exec += simple("OK")
	}
	if del {
		// DEL answers 0 or 1 for each key, but the same for all of them.
		exec = array(len(groupKeys)) + strings.Repeat(integer(1), len(groupKeys))
		none := array(len(groupKeys)) + strings.Repeat(integer(0), len(groupKeys))
		want := []string{exec, none}
		if watch {
			want = append(want, "*-1\r\n")
		}
		return append(ops, op{req: cmd("EXEC"), want: want})
	}
	want := []string{exec}
	if watch {
		want = append(want, "*-1\r\n")
	}
	return append(ops, op{req: cmd("EXEC"), want: want})
}

// simRun is what the clients of one seeded run share: the world, the
// server's address and settings, and whether it is shutting down.
type simRun struct {
	w       *sim.World
	addr    string
	hz      int           // the server's CONFIG GET hz
	timeout time.Duration // its OutputTimeout
	linger  time.Duration // its Linger
	shared  int           // INCRs of the shared counter answered
	down    bool          // the server is shutting down: connections end, connects are refused
	abrupt  bool          // by Close: connections are reset
	refused int           // connects refused before the server listened
	aborted int           // connections reset before the server accepted them (Faults.AcceptAbort)
	big     int           // the largest reply a client asks for: under the output limit
}

// dial connects to the server, again while it refuses (it may not listen
// yet); once it is shutting down a refusal is the answer. While the
// network aborts accepts (Faults.AcceptAbort), a connection is confirmed
// by a PING: a reset before its answer is a connection the server never
// accepted, and the client connects again; once the server is shutting
// down, that is the end (errUnanswered).
func (r *simRun) dial(ctx context.Context, ex *executor.Executor) (*netio.Conn, error) {
	aborts := r.w.Faults().AcceptAbort > 0
	for try := 0; ; try++ {
		c, err := netio.Dial(ctx, ex, "tcp", r.addr).Await(ctx)
		if err == nil && aborts {
			c.Write(cmd("PING"))
			reply, perr := (&replies{c: c}).next(ctx)
			if perr == nil && reply != simple("PONG") {
				perr = fmt.Errorf("PING: got %q", reply)
			}
			if perr != nil {
				c.Close()
				c, err = nil, perr
			}
		}
		reset := aborts && errors.Is(err, syscall.ECONNRESET)
		if reset && r.down {
			return nil, fmt.Errorf("%w: %w", errUnanswered, err)
		}
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) && !reset || r.down || try == 100 {
			return c, err
		}
		if reset {
			r.aborted++
		} else {
			r.refused++
		}
		r.w.Record('f', uint64(try), 0, []byte(err.Error()))
		if _, err := future.Sleep(ex, time.Duration(1+try%5)*time.Millisecond).Await(ctx); err != nil {
			return nil, err
		}
	}
}

// errUnanswered is a connection reset before the server answered it,
// while the server shuts down: it may never have been accepted.
var errUnanswered = errors.New("reset before its first reply")

// ended judges how a connection ended, err (of a read, a write or a
// connect), when the client did not end it: only while the server shuts
// down, and then by the end of the stream after the replies (never a
// reset, which would lose them), or a refused connect. A host cut from
// the server for longer than the linger may see a reset: its bytes reach
// a connection the server closed.
func (r *simRun) ended(err error, mayReset bool) error {
	switch {
	case !r.down:
		return err
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, errUnanswered):
		return nil
	case (mayReset || r.abrupt) && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)):
		return nil
	case r.abrupt && errors.Is(err, net.ErrClosed):
		return nil // a write after the reset
	}
	return fmt.Errorf("ended by %w during the shutdown; want the end of the stream", err)
}

// replies reads a connection's replies one at a time.
type replies struct {
	c  *netio.Conn
	in []byte
}

func (p *replies) next(ctx context.Context) (string, error) {
	for {
		if k, ok := replyLen(p.in); ok {
			reply := string(p.in[:k])
			p.in = p.in[k:]
			return reply, nil
		}
		b, err := p.c.Recv().Await(ctx)
		if err != nil {
			return "", err
		}
		p.in = append(p.in, b...)
	}
}

// checkReplies reads the replies of ops in order and checks each; it
// records them in the trace.
func checkReplies(ctx context.Context, w *sim.World, p *replies, id int, ops []op) (int, error) {
	for i, o := range ops {
		reply, err := p.next(ctx)
		if err != nil {
			return i, err
		}
		w.Record('r', uint64(id), uint64(i), []byte(reply))
		if o.check != nil {
			if err := o.check(reply, o.sent, w.Now()); err != nil {
				return i, fmt.Errorf("request %d %s: %w", i, short(string(o.req)), err)
			}
		} else if !contains(o.want, reply) {
			return i, fmt.Errorf("request %d %s: got %s, want %s", i, short(string(o.req)), short(reply), short(fmt.Sprintf("%q", o.want)))
		}
	}
	return len(ops), nil
}

// client runs rounds of pipelines of every kind of request on its own
// keys, checking every reply; far is a host cut from the server now and
// then.
func (r *simRun) client(ctx context.Context, ex *executor.Executor, id, rounds int, rng *rand.Rand, far bool) error {
	w := r.w
	seq := 0
	c, err := r.dial(ctx, ex)
	if err != nil {
		if err := r.ended(err, far); err != nil {
			return fmt.Errorf("client %d: dial: %w", id, err)
		}
		return nil
	}
	defer c.Close()
	m := newModel()
	xm := newXModel(id, r.hz)
	p := &replies{c: c}
	for round := 0; round < rounds; round++ {
		n := 1 + rng.Intn(8)
		if rng.Intn(6) == 0 {
			n += rng.Intn(60) // a long pipeline
		}
		var ops []op
		var req []byte
		for len(ops) < n {
			var more []op
			switch rng.Intn(24) {
			case 0:
				more = []op{{req: cmd("INCR", "shared"), check: func(reply string, _, _ time.Duration) error {
					if v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n")); err != nil || v <= 0 {
						return fmt.Errorf("INCR shared: got %q", reply)
					}
					r.shared++
					return nil
				}}}
			case 1, 2:
				more = []op{groupOp(rng, id, &seq)}
			case 3:
				more = m.multi(rng, id)
			case 4:
				more = groupMulti(rng, id, &seq)
			case 5, 6, 7:
				more = []op{m.gen(rng, id)}
			case 8:
				more = xm.multi(rng, w.Now())
			default:
				more = xm.ops(xm.gen(rng, w.Now()))
			}
			for _, o := range more {
				req = append(req, o.req...)
				o.sent = w.Now()
				// A request's model answer depends on those before it.
				if o.after != nil {
					o.after()
				}
				ops = append(ops, o)
			}
		}
		if _, err := c.Write(req); err != nil {
			if err := r.ended(err, far); err != nil {
				return fmt.Errorf("client %d: write: %w", id, err)
			}
			return nil
		}
		if i, err := checkReplies(ctx, w, p, id, ops); err != nil {
			switch {
			case !isEnd(err):
				return fmt.Errorf("client %d round %d: %w", id, round, err)
			case len(p.in) > 0 && !r.abrupt: // a reset may cut a reply
				return fmt.Errorf("client %d round %d: %q, not a whole reply, before the end", id, round, p.in)
			}
			// A connection the server never answered may not have been
			// accepted when the shutdown closed the listener: the kernel
			// resets those.
			unanswered := round == 0 && i == 0
			if err := r.ended(err, far || unanswered); err != nil {
				return fmt.Errorf("client %d round %d: with %d of %d replies: %w", id, round, i, len(ops), err)
			}
			return nil
		}
		if rng.Intn(3) == 0 {
			// Let keys expire on the world's clock.
			if _, err := future.Sleep(ex, time.Duration(rng.Intn(40))*time.Millisecond).Await(ctx); err != nil {
				return err
			}
		}
	}
	if xm.checks == 0 && rounds > 3 {
		return fmt.Errorf("client %d: no reply checked against the model", id)
	}
	return nil
}

// short quotes s, cut in its middle if it is long.
func short(s string) string {
	if len(s) > 300 {
		return fmt.Sprintf("%q ... (%d bytes) ... %q", s[:150], len(s)-300, s[len(s)-150:])
	}
	return fmt.Sprintf("%q", s)
}

// isEnd reports whether err ends a connection (rather than a reply that
// failed its check).
func isEnd(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// groupKeys are keys on several shards that every client writes, only
// all at once: MSET, MSETNX and DEL of all of them. So whoever reads any
// of them at once (MGET, EXISTS) sees them all set to one value, or none:
// a reply that shows some set and others not, or two values, saw part of
// a write.
var groupKeys = []string{"grp:a", "grp:d", "grp:f", "grp:g", "grp:h"} // on 2 or 3 shards of 2, 3 or 4

// groupOp draws a request on groupKeys; seq numbers the client's values.
func groupOp(rng *rand.Rand, id int, seq *int) op {
	all := func(name string, extra ...string) []byte {
		args := []string{name}
		for _, k := range groupKeys {
			args = append(args, k)
			args = append(args, extra...)
		}
		return cmd(args...)
	}
	some := func(name string) ([]byte, int) {
		args := []string{name}
		for _, k := range groupKeys {
			if rng.Intn(3) > 0 {
				args = append(args, k)
			}
		}
		if len(args) < 3 {
			args = append(args, groupKeys[0], groupKeys[len(groupKeys)-1])
		}
		return cmd(args...), len(args) - 1
	}
	*seq++
	v := fmt.Sprintf("c%d.%d", id, *seq)
	n := len(groupKeys)
	switch rng.Intn(6) {
	case 0:
		return op{req: all("MSET", v), want: []string{simple("OK")}}
	case 1:
		return op{req: all("MSETNX", v), want: []string{integer(0), integer(1)}}
	case 2:
		return op{req: cmd(append([]string{"DEL"}, groupKeys...)...), want: []string{integer(0), integer(n)}}
	case 3:
		req, k := some("EXISTS")
		return op{req: req, want: []string{integer(0), integer(k)}}
	default:
		req, k := some("MGET")
		return op{req: req, check: func(reply string, _, _ time.Duration) error {
			if reply == array(k)+strings.Repeat(nilBulk, k) {
				return nil
			}
			lines := strings.Split(reply, "\r\n")
			if len(lines) == 2*k+2 && lines[0] == array(k)[:len(array(k))-2] {
				first := lines[2]
				same := true
				for i := 1; i < k; i++ {
					same = same && lines[1+2*i] == lines[1] && lines[2+2*i] == first
				}
				if same && strings.HasPrefix(lines[1], "$") && lines[1] != "$-1" {
					return nil
				}
			}
			return fmt.Errorf("MGET of keys written together: %q shows part of a write", reply)
		}}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// simRedis is one seeded run: a server of shards whose settings the seed
// draws (shards, output high-water mark, limit and timeout, linger,
// expiry rate; the network's window and faults), which starts listening
// late now and then; clients on two hosts (one of them partitioned from
// the server now and then, for a few milliseconds or for longer than the
// keys' times to live and the linger), each checking every reply against
// a model of its keys; a client whose connections are reset, one that
// stops reading (cut), one that stops reading and comes back (every reply,
// in order), one that QUITs in the middle of a pipeline, one that shuts
// its side; and now and then a shutdown of the server in the middle of
// it all. It returns the first error found.
func simRedis(t *testing.T, w *sim.World) error {
	f := w.Faults()
	rng := w.Rand()
	f.ShortWrite = 0.1
	f.SlowConnect, f.SlowDelay = 0.1, 20*time.Millisecond
	f.MaxDelay = time.Duration(1+rng.Intn(2000)) * time.Microsecond
	f.Window = []int{8 << 10, 16 << 10, 64 << 10, 256 << 10}[rng.Intn(4)]
	if rng.Intn(3) == 0 {
		f.Refuse = 0.05
	}
	if rng.Intn(3) == 0 {
		// Accepts fail now and then: the server backs off and retries;
		// an aborted connection's client is reset, and connects again.
		f.AcceptFail, f.AcceptAbort = 0.05, 0.02
	}
	highWater := []int{4 << 10, 16 << 10, 64 << 10}[rng.Intn(3)]
	cfg := Config{
		Shards:          2 + rng.Intn(3),
		OutputHighWater: highWater,
		OutputLimit:     []int{0, 16 * highWater}[rng.Intn(2)],
		OutputTimeout:   time.Duration(4+rng.Intn(4)) * time.Second,
		Linger:          time.Duration(50+rng.Intn(450)) * time.Millisecond,
		ExpireInterval:  time.Duration(5+rng.Intn(100)) * time.Millisecond,
	}
	longCuts := rng.Intn(2) == 0
	shutdown := rng.Intn(4) == 0
	late := rng.Intn(3) == 0
	w.Record('K', uint64(cfg.Shards), uint64(cfg.OutputHighWater), []byte(fmt.Sprint(cfg.OutputLimit, cfg.OutputTimeout, cfg.Linger, cfg.ExpireInterval, f.Window, f.Refuse, f.AcceptFail, longCuts, shutdown, late)))

	srvH := w.Host("redis")
	var errs []error
	srv := simServerOf(srvH, cfg, func(v any) {
		simPanics.Add(1) // counted too when the world's close runs it, after the return
		errs = append(errs, fmt.Errorf("panic on a shard: %v", v))
	})
	r := &simRun{w: w, addr: srvH.Addr(simPort), hz: int(time.Second / cfg.ExpireInterval), timeout: cfg.OutputTimeout, linger: cfg.Linger, big: 200 << 10}
	if cfg.OutputLimit > 0 {
		r.big = cfg.OutputLimit / 4
	}
	listen := func() {
		err := srv.Listen("tcp", fmt.Sprintf(":%d", simPort))
		switch {
		case r.down && !errors.Is(err, ErrServerClosed):
			errs = append(errs, fmt.Errorf("listen after the shutdown: %v, want ErrServerClosed", err))
		case !r.down && err != nil:
			errs = append(errs, fmt.Errorf("listen: %w", err))
		}
	}
	addr := srvH.Addr(simPort)
	on := map[int]bool{}
	for _, k := range groupKeys {
		on[srv.owner([]byte(k))] = true
	}
	if len(on) < 2 {
		return fmt.Errorf("the group keys are all on shard %v of %d: they test no atomicity", on, srv.g.Len())
	}

	cliH, farH, flakyH, slowH := w.Host("clients"), w.Host("far"), w.Host("flaky"), w.Host("slow")
	cli := cliH.Executor(executor.WithName("clients"))
	far := farH.Executor(executor.WithName("far"))
	flaky := flakyH.Executor(executor.WithName("flaky"))
	slow := slowH.Executor(executor.WithName("slow"))
	if late {
		// Clients connect before the server listens: refused, they retry.
		_ = cli.Submit(func() { cli.AfterFunc(time.Duration(1+rng.Intn(20))*time.Millisecond, listen) })
	} else {
		listen()
	}

	done, clients := 0, 0
	var running []string // the clients not done, by name
	spawn := func(ex *executor.Executor, fn func(ctx context.Context) error) {
		clients++
		name := fmt.Sprintf("%s#%d", ex.Name(), clients)
		running = append(running, name)
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			defer func() {
				done++
				running = slices.DeleteFunc(running, func(s string) bool { return s == name })
			}()
			if err := fn(ctx); err != nil {
				errs = append(errs, err)
			}
			return struct{}{}, nil
		})
	}
	id := 0
	for range 4 + rng.Intn(4) {
		id++
		i, cr := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(cli, func(ctx context.Context) error { return r.client(ctx, cli, i, 20, cr, false) })
	}
	for range 2 {
		id++
		i, cr := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(far, func(ctx context.Context) error { return r.client(ctx, far, i, 20, cr, true) })
	}
	// The far host is cut from the server now and then: its requests wait,
	// none is lost. Long cuts outlast the keys' times to live and the
	// linger, not the output timeout.
	cutFor := func() time.Duration {
		if longCuts {
			return time.Duration(50+rng.Intn(1450)) * time.Millisecond
		}
		return time.Duration(1+rng.Intn(30)) * time.Millisecond
	}
	var cut func()
	cuts := 0
	cut = func() {
		if cuts == 6 {
			return
		}
		cuts++
		w.Partition(farH, srvH)
		far.AfterFunc(cutFor(), func() {
			w.Heal(farH, srvH)
			far.AfterFunc(time.Duration(5+rng.Intn(30))*time.Millisecond, cut)
		})
	}
	_ = far.Submit(func() { far.AfterFunc(time.Duration(rng.Intn(10))*time.Millisecond, cut) })
	// A server shard stalls for a while now and then.
	_ = cli.Submit(func() {
		for i := range 3 {
			cli.AfterFunc(time.Duration(1+rng.Intn(50))*time.Millisecond, func() {
				w.Stall(srv.g.Shard(i%srv.g.Len()), time.Duration(1+rng.Intn(20))*time.Millisecond)
			})
		}
	})
	// The server shuts down in the middle of it all, now and then: every
	// connection answers what it has read, then ends; or it closes at
	// once (Close): every connection is reset.
	if shutdown {
		abrupt := rng.Intn(3) == 0
		_ = cli.Submit(func() {
			cli.AfterFunc(time.Duration(5+rng.Intn(300))*time.Millisecond, func() {
				r.down, r.abrupt = true, abrupt
				w.Record('Q', 0, 0, nil)
				if abrupt {
					if err := srv.Close(); err != nil {
						errs = append(errs, fmt.Errorf("Close: %w", err))
					}
					return
				}
				srv.startDrain()
			})
		})
	}
	// The flaky client's connections are reset under it; it reconnects,
	// and what it wrote after a reconnect reads back.
	spawn(flaky, func(ctx context.Context) error {
		for round := range 4 {
			c, err := r.dial(ctx, flaky)
			if err != nil {
				return r.ended(err, false)
			}
			k, v := fmt.Sprint("flaky:", round), fmt.Sprint("v", round)
			c.Write(append(cmd("SET", k, v), cmd("GET", k)...))
			want := simple("OK") + bulk(v)
			var in []byte
			for len(in) < len(want) {
				b, err := c.Recv().Await(ctx)
				if err != nil {
					break // reset: the next round reconnects
				}
				in = append(in, b...)
			}
			if len(in) >= len(want) && string(in) != want {
				return fmt.Errorf("flaky: got %q, want %q", in, want)
			}
			if rng.Intn(2) == 0 {
				w.Reset(flakyH)
			}
			c.Close()
		}
		return nil
	})
	// A client that stops reading is cut: at the output limit, or by the
	// output timeout; reset, its replies dropped.
	spawn(slow, func(ctx context.Context) error {
		c, err := r.dial(ctx, slow)
		if err != nil {
			return r.ended(err, false)
		}
		defer c.Close()
		big := strings.Repeat("x", 64<<10)
		c.Write(cmd("SET", "big", big))
		p := &replies{c: c}
		if reply, err := p.next(ctx); err != nil || reply != simple("OK") {
			if err == nil {
				return fmt.Errorf("slow reader: SET: %q", reply)
			}
			return r.ended(err, false)
		}
		var req []byte
		const gets = 64 // 4 MB of replies, far past the limits
		for range gets {
			req = append(req, cmd("GET", "big")...)
		}
		c.Write(req)
		if _, err := future.Sleep(slow, cfg.OutputTimeout*3/2).Await(ctx); err != nil {
			return err
		}
		total := 0
		for {
			b, err := c.Recv().Await(ctx)
			if err != nil {
				w.Record('e', 1, uint64(total), []byte(err.Error()))
				if !errors.Is(err, syscall.ECONNRESET) && !(r.down && errors.Is(err, io.EOF)) {
					return fmt.Errorf("slow reader: ended by %v after %d bytes; want a reset", err, total)
				}
				break
			}
			total += len(b)
		}
		if full := gets * len(bulk(big)); total >= full {
			return fmt.Errorf("slow reader: read all %d bytes; want the connection cut", total)
		}
		return nil
	})
	// A client that stops reading past the high-water mark and comes back
	// before the output timeout: every reply, in order.
	id++
	cbID := id
	spawn(cli, func(ctx context.Context) error { return r.comeback(ctx, cli, cbID, highWater, rng) })
	// Clients that QUIT in the middle of a pipeline, and that shut their
	// side after one: the replies up to the end, then the end.
	for range 2 {
		id++
		i, cr := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(cli, func(ctx context.Context) error { return r.quitter(ctx, cli, i, cr) })
		id++
		j, hr := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(cli, func(ctx context.Context) error { return r.halfCloser(ctx, cli, j, hr) })
		id++
		k, pr := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(cli, func(ctx context.Context) error { return r.protoClient(ctx, cli, k, pr) })
	}

	drained := func() bool {
		select {
		case <-srv.drained:
			return true
		default:
			return false
		}
	}
	if !w.RunUntil(func() bool { return done == clients && (!r.down || drained()) || len(errs) > 0 }, 2*time.Minute) {
		errs = append(errs, fmt.Errorf("%d of %d clients done (drained: %v; running: %q) after %v of simulated time (%d steps)", done, clients, drained(), running, w.Now(), w.Steps()))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if late && r.refused == 0 && f.Refuse == 0 {
		errs = append(errs, fmt.Errorf("the server listened late, yet no connect was refused"))
	}
	// A connection reset before its PING's answer is one the network
	// aborted at accept, never one the server dropped.
	if hit := w.Hits(); r.aborted > int(hit.AcceptAborted) || !r.down && r.aborted != int(hit.AcceptAborted) {
		errs = append(errs, fmt.Errorf("%d connections reset before their first reply, %d aborted at accept", r.aborted, hit.AcceptAborted))
	}
	if r.down {
		// Shut down: a connect is refused.
		var derr error
		fin := false
		spawn(cli, func(ctx context.Context) error {
			defer func() { fin = true }()
			c, err := netio.Dial(ctx, cli, "tcp", addr).Await(ctx)
			if err == nil {
				c.Close()
			}
			derr = err
			return nil
		})
		w.RunUntil(func() bool { return fin }, time.Minute)
		if !errors.Is(derr, syscall.ECONNREFUSED) {
			errs = append(errs, fmt.Errorf("a connect after the shutdown: %v, want it refused", derr))
		}
		return errors.Join(errs...)
	}
	// Every INCR of the shared counter was counted once; a request of
	// every shard, then a flush: the keys are gone.
	var got []string
	fin := false
	spawn(cli, func(ctx context.Context) error {
		defer func() { fin = true }()
		c, err := r.dial(ctx, cli)
		if err != nil {
			return err
		}
		defer c.Close()
		c.Write(append(append(append(cmd("GET", "shared"), cmd("FLUSHALL", "SYNC")...), cmd("DBSIZE")...), cmd("FLUSHDB", "NOW")...))
		p := &replies{c: c}
		for range 4 {
			reply, err := p.next(ctx)
			if err != nil {
				return err
			}
			got = append(got, reply)
		}
		return nil
	})
	w.RunUntil(func() bool { return fin }, time.Minute)
	shared := nilBulk
	if r.shared > 0 {
		shared = bulk(strconv.Itoa(r.shared))
	}
	if want := []string{shared, simple("OK"), integer(0), errSyntaxR}; !slices.Equal(got, want) {
		errs = append(errs, fmt.Errorf("shared counter, FLUSHALL, DBSIZE, FLUSHDB NOW: got %q, want %q", got, want))
	}
	return errors.Join(errs...)
}

// comeback pipelines GETs of a large value and INCRs past the server's
// high-water mark, stops reading for a while (less than the output
// timeout), then reads every reply and checks it, in order.
func (r *simRun) comeback(ctx context.Context, ex *executor.Executor, id, highWater int, rng *rand.Rand) error {
	c, err := r.dial(ctx, ex)
	if err != nil {
		return r.ended(err, false)
	}
	defer c.Close()
	v := strings.Repeat("v", 8<<10)
	key, ctr := fmt.Sprintf("cb%d:big", id), fmt.Sprintf("cb%d:n", id)
	ops := []op{{req: cmd("SET", key, v), want: []string{simple("OK")}}}
	n := 4*highWater/len(v) + 4 + rng.Intn(8)
	for i := range n {
		ops = append(ops, op{req: cmd("GET", key), want: []string{bulk(v)}}, op{req: cmd("INCR", ctr), want: []string{integer(i + 1)}})
	}
	var req []byte
	for _, o := range ops {
		req = append(req, o.req...)
	}
	if _, err := c.Write(req); err != nil {
		return r.ended(err, false)
	}
	pause := 50*time.Millisecond + time.Duration(rng.Int63n(int64(r.timeout/2)))
	if _, err := future.Sleep(ex, pause).Await(ctx); err != nil {
		return err
	}
	p := &replies{c: c}
	if k, err := checkReplies(ctx, r.w, p, id, ops); err != nil {
		if !isEnd(err) {
			return fmt.Errorf("comeback reader after %v: %w", pause, err)
		}
		if err := r.ended(err, k == 0); err != nil { // k == 0: maybe never accepted
			return fmt.Errorf("comeback reader after %v, with %d of %d replies: %w", pause, k, len(ops), err)
		}
	}
	return nil
}

// quitter sends requests, QUIT and more requests in one pipeline: the
// replies up to QUIT's +OK, then the end of the stream, nothing after.
func (r *simRun) quitter(ctx context.Context, ex *executor.Executor, id int, rng *rand.Rand) error {
	c, err := r.dial(ctx, ex)
	if err != nil {
		return r.ended(err, false)
	}
	defer c.Close()
	xm := newXModel(id, r.hz)
	var ops []op
	for range rng.Intn(12) {
		ops = append(ops, xm.ops(xm.gen(rng, r.w.Now()))...)
	}
	ops = append(ops, op{req: cmd("QUIT"), want: []string{simple("OK")}})
	var req []byte
	for _, o := range ops {
		req = append(req, o.req...)
	}
	for range rng.Intn(4) {
		req = append(req, cmd("SET", fmt.Sprintf("c%d:x0", id), "after-quit")...)
	}
	for i := range ops {
		ops[i].sent = r.w.Now()
	}
	if _, err := c.Write(req); err != nil {
		return r.ended(err, false)
	}
	return r.answered(ctx, c, fmt.Sprint("quitter ", id), id, ops)
}

// halfCloser sends a pipeline and shuts its side of the connection: every
// reply, then the end of the stream.
func (r *simRun) halfCloser(ctx context.Context, ex *executor.Executor, id int, rng *rand.Rand) error {
	c, err := r.dial(ctx, ex)
	if err != nil {
		return r.ended(err, false)
	}
	defer c.Close()
	xm := newXModel(id, r.hz)
	var ops []op
	for range 1 + rng.Intn(16) {
		ops = append(ops, xm.ops(xm.gen(rng, r.w.Now()))...)
	}
	var req []byte
	for i := range ops {
		req = append(req, ops[i].req...)
		ops[i].sent = r.w.Now()
	}
	if _, err := c.Write(req); err != nil {
		return r.ended(err, false)
	}
	if err := c.CloseWrite(); err != nil {
		return fmt.Errorf("half-closer %d: CloseWrite: %w", id, err)
	}
	return r.answered(ctx, c, fmt.Sprint("half-closer ", id), id, ops)
}

// answered checks the replies of ops, every one, then the end of the
// stream; while the server shuts down, those up to its end.
func (r *simRun) answered(ctx context.Context, c *netio.Conn, who string, id int, ops []op) error {
	p := &replies{c: c}
	if k, err := checkReplies(ctx, r.w, p, id, ops); err != nil {
		if isEnd(err) && r.down {
			err = r.ended(err, k == 0) // k == 0: maybe never accepted
		}
		if err != nil {
			return fmt.Errorf("%s, at reply %d of %d: %w", who, k, len(ops), err)
		}
		return nil
	}
	return r.theEnd(ctx, p, who)
}

// theEnd checks that the connection ends cleanly with nothing more, at
// once: the server shuts its side right after the last reply (its linger
// bounds only the wait for the peer's close after that).
func (r *simRun) theEnd(ctx context.Context, p *replies, who string) error {
	start := r.w.Now()
	b, err := p.c.Recv().Await(ctx)
	took := r.w.Now() - start
	r.w.Record('e', uint64(took), uint64(len(b)), []byte(fmt.Sprint(err)))
	switch {
	case len(p.in) > 0 || len(b) > 0:
		return fmt.Errorf("%s: %q after the last reply", who, append(p.in, b...))
	case !errors.Is(err, io.EOF) && !(r.abrupt && errors.Is(err, syscall.ECONNRESET)):
		return fmt.Errorf("%s: ended by %v, want the end of the stream", who, err)
	case r.linger > 0 && took > r.linger/2:
		return fmt.Errorf("%s: the end of the stream came %v after the last reply (linger %v); want it at once", who, took, r.linger)
	}
	return nil
}

// TestSimRedis runs the server under simulation for the default seeds,
// or those -sim.seed and -sim.runs name.
func TestSimRedis(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		if err := simRedis(t, w); err != nil {
			t.Fatal(err)
		}
	})
}

// simPanics counts the panics on the server's shards, those of the
// world's close included: the calls a close sweeps must complete on their
// connection's loop or be dropped, never run off it.
var simPanics atomic.Int64

// TestSimRedisClose closes worlds in the middle of their runs' calls and
// checks that no shard panicked, at the close either.
func TestSimRedisClose(t *testing.T) {
	before := simPanics.Load()
	for seed := int64(1); seed <= 20; seed++ {
		w := sim.New(seed)
		if err := simRedis(t, w); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		w.Close()
		if n := simPanics.Load() - before; n != 0 {
			t.Fatalf("seed %d: %d panics on the shards, at the close", seed, n)
		}
	}
}

// TestSimRedisReplays runs seeds twice: one seed, one trace.
func TestSimRedisReplays(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		var traces [2]string
		for i := range traces {
			w := sim.New(seed)
			if err := simRedis(t, w); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			traces[i] = w.TraceHex()
			w.Close()
		}
		if traces[0] != traces[1] {
			t.Fatalf("seed %d: traces %s and %s", seed, traces[0], traces[1])
		}
	}
}

// TestPlantedBugs plants each bug and shows that the simulation finds it
// within maxSeeds seeds, and that the seed that found it fails again on
// every replay.
func TestPlantedBugs(t *testing.T) {
	const maxSeeds, replays = 100, 10
	for _, bug := range []struct {
		name string
		on   *bool
	}{
		{"replies-out-of-order", &plantedBugs.localFirst},
		{"lost-wake-up", &plantedBugs.lostWake},
		{"mset-not-atomic", &plantedBugs.split},
		{"exec-not-atomic", &plantedBugs.execSplit},
	} {
		t.Run(bug.name, func(t *testing.T) {
			*bug.on = true
			defer func() { *bug.on = false }()
			run := func(seed int64) (string, error) {
				w := sim.New(seed)
				defer w.Close()
				err := simRedis(t, w)
				return w.TraceHex(), err
			}
			found := int64(-1)
			var first error
			var trace string
			for seed := int64(1); seed <= maxSeeds; seed++ {
				if tr, err := run(seed); err != nil {
					found, first, trace = seed, err, tr
					break
				}
			}
			if found < 0 {
				t.Fatalf("not found in %d seeds", maxSeeds)
			}
			t.Logf("found at seed %d (trace %s): %v", found, trace, firstLine(first))
			for i := range replays {
				tr, err := run(found)
				if err == nil || tr != trace || err.Error() != first.Error() {
					t.Fatalf("replay %d of seed %d: trace %s, error %v; want trace %s and the same failure", i, found, tr, err, trace)
				}
			}
		})
	}
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
