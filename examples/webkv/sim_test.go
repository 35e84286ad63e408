package main

// The server under simulation (package sim): its shards on one host of a
// simulated network, HTTP clients and WebSocket watchers on others, all
// stepped by one seed on fake time, with short writes, delays, a
// partition that heals, resets, stalled shards and (TestSimCrash) a crash
// of the server's host and its restart. Every reply is checked against a
// model of the store, and every watcher's lines against the history of
// the changes (checkWatch).
//
//	go test ./examples/webkv -run Sim -v                 # the default seeds
//	go test ./examples/webkv -run Sim -sim.seed=7 -v     # one seed
//	go test ./examples/webkv -run Sim -sim.runs=200      # 200 seeds of each

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
	"github.com/spindle-rt/spindle/web/websocket"
)

const (
	simPort = 80
	// never is the answer time of a request that had no answer: made or
	// not, nobody knows.
	never = math.MaxUint64
	// readTimeout is how long a client waits for an answer, on fake time;
	// silence bounds how long a watcher waits for any frame (it pings
	// every pingEvery, and the server answers).
	readTimeout = 3 * time.Second
	silence     = time.Second
	pingEvery   = 200 * time.Millisecond
	dialTimeout = time.Second
	maxDials    = 200 // a client's failed dials before it gives up
)

func fnvHash(key string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(key))
	return f.Sum64()
}

// simServer runs the server on a group of shards of h, its keys spread
// by a hash that does not change from run to run.
func simServer(h *sim.Host, shards int, opts ...executor.Option) *Server {
	g := h.Group(shards, append([]executor.Option{executor.WithName("webkv")}, opts...)...)
	s := newServer(g, fnvHash)
	if err := s.Listen("tcp", fmt.Sprintf(":%d", simPort)); err != nil {
		panic(err)
	}
	return s
}

// edit is a PUT, or a DELETE of a key that is there: a request that
// makes a line for the watchers when it is made.
type edit struct {
	line       string // "put KEY" or "del KEY"
	inc        int    // the incarnation of the server its connection reached
	start, end uint64 // the history's clock when it was sent, when answered (never: no answer)
}

func (c *edit) made() bool { return c.end != never }

// incKey is a key on one incarnation of the server.
type incKey struct {
	inc int
	key string
}

// history is what the clients and watchers did, on a logical clock that
// ticks at every request sent and every answer read: all of them run on
// the test's goroutine, so its order is the order things happened in.
type history struct {
	w       *sim.World
	now     uint64
	inc     int                // the server's incarnation: its program's starts, less one
	keys    map[incKey][]*edit // in the order the client that owns the key sent them
	changes []*edit
	watches []*watch
}

func newHistory(w *sim.World) *history {
	return &history{w: w, keys: map[incKey][]*edit{}}
}

func (h *history) tick() uint64 { h.now++; return h.now }

// add records c, sent now on a connection to incarnation inc.
func (h *history) add(c *edit, key string, inc int, at uint64) {
	c.inc, c.start, c.end = inc, at, never
	k := incKey{inc, key}
	h.keys[k] = append(h.keys[k], c)
	h.changes = append(h.changes, c)
}

// req is one request and what its answer must be.
type req struct {
	method, path, body string
	chunked, close     bool
	status             int
	want               *string                 // the body wanted, if set
	check              func(r *response) error // more checks
	ch                 *edit                   // the change it makes, if any
	key                string                  // the key of ch
}

func (r *req) encode(b []byte) []byte {
	b = append(b, r.method+" "+r.path+" HTTP/1.1\r\nHost: webkv\r\n"...)
	if r.close {
		b = append(b, "Connection: close\r\n"...)
	}
	switch {
	case r.chunked:
		b = append(b, "Transfer-Encoding: chunked\r\n\r\n"...)
		for s := r.body; len(s) > 0; {
			n := min(len(s), 1+len(s)/3)
			b = append(b, strconv.FormatInt(int64(n), 16)+"\r\n"+s[:n]+"\r\n"...)
			s = s[n:]
		}
		b = append(b, "0\r\n\r\n"...)
	case r.method == "PUT" || r.method == "POST":
		b = append(b, "Content-Length: "+strconv.Itoa(len(r.body))+"\r\n\r\n"+r.body...)
	default:
		b = append(b, "\r\n"...)
	}
	return b
}

func (r *req) verify(resp *response) error {
	if resp.status != r.status {
		return fmt.Errorf("status %d, want %d (body %q)", resp.status, r.status, resp.body)
	}
	if r.want != nil && string(resp.body) != *r.want {
		return fmt.Errorf("body %q, want %q", resp.body, *r.want)
	}
	if r.check != nil {
		return r.check(resp)
	}
	return nil
}

// response is a parsed response.
type response struct {
	status int
	header map[string]string // lower-case names
	body   []byte
}

