package main

// The server: shards, listeners, connections and the way a connection's
// requests reach the shards that own their keys.
//
// A connection belongs to the shard whose listener accepted it, and all of
// its state (the client) is touched only by that shard's loop. Its input
// is handled one receive at a time, a batch:
//
//  1. every complete request in the bytes received is parsed (the
//     arguments are slices of the receive buffer: no copy);
//  2. each request is split into units: a unit is a command (or one key's
//     part of MGET, MSET, DEL, EXISTS, or one shard's part of DBSIZE,
//     FLUSHALL, INFO) for the shard that owns its key. Units for the
//     connection's own shard run at once; units for other shards are
//     gathered into one batch per shard;
//  3. each batch goes to its shard in one cross-shard call
//     (shard.InvokeWith), which runs its units in order on that shard's
//     db and carries their replies back;
//  4. once every batch is back, the replies are put together in request
//     order into one buffer and written at once: the replies of one
//     receive leave in one write;
//  5. only then is the next receive asked for, so the receive buffer (and
//     the kept tail of a request that is still arriving) stays valid, and
//     untouched, while other shards read the arguments.
//
// So replies keep the order of the requests whatever shard answered them,
// the commands on one key run in the order they were sent (each key has
// one owner and batches to a shard run in order), and a command whose keys
// are all local never leaves its shard. Commands over several shards
// (MSET, DEL of keys on two shards) are not atomic across shards.
//
// Invariants: c.waiting counts the batches in flight; while it is not
// zero the client reads nothing and its batches, argv and buffers belong to
// the shards running them; c.pend holds the unparsed tail of the input
// (a request still arriving), which the parser's offsets refer to.

import (
	"context"
	"hash/maphash"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// Config holds the server's limits and settings. The zero value of a
// field means its default.
type Config struct {
	// Shards is the number of shards; 0: runtime.GOMAXPROCS(0).
	Shards int
	// MaxBulk is the longest argument (Redis's proto-max-bulk-len);
	// default DefaultMaxBulk (512 MB).
	MaxBulk int64
	// MaxMultibulk is the largest argument count of one request; default
	// DefaultMaxMultibulk (Redis 7's limit, INT_MAX).
	MaxMultibulk int64
	// QueryBufferLimit bounds the bytes of a request that is still
	// arriving (Redis's client-query-buffer-limit); past it the
	// connection is closed. Default 1 GB.
	QueryBufferLimit int
	// OutputLimit bounds a connection's replies written but not yet read
	// by its peer (Redis's client-output-buffer-limit); past it the
	// connection is closed. Default 64 MB.
	OutputLimit int
	// ExpireInterval is how often each shard samples the keys with a time
	// to live (Redis: 10 times a second); default 100 ms.
	ExpireInterval time.Duration
	// Clock returns the time in Unix milliseconds; default the system
	// clock. Tests move it.
	Clock func() int64
	// KeyHash places keys on shards; default a maphash with a seed of
	// the process's. A simulation gives a fixed one, so that a seed
	// replays the same placement.
	KeyHash func(key []byte) uint64
}

func (c *Config) defaults() {
	if c.MaxBulk <= 0 {
		c.MaxBulk = DefaultMaxBulk
	}
	if c.MaxMultibulk <= 0 {
		c.MaxMultibulk = DefaultMaxMultibulk
	}
	if c.QueryBufferLimit <= 0 {
		c.QueryBufferLimit = 1 << 30
	}
	if c.OutputLimit <= 0 {
		c.OutputLimit = 64 << 20
	}
	if c.ExpireInterval <= 0 {
		c.ExpireInterval = 100 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = func() int64 { return time.Now().UnixMilli() }
	}
}

// Server is a Redis-compatible server over a shard group.
type Server struct {
	cfg   Config
	g     *shard.Group
	dbs   *shard.Sharded[db]
	seed  maphash.Seed
	ls    []*netio.Listener
	start time.Time
	port  int

	ids      atomic.Uint64
	live     atomic.Int64 // connections open
	draining atomic.Bool
	drained  chan struct{}
	once     sync.Once
}

// NewServer starts the shards.
func NewServer(cfg Config) *Server {
	s := newServer(cfg, shard.New(cfg.Shards, executor.WithName("redis")))
	s.g.Start()
	return s
}

// newServer makes a server over g, which the caller starts (or a
// simulation steps).
func newServer(cfg Config, g *shard.Group) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, seed: maphash.MakeSeed(), start: time.Now(), drained: make(chan struct{})}
	s.g = g
	s.dbs = shard.NewSharded(s.g, func(i int) *db {
		d := newDB(cfg.Clock)
		d.index, d.ex = i, s.g.Shard(i)
		var tick func()
		tick = func() {
			if d.stopped {
				return
			}
			d.expireCycle()
			d.timer = d.ex.AfterFunc(cfg.ExpireInterval, tick)
		}
		d.timer = d.ex.AfterFunc(cfg.ExpireInterval, tick)
		return d
	})
	return s
}