// parseResponse parses the response at the front of b to a request of
// method; n is 0 while b holds only part of it.
func parseResponse(b []byte, method string) (r *response, n int, err error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > 16<<10 {
			return nil, 0, fmt.Errorf("no end of head in %d bytes", len(b))
		}
		return nil, 0, nil
	}
	lines := strings.Split(string(b[:end]), "\r\n")
	proto, rest, _ := strings.Cut(lines[0], " ")
	code, _, _ := strings.Cut(rest, " ")
	r = &response{header: map[string]string{}}
	if r.status, err = strconv.Atoi(code); proto != "HTTP/1.1" || err != nil {
		return nil, 0, fmt.Errorf("status line %q", lines[0])
	}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, 0, fmt.Errorf("header line %q", l)
		}
		r.header[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	off := end + 4
	if method == "HEAD" || r.status == 204 || r.status == 304 || r.status/100 == 1 {
		return r, off, nil
	}
	if r.header["transfer-encoding"] == "chunked" {
		for {
			i := bytes.Index(b[off:], []byte("\r\n"))
			if i < 0 {
				return nil, 0, nil
			}
			size, err := strconv.ParseInt(string(b[off:off+i]), 16, 32)
			if err != nil {
				return nil, 0, fmt.Errorf("chunk size %q", b[off:off+i])
			}
			if len(b) < off+i+2+int(size)+2 {
				return nil, 0, nil
			}
			r.body = append(r.body, b[off+i+2:off+i+2+int(size)]...)
			off += i + 2 + int(size) + 2
			if size == 0 {
				return r, off, nil
			}
		}
	}
	cl, err := strconv.Atoi(r.header["content-length"])
	if err != nil {
		return nil, 0, fmt.Errorf("a %d without Content-Length or chunks: %q", r.status, b[:end])
	}
	if len(b) < off+cl {
		return nil, 0, nil
	}
	r.body = b[off : off+cl]
	return r, off + cl, nil
}

// dialWithin dials addr and gives up after d of the loop's time. (Not
// with a context: netio's simulated dial watches a context's cancel
// from a goroutine of its own, at a time the seed does not decide.)
func dialWithin(ctx context.Context, ex *executor.Executor, addr string, d time.Duration) (*netio.Conn, error) {
	p := future.NewPromise[*netio.Conn](ex)
	over := false
	t := ex.AfterFunc(d, func() {
		over = true
		p.Reject(errors.New("dial: no answer"))
	})
	netio.Dial(context.Background(), ex, "tcp", addr).OnComplete(func(c *netio.Conn, err error) {
		switch {
		case over:
			if c != nil {
				c.Close()
			}
		case err != nil:
			t.Stop()
			p.Reject(err)
		default:
			t.Stop()
			p.Resolve(c)
		}
	})
	return p.Future().Await(ctx)
}

// recvWithin receives with a read deadline d of the loop's time ahead.
func recvWithin(ctx context.Context, c *netio.Conn, d time.Duration) ([]byte, error) {
	if err := c.SetReadDeadline(c.Executor().Now().Add(d)); err != nil {
		return nil, err
	}
	return c.Recv().Await(ctx)
}

func sleep(ctx context.Context, ex *executor.Executor, d time.Duration) error {
	_, err := future.Sleep(ex, d).Await(ctx)
	return err
}

// closed reports whether err is the world's close: the run is over.
func closed(err error) bool { return errors.Is(err, executor.ErrClosed) }

// kvClient is an HTTP client of its own keys, on one keep-alive
// connection at a time: it knows their values exactly (no one else
// writes them), until a request goes unanswered; then its outcome is
// unknown, and the client moves on to keys of a new generation.
type kvClient struct {
	h    *history
	ex   *executor.Executor
	addr string
	id   int
	rng  *rand.Rand
	gen  int
	gone int               // the generations before it have no key: they were on an incarnation before
	inc  int               // the incarnation m models
	m    map[string]string // the values of the keys of gen
}

func (cl *kvClient) key() string { return fmt.Sprintf("c%d.g%d.k%d", cl.id, cl.gen, cl.rng.Intn(5)) }

func (cl *kvClient) value() string {
	n := cl.rng.Intn(40)
	if cl.rng.Intn(20) == 0 {
		n = 20000 + cl.rng.Intn(50000) // more than a piece, more than a window sometimes
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(cl.rng.Intn(26))
	}
	return string(b)
}

// draw draws a request and applies it to the model: the answer of the
// next depends on it.
func (cl *kvClient) draw() *req {
	rng, m := cl.rng, cl.m
	str := func(s string) *string { return &s }
	switch r := rng.Intn(40); {
	case r < 12:
		k, v := cl.key(), cl.value()
		m[k] = v
		return &req{method: "PUT", path: "/kv/" + k, body: v, chunked: rng.Intn(4) == 0, status: 204, ch: &edit{line: "put " + k}, key: k}
	case r < 22:
		k := cl.key()
		if v, ok := m[k]; ok {
			return &req{method: "GET", path: "/kv/" + k + "?q=1", status: 200, want: str(v), check: func(r *response) error {
				if ct := r.header["content-type"]; ct != "application/octet-stream" {
					return fmt.Errorf("Content-Type %q", ct)
				}
				return nil
			}}
		}
		return &req{method: "GET", path: "/kv/" + k, status: 404, want: str("404 page not found\n")}
	case r < 24:
		k := cl.key()
		v, ok := m[k]
		if !ok {
			return &req{method: "HEAD", path: "/kv/" + k, status: 404}
		}
		return &req{method: "HEAD", path: "/kv/" + k, status: 200, check: func(r *response) error {
			if r.header["content-length"] != strconv.Itoa(len(v)) {
				return fmt.Errorf("HEAD: Content-Length %q, want %d", r.header["content-length"], len(v))
			}
			return nil
		}}
	case r < 32:
		k := cl.key()
		if _, ok := m[k]; !ok {
			return &req{method: "DELETE", path: "/kv/" + k, status: 404, want: str("404 page not found\n")}
		}
		delete(m, k)
		return &req{method: "DELETE", path: "/kv/" + k, status: 204, ch: &edit{line: "del " + k}, key: k}
	case r < 34:
		v := cl.value()
		return &req{method: "POST", path: "/echo", body: v, chunked: rng.Intn(3) == 0, status: 200, want: str(v)}
	case r < 36:
		ms := strconv.Itoa(rng.Intn(30))
		return &req{method: "GET", path: "/slow/" + ms, status: 200, want: str("slept " + ms)}
	case r < 37:
		return &req{method: "PATCH", path: "/kv/" + cl.key(), status: 405, check: func(r *response) error {
			if r.header["allow"] != "DELETE, GET, HEAD, PUT" {
				return fmt.Errorf("405 with Allow %q", r.header["allow"])
			}
			return nil
		}}
	case r < 38:
		if cl.gone > 0 && rng.Intn(2) == 0 {
			k := fmt.Sprintf("c%d.g%d.k%d", cl.id, rng.Intn(cl.gone), rng.Intn(5))
			return &req{method: "GET", path: "/kv/" + k, status: 404, want: str("404 page not found\n")}
		}
		return &req{method: "GET", path: "/kv/", status: 404}
	default:
		// The page lists the client's keys that are there, and no other
		// of this generation's.
		var there, gone []string
		for i := range 5 {
			k := fmt.Sprintf("c%d.g%d.k%d", cl.id, cl.gen, i)
			if _, ok := m[k]; ok {
				there = append(there, k)
			} else {
				gone = append(gone, k)
			}
		}
		return &req{method: "GET", path: "/", status: 200, check: func(r *response) error {
			for _, k := range there {
				if !bytes.Contains(r.body, []byte(`data-key="`+k+`"`)) {
					return fmt.Errorf("the page does not list %s: %s", k, r.body)
				}
			}
			for _, k := range gone {
				if bytes.Contains(r.body, []byte(`data-key="`+k+`"`)) {
					return fmt.Errorf("the page lists %s, deleted or never set", k)
				}
			}
			return nil
		}}
	}
}

// run runs rounds of requests, pipelined, on keep-alive connections, and
// checks every answer. It returns the first error.
func (cl *kvClient) run(ctx context.Context, rounds int) error {
	h, rng, ex := cl.h, cl.rng, cl.ex
	var c *netio.Conn
	var in []byte
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	lost := func() { // the connection failed: what was not answered is unknown
		c.Close()
		c, in = nil, nil
		cl.gen++
		cl.m = map[string]string{}
	}
	for round, failed := 0, 0; round < rounds; round++ {
		if c == nil {
			nc, err := dialWithin(ctx, ex, cl.addr, dialTimeout)
			if err != nil {
				if closed(err) {
					return nil
				}
				if failed++; failed > maxDials {
					return fmt.Errorf("client %d: %d dials failed, the last: %v", cl.id, failed, err)
				}
				if err := sleep(ctx, ex, time.Duration(10+rng.Intn(100))*time.Millisecond); err != nil {
					return nil
				}
				round--
				continue
			}
			c = nc
			if h.inc != cl.inc {
				// A new incarnation starts empty: the keys of every
				// generation so far are gone, whatever was unanswered.
				cl.inc, cl.m, cl.gone = h.inc, map[string]string{}, cl.gen+1
				cl.gen++
			}
		}
		inc := cl.inc
		n := 1 + rng.Intn(4)
		if rng.Intn(3) == 0 {
			n = 1
		}
		reqs := make([]*req, n)
		var out []byte
		for i := range reqs {
			reqs[i] = cl.draw()
			out = reqs[i].encode(out)
		}
		last := reqs[n-1]
		if rng.Intn(10) == 0 {
			last.close = true
			out = nil
			for _, r := range reqs {
				out = r.encode(out)
			}
		}
		at := h.tick()
		for _, r := range reqs {
			if r.ch != nil {
				h.add(r.ch, r.key, inc, at)
			}
		}
		h.w.Record('q', uint64(cl.id), at, out)
		if _, err := c.Write(out); err != nil {
			lost()
			continue
		}
		i := 0
		for i < len(reqs) {
			r := reqs[i]
			resp, k, err := parseResponse(in, r.method)
			if err != nil {
				return fmt.Errorf("client %d: %s %s: %v", cl.id, r.method, r.path, err)
			}
			if k == 0 {
				b, err := recvWithin(ctx, c, readTimeout)
				if err != nil {
					if closed(err) {
						return nil
					}
					break
				}
				in = append(in, b...)
				continue
			}
			in = in[k:]
			done := h.tick()
			h.w.Record('a', uint64(cl.id), done, nil)
			if err := r.verify(resp); err != nil {
				return fmt.Errorf("client %d (incarnation %d) %s %s: %v", cl.id, inc, r.method, r.path, err)
			}
			if r.ch != nil {
				r.ch.end = done
			}
			i++
		}
		switch {
		case i < len(reqs):
			lost()
		case last.close:
			// The server closes after it: nothing more comes.
			b, err := recvWithin(ctx, c, readTimeout)
			if closed(err) {
				return nil
			}
			if err == nil {
				return fmt.Errorf("client %d: %q after the answer to Connection: close", cl.id, b)
			}
			c.Close()
			c, in = nil, nil
		}
		if rng.Intn(3) == 0 {
			if err := sleep(ctx, ex, time.Duration(rng.Intn(30))*time.Millisecond); err != nil {
				return nil
			}
		}
	}
	return nil
}