// Listen opens one listener per shard on address (SO_REUSEPORT) and
// serves the connections it accepts.
func (s *Server) Listen(network, address string) error {
	ls, err := netio.ListenGroup(s.g, network, address, netio.WithOutputLimit(s.cfg.OutputLimit))
	if err != nil {
		return err
	}
	s.ls = ls
	if ta, ok := ls[0].Addr().(*net.TCPAddr); ok {
		s.port = ta.Port
	}
	for i, l := range ls {
		netio.Serve(l, func(c *netio.Conn) { s.serve(i, c) })
	}
	return nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ls[0].Addr() }

// Shutdown stops accepting, lets every connection finish the requests it
// has received (idle ones are closed at once), then shuts the shards down.
// Past ctx, everything is closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, l := range s.ls {
		l.Close()
	}
	s.draining.Store(true)
	for i := range s.g.Len() {
		_ = s.g.Shard(i).Submit(func() {
			d := s.dbs.Local()
			d.stopped = true
			if d.timer != nil {
				d.timer.Stop()
			}
			for c := d.clients; c != nil; {
				next := c.next
				if c.idle {
					c.close()
				}
				c = next
			}
		})
	}
	if s.live.Load() == 0 {
		s.markDrained()
	}
	var err error
	select {
	case <-s.drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		err = s.g.Shutdown(ctx)
	}
	if err != nil {
		s.g.Close()
	}
	return err
}

// Close closes everything at once.
func (s *Server) Close() error {
	for _, l := range s.ls {
		l.Close()
	}
	return s.g.Close()
}

func (s *Server) markDrained() { s.once.Do(func() { close(s.drained) }) }

func (s *Server) owner(key []byte) int {
	if s.g.Len() == 1 {
		return 0
	}
	if s.cfg.KeyHash != nil {
		return s.g.Of(s.cfg.KeyHash(key))
	}
	return s.g.Of(maphash.Bytes(s.seed, key))
}

func (s *Server) configTable() [][2]string {
	return [][2]string{
		{"save", ""},
		{"appendonly", "no"},
		{"databases", "1"},
		{"maxmemory", "0"},
		{"proto-max-bulk-len", strconv.FormatInt(s.cfg.MaxBulk, 10)},
		{"client-query-buffer-limit", strconv.Itoa(s.cfg.QueryBufferLimit)},
		{"hz", strconv.Itoa(int(time.Second / s.cfg.ExpireInterval))},
	}
}

func purgeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// A unit is one command, or one part of one, for one shard's db.
type unit struct {
	run  runFunc
	argv [][]byte
}

type result struct {
	off, end int
	n        int64
}

// A batch is the units of one receive for one shard, and their replies.
type batch struct {
	units []unit
	res   []result
	out   []byte
}

func (b *batch) reset() {
	clear(b.units)
	b.units, b.res, b.out = b.units[:0], b.res[:0], b.out[:0]
}

// runBatch runs a batch on the shard that owns its keys.
func runBatch(d *db, b *batch) (*batch, error) {
	d.remote++
	for i, u := range b.units {
		off := len(b.out)
		var n int64
		b.out, n = u.run(d, u.argv, b.out)
		b.res[i] = result{off, len(b.out), n}
	}
	return b, nil
}

// A ref names a unit: its shard's batch and its index there.
type ref struct{ shard, i int32 }

// A slot is one request's reply: how its units' replies combine.
type slot struct {
	comb     combine
	first, n int32 // c.refs[first:first+n]
	argv     [][]byte
}

// client is a connection's state, owned by its shard's loop. An idle
// connection that has sent nothing has no work yet: it costs this struct
// and what netio keeps for it.
type client struct {
	srv     *Server
	conn    *netio.Conn
	d       *db // the connection's shard
	id      uint64
	name    string
	quit    bool // close once the batch's replies are written
	idle    bool // waiting for input
	closed  bool
	onReady func()  // reads on, once netio says input may have come (Wake)
	prev    *client // the shard's list of connections
	next    *client
	*work   // made with the first bytes received
}

// work is what a connection needs to handle its input, kept from one
// receive to the next.
type work struct {
	p       parser
	pend    []byte // the unparsed tail of the input
	buf     []byte // the input of the batch (pend, or the receive buffer)
	argv    [][]byte
	slots   []slot
	refs    []ref
	batches []*batch // by shard; batches[c.d.index] is the local one
	used    []bool
	waiting int
	out     []byte
	onDone  []func(*batch, error)
}

func (s *Server) serve(i int, conn *netio.Conn) {
	d := s.dbs.Local()
	if s.draining.Load() {
		conn.Close()
		return
	}
	s.live.Add(1)
	d.conns++
	d.total++
	c := &client{srv: s, conn: conn, d: d, id: s.ids.Add(1)}
	c.onReady = c.recv
	c.next = d.clients
	if c.next != nil {
		c.next.prev = c
	}
	d.clients = c
	c.recv()
}

// setup makes the batches of a connection that has sent its first bytes:
// an idle connection costs none of this.
func (c *client) setup() {
	n := c.srv.g.Len()
	c.work = &work{p: newParser(c.srv.cfg.MaxBulk, c.srv.cfg.MaxMultibulk)}
	c.batches = make([]*batch, n)
	c.used = make([]bool, n)
	c.onDone = make([]func(*batch, error), n)
	for j := range n {
		c.batches[j] = &batch{}
		c.onDone[j] = func(_ *batch, err error) { c.batchDone(err) }
	}
}

// maxRounds bounds how many receives in a row one connection handles
// before it lets the loop's other work run.
const maxRounds = 16

// recv reads and handles the connection's input for as long as it is
// there and its batches finish at once (all their keys on this shard),
// then waits: for netio's Wake when nothing is readable, for the other
// shards when a batch waits on them. It reads with PollRecv, so waiting
// for input costs no future.
func (c *client) recv() {
	for range maxRounds {
		if c.closed {
			return
		}
		if c.srv.draining.Load() {
			c.close() // shutting down: no new requests
			return
		}
		c.idle = true
		data, ok, err := c.conn.PollRecv(c)
		if !ok && err == nil {
			return // Wake comes when input may have arrived
		}
		c.idle = false
		if !c.received(data, err) {
			return
		}
	}
	c.d.ex.Post(c.onReady) // let the others have the loop
}

// Wake is netio's signal that input may have arrived (executor.Waker): it
// runs recv as a task of its own, outside netio's call.
func (c *client) Wake() {
	if plantedBugs.lostWake && c.work != nil && len(c.pend) > 0 {
		return // planted: a wake-up for a connection with a partial request is lost
	}
	c.d.ex.Post(c.onReady)
}

// plantedBugs are bugs a test plants to show that the simulation finds
// them (sim_test.go); nothing else sets them.
var plantedBugs struct {
	localFirst bool // finish writes the replies made on the connection's shard before the others
	lostWake   bool // Wake drops the wake-up of a connection holding a partial request
}