// watch is one subscription of a watcher: one WebSocket on /ws/watch.
type watch struct {
	id      int
	inc     int
	sub, ok uint64 // the history's clock when the upgrade was sent, when its 101 was read
	end     uint64 // when the connection ended; never if it still ran at the check
	lines   []string
}

// watcher subscribes to /ws/watch, reads its lines and subscribes again
// whenever the connection ends, until the world closes.
func (h *history) watcher(ctx context.Context, ex *executor.Executor, addr string, id int, rng *rand.Rand) error {
	for {
		c, err := dialWithin(ctx, ex, addr, dialTimeout)
		if err == nil {
			err = h.watchOn(ctx, ex, c, id, rng)
			c.Close()
		}
		if closed(err) {
			return nil
		}
		var bad *badWatch
		if errors.As(err, &bad) {
			return err
		}
		if err := sleep(ctx, ex, time.Duration(10+rng.Intn(100))*time.Millisecond); err != nil {
			return nil
		}
	}
}

// badWatch is a watcher's protocol error: what the server must never do.
type badWatch struct{ err error }

func (e *badWatch) Error() string { return e.err.Error() }

// watchOn upgrades c and reads its lines until it ends; it returns why.
func (h *history) watchOn(ctx context.Context, ex *executor.Executor, c *netio.Conn, id int, rng *rand.Rand) error {
	var kb [16]byte
	rng.Read(kb[:])
	key := base64.StdEncoding.EncodeToString(kb[:])
	wt := &watch{id: id, inc: h.inc, sub: h.tick(), end: never}
	if _, err := c.WriteString("GET /ws/watch HTTP/1.1\r\nHost: webkv\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n\r\n"); err != nil {
		return err
	}
	var in []byte
	for {
		resp, n, err := parseResponse(in, "GET")
		if err != nil {
			return &badWatch{fmt.Errorf("watcher %d: upgrade: %v", id, err)}
		}
		if n > 0 {
			if resp.status != 101 || resp.header["sec-websocket-accept"] != websocket.AcceptKey(key) {
				return &badWatch{fmt.Errorf("watcher %d: upgrade answered %d %v", id, resp.status, resp.header)}
			}
			in = in[n:]
			break
		}
		b, err := recvWithin(ctx, c, readTimeout)
		if err != nil {
			return err
		}
		in = append(in, b...)
	}
	wt.ok = h.tick()
	h.watches = append(h.watches, wt)
	defer func() {
		if wt.end == never {
			wt.end = h.tick()
		}
	}()
	var mask [4]byte
	rng.Read(mask[:])
	send := func(op byte, p []byte) {
		c.Write(wsclient.AppendFrame(nil, wsclient.Frame{Fin: true, Op: op, Payload: p}, true, mask))
	}
	over := false
	defer func() { over = true }()
	var ping func()
	ping = func() {
		if !over {
			send(wsclient.OpPing, []byte("p"))
			ex.AfterFunc(pingEvery, ping)
		}
	}
	ex.AfterFunc(pingEvery, ping)
	var msg []byte
	for {
		fin, op, p, n, err := parseFrame(in)
		if err != nil {
			return &badWatch{fmt.Errorf("watcher %d: %v", id, err)}
		}
		if n == 0 {
			b, err := recvWithin(ctx, c, silence)
			if err != nil {
				return err
			}
			in = append(in, b...)
			continue
		}
		in = in[n:]
		switch op {
		case wsclient.OpText, wsclient.OpContinuation:
			msg = append(msg, p...)
			if fin {
				wt.lines = append(wt.lines, string(msg))
				h.w.Record('w', uint64(id), uint64(len(wt.lines)), msg)
				msg = nil
			}
		case wsclient.OpPing:
			send(wsclient.OpPong, p)
		case wsclient.OpPong:
		case wsclient.OpClose:
			send(wsclient.OpClose, p)
			return errors.New("closed by the server")
		default:
			return &badWatch{fmt.Errorf("watcher %d: frame with opcode %d", id, op)}
		}
	}
}