func (c *client) close() {
	if c.closed {
		return
	}
	c.closed = true
	c.conn.Close()
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		c.d.clients = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	c.d.conns--
	if c.srv.live.Add(-1) == 0 && c.srv.draining.Load() {
		c.srv.markDrained()
	}
}

// received handles one receive; it reports whether its batch is done and
// the connection can read on.
func (c *client) received(data []byte, err error) bool {
	if err != nil || c.closed {
		c.close()
		return false
	}
	if c.work == nil {
		c.setup()
	}
	if len(c.pend) > 0 {
		if len(c.pend)+len(data) > c.srv.cfg.QueryBufferLimit {
			c.close()
			return false
		}
		c.pend = append(c.pend, data...)
		c.buf = c.pend
	} else {
		c.buf = data
	}
	return c.process()
}

// process parses and dispatches every complete request of c.buf; it
// reports whether the batch is done (its replies written).
func (c *client) process() bool {
	argv := c.argv[:0]
	for !c.quit {
		n0 := len(argv)
		var ok bool
		var perr protoError
		argv, ok, perr = c.p.next(c.buf, argv)
		if perr != "" {
			c.replyLocal(appendError(nil, "ERR Protocol error: "+string(perr)))
			c.quit = true
			break
		}
		if !ok {
			break
		}
		if len(argv) > n0 {
			c.dispatch(argv[n0:len(argv):len(argv)])
		}
	}
	c.argv = argv
	if c.waiting == 0 {
		return c.finish()
	}
	for i, used := range c.used {
		if used && i != c.d.index {
			shard.InvokeWith(c.srv.dbs, i, c.batches[i], runBatch).OnComplete(c.onDone[i])
		}
	}
	return false
}

func (c *client) batchDone(err error) {
	c.waiting--
	if err != nil {
		c.quit = true
	}
	if c.waiting == 0 && c.finish() {
		c.recv()
	}
}

// replyLocal adds a request whose reply the connection made itself.
func (c *client) replyLocal(reply []byte) {
	b := c.batches[c.d.index]
	off := len(b.out)
	b.out = append(b.out, reply...)
	c.addSlot(combOne, nil)
	c.slots[len(c.slots)-1].n = 1
	c.refs = append(c.refs, ref{int32(c.d.index), int32(len(b.res))})
	b.units = append(b.units, unit{})
	b.res = append(b.res, result{off, len(b.out), 0})
}

func (c *client) addSlot(comb combine, argv [][]byte) {
	c.slots = append(c.slots, slot{comb: comb, first: int32(len(c.refs)), argv: argv})
}

// unit sends u to shard to: it runs at once if to is the connection's
// shard, else joins that shard's batch.
func (c *client) unit(to int, u unit) {
	b := c.batches[to]
	c.refs = append(c.refs, ref{int32(to), int32(len(b.res))})
	c.slots[len(c.slots)-1].n++
	if to == c.d.index {
		off := len(b.out)
		var n int64
		b.out, n = u.run(c.d, u.argv, b.out)
		b.units = append(b.units, unit{})
		b.res = append(b.res, result{off, len(b.out), n})
		return
	}
	if !c.used[to] {
		c.used[to] = true
		c.waiting++
	}
	b.units = append(b.units, u)
	b.res = append(b.res, result{})
}