// parseFrame parses the server's frame at the front of b; n is 0 while b
// holds only part of it.
func parseFrame(b []byte) (fin bool, op byte, p []byte, n int, err error) {
	if len(b) < 2 {
		return false, 0, nil, 0, nil
	}
	if b[0]&0x70 != 0 || b[1]&0x80 != 0 {
		return false, 0, nil, 0, fmt.Errorf("frame head % x: reserved bits or a mask", b[:2])
	}
	fin, op = b[0]&0x80 != 0, b[0]&0x0f
	size, off := uint64(b[1]&0x7f), 2
	switch size {
	case 126:
		if len(b) < 4 {
			return false, 0, nil, 0, nil
		}
		size, off = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return false, 0, nil, 0, nil
		}
		size, off = binary.BigEndian.Uint64(b[2:]), 10
	}
	if size > MaxValue {
		return false, 0, nil, 0, fmt.Errorf("frame of %d bytes", size)
	}
	if uint64(len(b)-off) < size {
		return false, 0, nil, 0, nil
	}
	return fin, op, b[off : off+int(size)], off + int(size), nil
}

// checkWatch checks the lines of one subscription against the history:
//   - each line is a change of its incarnation, not one answered before
//     the upgrade was sent, nothing twice: the lines of one key are the
//     changes of that key in the order they were made, one after the
//     other, with none skipped that started after the subscription was
//     answered;
//   - a change answered before another started comes before it;
//   - every change that started after the subscription was answered is
//     there: every one while the subscription still runs, and while its
//     connection ended (a reset, a crash) those answered before a change
//     whose line came had started, since its line was sent before.
func (h *history) checkWatch(wt *watch) error {
	byKey := map[string][]int{}
	var keys []string
	for p, l := range wt.lines {
		kind, key, _ := strings.Cut(l, " ")
		if kind != "put" && kind != "del" {
			return fmt.Errorf("line %d %q: not a change", p, l)
		}
		if byKey[key] == nil {
			keys = append(keys, key)
		}
		byKey[key] = append(byKey[key], p)
	}
	// Each line's change, as each way of matching that fits has it.
	minStart := make([]uint64, len(wt.lines))
	maxEnd := make([]uint64, len(wt.lines))
	seen := map[*edit]bool{}
	for _, key := range keys {
		ps := byKey[key]
		cs := h.keys[incKey{wt.inc, key}]
		var fits []int
		for j := 0; j+len(ps) <= len(cs); j++ {
			if h.fits(wt, ps, cs, j) {
				fits = append(fits, j)
			}
		}
		if len(fits) == 0 {
			var got, made []string
			for _, p := range ps {
				got = append(got, fmt.Sprintf("%d:%q", p, wt.lines[p]))
			}
			for _, c := range cs {
				made = append(made, fmt.Sprintf("%q[%d,%s]", c.line, c.start, endString(c.end)))
			}
			return fmt.Errorf("the lines of %s, %s, are not the changes made on incarnation %d after the upgrade was sent (%d) and answered (%d), one after the other: %s",
				key, strings.Join(got, " "), wt.inc, wt.sub, wt.ok, strings.Join(made, " "))
		}
		for t, p := range ps {
			minStart[p], maxEnd[p] = math.MaxUint64, 0
			for _, j := range fits {
				c := cs[j+t]
				minStart[p] = min(minStart[p], c.start)
				maxEnd[p] = max(maxEnd[p], c.end)
				seen[c] = true
			}
		}
	}
	// A change answered before another started comes first.
	var last uint64
	lastAt := -1
	for p := range wt.lines {
		if maxEnd[p] < last {
			return fmt.Errorf("line %d %q (answered at %d) after line %d %q (sent at %d)", p, wt.lines[p], maxEnd[p], lastAt, wt.lines[lastAt], last)
		}
		if minStart[p] > last {
			last, lastAt = minStart[p], p
		}
	}
	// Nothing missing.
	for _, c := range h.changes {
		if c.inc != wt.inc || !c.made() || c.start <= wt.ok || seen[c] {
			continue
		}
		if wt.end == never {
			return fmt.Errorf("%q (sent at %d, answered at %d) missing, subscribed at %d and still", c.line, c.start, c.end, wt.ok)
		}
		if c.end < last {
			return fmt.Errorf("%q (sent at %d, answered at %d) missing before line %d %q (sent at %d); subscribed at %d, ended at %d",
				c.line, c.start, c.end, lastAt, wt.lines[lastAt], last, wt.ok, wt.end)
		}
	}
	return nil
}

// fits reports whether the lines at ps can be the changes cs[j:j+len(ps)].
func (h *history) fits(wt *watch, ps []int, cs []*edit, j int) bool {
	for t, p := range ps {
		if c := cs[j+t]; c.line != wt.lines[p] || c.end < wt.sub {
			return false
		}
	}
	// None made after the subscription is skipped: before the lines, or,
	// while it still runs, after them.
	for i, c := range cs {
		if (i < j || i >= j+len(ps) && wt.end == never) && c.made() && c.start > wt.ok {
			return false
		}
	}
	return true
}

func endString(e uint64) string {
	if e == never {
		return "-"
	}
	return strconv.FormatUint(e, 10)
}