func (c *client) dispatch(argv [][]byte) {
	c.d.cmds++
	cmd := lookup(argv[0])
	if cmd == nil {
		c.replyLocal(appendError(nil, errUnknown(argv)))
		return
	}
	if !arityOK(cmd.arity, len(argv)) {
		c.replyLocal(appendError(nil, errArity(cmd.name)))
		return
	}
	if cmd.validate != nil {
		if e := cmd.validate(argv); e != "" {
			c.replyLocal(appendError(nil, e))
			return
		}
	}
	switch cmd.route {
	case routeConn:
		b := c.batches[c.d.index]
		off := len(b.out)
		b.out = cmd.conn(c, argv, b.out)
		c.addSlot(combOne, nil)
		c.refs = append(c.refs, ref{int32(c.d.index), int32(len(b.res))})
		c.slots[len(c.slots)-1].n = 1
		b.units = append(b.units, unit{})
		b.res = append(b.res, result{off, len(b.out), 0})
	case routeKey:
		c.addSlot(combOne, nil)
		c.unit(c.srv.owner(argv[1]), unit{cmd.run, argv})
	case routeKeys:
		c.addSlot(cmd.comb, nil)
		for i := 1; i < len(argv); i++ {
			c.unit(c.srv.owner(argv[i]), unit{cmd.run, argv[i : i+1 : i+1]})
		}
	case routePairs:
		c.addSlot(cmd.comb, nil)
		for i := 1; i+1 < len(argv); i += 2 {
			c.unit(c.srv.owner(argv[i]), unit{cmd.run, argv[i : i+2 : i+2]})
		}
	case routeAll:
		c.addSlot(cmd.comb, argv)
		for i := range c.srv.g.Len() {
			c.unit(i, unit{cmd.run, argv})
		}
	}
}

// finish writes the batch's replies in request order and keeps the
// unparsed tail; it reports whether the connection reads on (it is not
// closing).
func (c *client) finish() bool {
	out := c.out[:0]
	slots := c.slots
	if plantedBugs.localFirst {
		slots = c.localFirst()
	}
	for _, s := range slots {
		refs := c.refs[s.first : s.first+s.n]
		switch s.comb {
		case combOne:
			out = c.appendResult(out, refs[0])
		case combArray:
			out = appendArray(out, len(refs))
			for _, r := range refs {
				out = c.appendResult(out, r)
			}
		case combSum:
			var sum int64
			for _, r := range refs {
				sum += c.batches[r.shard].res[r.i].n
			}
			out = appendInt(out, sum)
		case combOK:
			out = append(out, replyOK...)
		case combInfo:
			out = c.appendInfo(out, s.argv, refs)
		}
	}
	if len(out) > 0 && !c.closed {
		if _, err := c.conn.Write(out); err != nil {
			c.quit = true
		}
	}
	// Reset the batch, keeping buffers of a sensible size.
	c.out = shrink(out)
	c.slots, c.refs = c.slots[:0], c.refs[:0]
	clear(c.argv)
	c.argv = c.argv[:0]
	for i, b := range c.batches {
		b.reset()
		b.out = shrink(b.out)
		c.used[i] = false
	}
	if c.quit || c.closed {
		c.close()
		return false
	}
	// Keep the unparsed tail for the next receive.
	t := c.p.tail()
	if len(c.pend) > 0 && len(c.buf) > 0 && &c.buf[0] == &c.pend[0] {
		n := copy(c.pend, c.pend[t:])
		c.pend = c.pend[:n]
	} else {
		c.pend = append(c.pend[:0], c.buf[t:]...)
	}
	c.p.rebase()
	if len(c.pend) == 0 {
		c.pend = shrink(c.pend)
	}
	c.buf = nil
	if c.srv.draining.Load() {
		c.close()
		return false
	}
	return true
}

// localFirst is the planted bug's order: the slots answered on the
// connection's own shard, then the others.
func (c *client) localFirst() []slot {
	var local, remote []slot
	for _, s := range c.slots {
		isLocal := true
		for _, r := range c.refs[s.first : s.first+s.n] {
			isLocal = isLocal && int(r.shard) == c.d.index
		}
		if isLocal {
			local = append(local, s)
		} else {
			remote = append(remote, s)
		}
	}
	return append(local, remote...)
}

func (c *client) appendResult(out []byte, r ref) []byte {
	b := c.batches[r.shard]
	res := b.res[r.i]
	return append(out, b.out[res.off:res.end]...)
}

// shrink drops a buffer that a burst made large.
func shrink(b []byte) []byte {
	if cap(b) > 64<<10 {
		return nil
	}
	return b[:0]
}