// simOptions are a run's choices beyond the seed's.
type simOptions struct {
	crash bool // crash the server's host once and restart it
}

// simWebKV is one seeded run: the server on a host with 2 to 4 shards;
// HTTP clients on three hosts, one of them cut from the server now and
// then, one whose connections are reset; watchers on two hosts; the
// server's shards stalled now and then. It returns the first error.
func simWebKV(t *testing.T, w *sim.World, o simOptions) error {
	rng := w.Rand()
	f := w.Faults()
	f.ShortWrite = 0.1
	f.SlowConnect, f.SlowDelay = 0.1, 20*time.Millisecond
	f.MaxDelay = time.Duration(1+rng.Intn(2000)) * time.Microsecond
	f.Window = 4<<10 + rng.Intn(64<<10)

	h := newHistory(w)
	srvH := w.Host("webkv")
	shards := 2 + rng.Intn(3)
	var srv *Server
	starts := 0
	srvH.Start(func(sh *sim.Host) { // again at every restart: memory only, it starts empty
		h.inc, starts = starts, starts+1
		srv = simServer(sh, shards)
	})
	addr := srvH.Addr(simPort)

	nearH, farH, flakyH, watchH := w.Host("near"), w.Host("far"), w.Host("flaky"), w.Host("watch")
	near := nearH.Executor(executor.WithName("near"))
	far := farH.Executor(executor.WithName("far"))
	flaky := flakyH.Executor(executor.WithName("flaky"))
	wx := watchH.Executor(executor.WithName("watch"))

	var errs []error
	done, clients := 0, 0
	spawn := func(ex *executor.Executor, count bool, fn func(ctx context.Context) error) {
		if count {
			clients++
		}
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			if count {
				defer func() { done++ }()
			}
			if err := fn(ctx); err != nil {
				errs = append(errs, err)
			}
			return struct{}{}, nil
		})
	}
	const rounds = 25
	id := 0
	newClient := func(ex *executor.Executor, rounds int) {
		id++
		cl := &kvClient{h: h, ex: ex, addr: addr, id: id, rng: rand.New(rand.NewSource(rng.Int63())), m: map[string]string{}}
		spawn(ex, true, func(ctx context.Context) error { return cl.run(ctx, rounds) })
	}
	newWatcher := func(ex *executor.Executor) {
		id++
		i, r := id, rand.New(rand.NewSource(rng.Int63()))
		spawn(ex, false, func(ctx context.Context) error { return h.watcher(ctx, ex, addr, i, r) })
	}
	for range 2 + rng.Intn(3) {
		newWatcher(wx)
	}
	newWatcher(far)
	newWatcher(flaky)
	for range 3 + rng.Intn(3) {
		newClient(near, rounds)
	}
	newClient(far, rounds)
	newClient(flaky, rounds)

	// The far host is cut from the server now and then, for up to twice
	// a watcher's patience: its requests wait, none is lost.
	cuts := 0
	var cut func()
	cut = func() {
		if cuts == 4 || done == clients {
			return
		}
		cuts++
		w.Partition(farH, srvH)
		far.AfterFunc(time.Duration(1+rng.Intn(int(2*silence/time.Millisecond)))*time.Millisecond, func() {
			w.Heal(farH, srvH)
			far.AfterFunc(time.Duration(10+rng.Intn(100))*time.Millisecond, cut)
		})
	}
	_ = far.Submit(func() { far.AfterFunc(time.Duration(rng.Intn(50))*time.Millisecond, cut) })
	// The flaky host's connections are reset under it now and then.
	resets := 0
	var reset func()
	reset = func() {
		if resets == 3 || done == clients {
			return
		}
		resets++
		w.Reset(flakyH)
		flaky.AfterFunc(time.Duration(20+rng.Intn(200))*time.Millisecond, reset)
	}
	_ = flaky.Submit(func() { flaky.AfterFunc(time.Duration(20+rng.Intn(200))*time.Millisecond, reset) })
	// A server shard stalls for a while now and then: what is queued
	// for it waits, and what comes in meanwhile races with it.
	var stall func()
	stall = func() {
		if done == clients {
			return
		}
		if !srvH.Down() {
			w.Stall(srv.g.Shard(rng.Intn(shards)), time.Duration(1+rng.Intn(20))*time.Millisecond)
		}
		near.AfterFunc(time.Duration(5+rng.Intn(60))*time.Millisecond, stall)
	}
	_ = near.Submit(func() { near.AfterFunc(time.Duration(rng.Intn(30))*time.Millisecond, stall) })

	// The crash: at a step the seed picks, and the restart some time of
	// the seed's later.
	crashed, restarted := false, false
	var crashAt, down time.Duration
	var crashStep uint64
	if o.crash {
		crashStep = uint64(200 + rng.Intn(2600)) // a run takes 3,000 steps or more
		down = time.Duration(1+rng.Intn(1500)) * time.Millisecond
		w.AtStep(crashStep, func() {
			w.Crash(srvH)
			crashed, crashAt = true, w.Now()
			w.Record('X', crashStep, uint64(crashAt), nil)
		})
	}
	restart := func() {
		if crashed && !restarted && w.Now() >= crashAt+down {
			w.Restart(srvH)
			restarted = true
		}
	}
	if !w.RunUntil(func() bool { restart(); return done == clients || len(errs) > 0 }, 5*time.Minute) {
		return fmt.Errorf("%d of %d clients done after %v of simulated time (%d steps)", done, clients, w.Now(), w.Steps())
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if o.crash && !crashed {
		return fmt.Errorf("no crash: the clients were done before step %d (%d steps)", crashStep, w.Steps())
	}
	if crashed && !restarted {
		w.Restart(srvH)
		restarted = true
	}
	// The watchers catch up: every line sent arrives.
	w.Heal(farH, srvH)
	w.RunFor(2 * silence)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	made := 0
	for _, c := range h.changes {
		if c.made() {
			made++
		}
	}
	if made == 0 {
		return errors.New("no change was made: the run checks nothing")
	}
	lines, ended := 0, 0
	for _, wt := range h.watches {
		lines += len(wt.lines)
		if wt.end != never {
			ended++
		}
	}
	t.Logf("seed %d: %d shards, %d changes (%d made), %d subscriptions (%d ended), %d lines, %v, %d steps; crash at step %d (%v) for %v",
		w.Seed(), shards, len(h.changes), made, len(h.watches), ended, lines, w.Now(), w.Steps(), crashStep, crashAt, down)
	if o.crash {
		after := 0
		for _, c := range h.changes {
			if c.inc == h.inc && c.made() {
				after++
			}
		}
		if h.inc != 1 || after == 0 {
			return fmt.Errorf("incarnation %d with %d changes made after the restart: the restart is not checked", h.inc, after)
		}
	}
	for _, wt := range h.watches {
		if wt.inc < h.inc && wt.end == never {
			return fmt.Errorf("watcher %d: its subscription of incarnation %d still runs after the crash", wt.id, wt.inc)
		}
		if err := h.checkWatch(wt); err != nil {
			return fmt.Errorf("watcher %d (incarnation %d, subscribed %d-%d, ended %s): %v", wt.id, wt.inc, wt.sub, wt.ok, endString(wt.end), err)
		}
	}
	return nil
}

// TestSimWebKV runs the server under the simulation for the default
// seeds, or those -sim.seed and -sim.runs name.
func TestSimWebKV(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		if err := simWebKV(t, w, simOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSimWebKVReplays runs seeds twice: one seed, one trace, one
// history.
func TestSimWebKVReplays(t *testing.T) {
	for _, o := range []simOptions{{}, {crash: true}} {
		for seed := int64(1); seed <= 3; seed++ {
			var traces [2]string
			for i := range traces {
				w := sim.New(seed)
				if err := simWebKV(t, w, o); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				traces[i] = w.TraceHex()
				w.Close()
			}
			if traces[0] != traces[1] {
				t.Fatalf("seed %d (%+v): traces %s and %s", seed, o, traces[0], traces[1])
			}
		}
	}
}

// TestSimPlantedBugs plants each bug and shows that the simulation finds
// it within maxSeeds seeds, and that the seed that found it fails again,
// with the same trace and error, on every replay.
func TestSimPlantedBugs(t *testing.T) {
	const maxSeeds, replays = 200, 10
	for _, bug := range []struct {
		name string
		on   *bool
		o    simOptions
	}{
		{"answered-before-announced", &plantedBugs.answerFirst, simOptions{}},
		{"last-shard-untold", &plantedBugs.lastUntold, simOptions{}},
		{"answered-before-announced, crashing", &plantedBugs.answerFirst, simOptions{crash: true}},
	} {
		t.Run(bug.name, func(t *testing.T) {
			*bug.on = true
			defer func() { *bug.on = false }()
			run := func(seed int64) (string, error) {
				w := sim.New(seed)
				defer w.Close()
				err := simWebKV(t, w, bug.o)
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
			t.Logf("found at seed %d (trace %s): %v", found, trace, first)
			for i := range replays {
				tr, err := run(found)
				if err == nil || tr != trace || err.Error() != first.Error() {
					t.Fatalf("replay %d of seed %d: trace %s, error %v; want trace %s and the same failure", i, found, tr, err, trace)
				}
			}
		})
	}
}

// TestCheckWatch: the watchers' oracle accepts what the server may send
// and refuses the rest.
func TestCheckWatch(t *testing.T) {
	// The history: changes on incarnation 0 as [start, end] on the
	// history's clock (end 0: never answered).
	type ch struct {
		line       string
		start, end uint64
	}
	hist := []ch{
		{"put a", 1, 3},
		{"put b", 2, 4},
		{"put a", 5, 8},   // after the first put a
		{"del b", 6, 9},   // after put b
		{"put c", 10, 12}, // after all of the above were answered
		{"put d", 11, 0},  // unknown
		{"put e", 13, 0},  // unknown
	}
	alive, ended := uint64(never), uint64(20)
	cases := []struct {
		name    string
		sub, ok uint64
		end     uint64
		lines   []string
		bad     string // the error's start; "" when fine
	}{
		{"all, in order", 0, 0, alive, []string{"put a", "put b", "put a", "del b", "put c"}, ""},
		{"concurrent ones either way", 0, 0, alive, []string{"put b", "put a", "del b", "put a", "put c"}, ""},
		{"with the unknown", 0, 0, alive, []string{"put a", "put b", "put a", "del b", "put d", "put c", "put e"}, ""},
		{"subscribed late", 7, 7, alive, []string{"put c"}, ""},
		{"subscribed late, with what overlapped", 7, 7, alive, []string{"del b", "put c"}, ""},
		{"ended: a prefix", 0, 0, ended, []string{"put a", "put b"}, ""},
		{"ended: nothing", 0, 0, ended, nil, ""},
		{"invented", 0, 0, alive, []string{"put a", "put b", "put a", "del b", "put c", "put z"}, "the lines of z"},
		{"not a change", 0, 0, alive, []string{"hello"}, `line 0 "hello": not a change`},
		{"twice", 0, 0, alive, []string{"put a", "put b", "put a", "del b", "put c", "put c"}, "the lines of c"},
		{"a key's changes out of order", 0, 0, alive, []string{"put a", "del b", "put b", "put a", "put c"}, "the lines of b"},
		{"an answered change after one sent later", 0, 0, alive, []string{"put b", "del b", "put a", "put a", "put c"}, "line 2"},
		{"answered before the other was sent, seen after", 0, 0, alive, []string{"put c", "put a", "put b", "put a", "del b"}, "line 1"},
		{"missing while subscribed", 0, 0, alive, []string{"put a", "put b", "put a", "del b"}, `"put c"`},
		{"missing before a line that came", 0, 0, ended, []string{"put a", "put c"}, `"put b"`},
		{"skipped within a key", 0, 0, alive, []string{"put b", "put a", "del b", "put c"}, "the lines of a"},
		{"answered before the upgrade was sent", 10, 10, alive, []string{"put a", "put c"}, "the lines of a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory(nil)
			for _, c := range hist {
				e := &edit{line: c.line}
				_, key, _ := strings.Cut(c.line, " ")
				h.add(e, key, 0, c.start)
				if c.end != 0 {
					e.end = c.end
				}
			}
			err := h.checkWatch(&watch{sub: tc.sub, ok: tc.ok, end: tc.end, lines: tc.lines})
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.bad != "" && err == nil:
				t.Fatalf("accepted, want an error starting %q", tc.bad)
			case tc.bad != "" && !strings.HasPrefix(err.Error(), tc.bad):
				t.Fatalf("error %q, want one starting %q", err, tc.bad)
			}
		})
	}
}

// TestSimCrash crashes the server's host at a step the seed picks and
// restarts it: the store is in memory only, so the new incarnation starts
// empty (every key of before is gone); requests in flight at the crash
// have unknown outcomes; the watchers of before see their connection end
// (a reset, or silence past their deadline) and subscribe again; those of
// the new incarnation see every change made after they subscribed, in
// order.
func TestSimCrash(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		if err := simWebKV(t, w, simOptions{crash: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSimCloseMidRequest closes the server's shards while requests wait
// on calls to other shards: the calls' callbacks
// then run off the closed loops, and must not touch the responses,
// which went with the loops (no panic on any shard).
func TestSimCloseMidRequest(t *testing.T) {
	sim.Check(t, 5, func(t *testing.T, w *sim.World) {
		var panics []any
		srvH, cliH := w.Host("webkv"), w.Host("client")
		srv := simServer(srvH, 2, executor.WithPanicHandler(func(v any) { panics = append(panics, v) }))
		cx := cliH.Executor(executor.WithName("client"))
		const conns = 8
		answered := 0
		for i := range conns {
			future.Spawn(cx, func(ctx context.Context) (struct{}, error) {
				c, err := netio.Dial(context.Background(), cx, "tcp", srvH.Addr(simPort)).Await(ctx)
				if err != nil {
					if !closed(err) {
						t.Errorf("dial: %v", err)
					}
					return struct{}{}, nil
				}
				defer c.Close()
				var out []byte
				for k := range 4 { // keys on both shards, owned by the other one for some
					out = append(out, fmt.Sprintf("PUT /kv/k%d.%d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv", i, k)...)
					out = append(out, fmt.Sprintf("GET /kv/k%d.%d HTTP/1.1\r\nHost: x\r\n\r\n", i, k)...)
				}
				out = append(out, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"...)
				c.Write(out)
				if _, err := c.Recv().Await(ctx); err == nil {
					answered++
				}
				return struct{}{}, nil
			})
		}
		// Once a first answer came, a shard stalls, and the world closes
		// a while later: the other's calls to it wait.
		if !w.RunUntil(func() bool { return answered > 0 }, time.Minute) {
			t.Fatal("no answer")
		}
		w.Stall(srv.g.Shard(1), time.Hour)
		w.RunFor(10 * time.Millisecond)
		w.Close()
		if len(panics) > 0 {
			t.Fatalf("%d panics on the shards at the close, the first: %v", len(panics), panics[0])
		}
	})
}
