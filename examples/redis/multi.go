package main

// MULTI, EXEC, DISCARD, WATCH and UNWATCH, as Redis 7 has them, atomic
// across shards.
//
// Queueing (on the connection's loop, as requests are routed). After
// MULTI, a request is checked as redis-server's processCommand checks it
// (unknown command, arity, a container's subcommand and its arity): one
// that fails gets its error, and flags the transaction, so that EXEC
// answers EXECABORT; one that passes is copied and queued (+QUEUED). EXEC,
// DISCARD, MULTI, WATCH and QUIT run at once (immediate); everything else,
// UNWATCH included, is queued. Checks that redis-server makes when the
// command runs (MSET's pairs, FLUSHALL's option, a bad integer) are made
// when EXEC runs it, and their errors are that command's reply in EXEC's.
//
// EXEC runs the queued commands as one transaction (execTxn), the round's
// last request, once every request before it has run, as the transactions
// of txn.go: it claims every key its commands name, and every key the
// connection watches, on each shard concerned, in ascending shard order
// (exclusively on a shard where a command writes, shared elsewhere), then
// checks the watches under those claims, then runs the commands one after
// the other, each on the shard that owns its keys (a command over keys of
// several shards part by part, MSETNX checking all its keys before it
// writes any), on the connection's shard for a connection command, and on
// every shard for DBSIZE, FLUSHALL and INFO; then it releases its claims
// and the connection writes the replies. Every other command that touches
// a claimed key waits for the release, so no one sees part of a
// transaction. The claims are all taken before anything runs, in the
// order of txn.go, so transactions of both kinds cannot deadlock.
//
// WATCH registers the connection's watchSet on the shards that own the
// keys (a command over keys like EXISTS: keys of several shards are
// registered atomically, under shared claims). Every write or deletion of
// a key touches it (db.touch): the watchSets that watch it are marked
// dirty on that shard. A key that had expired (but was not yet deleted)
// when watched is marked so: its deletion is no change, as in
// redis-server; one that expires after WATCH counts as changed at EXEC
// (isWatchedKeyExpired). EXEC's transaction
// reads the marks of each shard under its claims: any mark, and EXEC
// answers a nil array and runs nothing. EXEC, DISCARD, UNWATCH and the
// connection's end unwatch: the watchSet is marked dead at once (a
// registration still on its way is dropped) and each shard forgets it.
//
// Invariants: a watchSet's shards[i] is touched only by shard i's loop;
// where and dead are set on the connection's loop (dead also read by the
// shards). A pipeline has at most one of txn and exec; while exec is set
// it is the round's last request, and its reply the local batch's last
// unit, not run.

import (
	"strings"
	"sync/atomic"

	"github.com/spindle-rt/spindle/shard"
)

// multiState is the transaction a connection is queueing (MULTI).
type multiState struct {
	cmds  []queued
	size  int  // the bytes the queued commands hold
	dirty bool // a command was refused: EXEC aborts
}

// A queued command: its table entry and a copy of its arguments.
type queued struct {
	cmd  *command
	argv [][]byte
}

// queuedOverhead is what a queued command costs beyond its arguments,
// counted against Config.QueryBufferLimit.
const queuedOverhead = 64

// queue queues a request received after MULTI, or refuses it as
// processCommand does, which flags the transaction.
func (p *pipeline) queue(cmd *command, argv [][]byte) {
	bad := refusal(cmd, argv)
	if bad == "" {
		bad = p.diskError(cmd)
	}
	if bad != "" {
		p.multi.dirty = true
		p.replyLocal(appendError(nil, bad))
		return
	}
	n := queuedOverhead
	for _, a := range argv {
		n += len(a) + 24
	}
	if p.multi.size+n > p.srv.cfg.QueryBufferLimit {
		// The queue is past the query buffer limit: as a request too
		// large, the connection is closed.
		p.quit, p.cut = true, true
		return
	}
	p.multi.size += n
	buf := make([]byte, 0, n)
	cp := make([][]byte, len(argv))
	for i, a := range argv {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	p.multi.cmds = append(p.multi.cmds, queued{cmd, cp})
	p.replyLocal(appendSimple(nil, "QUEUED"))
}

// refusal returns the error redis-server's processCommand answers to a
// request before it runs it (unknown command, arity, a container's
// subcommand), or "".
func refusal(cmd *command, argv [][]byte) string {
	switch {
	case cmd == nil:
		return errUnknown(argv)
	case !arityOK(cmd.arity, len(argv)):
		return errArity(cmd.name)
	case cmd.check != nil:
		return cmd.check(argv)
	}
	return ""
}

// refuseCommand answers a request refused before it ran (unknown command, wrong
// arity, bad options): as rejectCommand, it flags a transaction being
// queued, and a refused EXEC discards the transaction.
func (p *pipeline) refuseCommand(cmd *command, bad string) {
	if cmd != nil && cmd.name == "exec" {
		p.multi = nil
		p.unwatch()
		p.replyLocal(appendError(nil, "EXECABORT Transaction discarded because of: "+strings.TrimPrefix(bad, "ERR ")))
		return
	}
	if p.multi != nil {
		p.multi.dirty = true
	}
	p.replyLocal(appendError(nil, bad))
}

// transaction runs MULTI, EXEC, DISCARD, WATCH (inside MULTI: its error)
// and UNWATCH.
func (p *pipeline) transaction(cmd *command, argv [][]byte) {
	switch cmd.name {
	case "multi":
		if p.multi != nil {
			p.replyLocal(appendError(nil, "ERR MULTI calls can not be nested"))
			return
		}
		p.multi = &multiState{}
		p.replyLocal([]byte(replyOK))
	case "discard":
		if p.multi == nil {
			p.replyLocal(appendError(nil, "ERR DISCARD without MULTI"))
			return
		}
		p.multi = nil
		p.unwatch()
		p.replyLocal([]byte(replyOK))
	case "exec":
		m := p.multi
		switch {
		case m == nil:
			p.replyLocal(appendError(nil, "ERR EXEC without MULTI"))
			return
		case m.dirty:
			p.multi = nil
			p.unwatch()
			p.replyLocal(appendError(nil, "EXECABORT Transaction discarded because of previous errors."))
			return
		}
		p.multi = nil
		if len(m.cmds) == 0 && p.watch == nil {
			p.replyLocal(appendArray(nil, 0))
			return
		}
		p.touched = true
		e := newExecTxn(p, m.cmds, p.watch)
		p.watch = nil // the transaction unwatches once it has read the marks
		p.exec = e
		p.addSlot(combOne, nil)
		b := p.batches[p.home.index]
		p.refs = append(p.refs, ref{int32(p.home.index), int32(len(b.res))})
		p.slots[len(p.slots)-1].n = 1
		b.units = append(b.units, unit{})
		b.res = append(b.res, result{})
		p.stop = true // the round ends with it
	case "watch": // inside MULTI; outside, dispatch routes it as a command over keys
		p.replyLocal(appendError(nil, "ERR WATCH inside MULTI is not allowed"))
	case "unwatch":
		p.unwatch()
		p.replyLocal([]byte(replyOK))
	}
}

// execDone takes the reply of EXEC's transaction, on the connection's
// loop, and forgets the watches it read.
func (p *pipeline) execDone(e *execTxn) {
	if e.ws != nil {
		e.ws.unwatch(p.srv, p.home.index)
	}
	if p.c.state != stClosed {
		b := p.batches[p.home.index]
		off := len(b.out)
		b.out = append(b.out, e.out...)
		b.res[b.ran] = result{off, len(b.out), 0}
		b.ran++
	}
	p.dirty = p.dirty || e.logged
	p.exec, p.started = nil, false
	p.c.batchDone(nil)
}

// unwatch forgets the connection's watches (UNWATCH, DISCARD, EXEC, the
// connection's end).
func (p *pipeline) unwatch() {
	if p.watch != nil {
		p.watch.unwatch(p.srv, p.home.index)
		p.watch = nil
	}
}

// watchCommand returns WATCH for the connection's watchSet, made on first
// use, after noting the shards of argv's keys: a command over keys, whose
// parts register them.
func (p *pipeline) watchCommand(argv [][]byte) *command {
	ws := p.watch
	if ws == nil {
		ws = newWatchSet(p.srv.g.Len())
		p.watch = ws
	}
	for _, k := range argv[1:] {
		ws.where[p.srv.owner(k)] = true
	}
	return ws.cmd
}

// A watchSet is a connection's watched keys, kept by the shards that own
// them.
type watchSet struct {
	shards []watchShard // by shard: each touched by its shard's loop only
	where  []bool       // the shards that may hold some (the connection's loop)
	dead   atomic.Bool  // unwatched: registrations on their way are dropped
	cmd    *command     // WATCH, with this set's parts
}

// watchShard is a watchSet's part on one shard.
type watchShard struct {
	keys  []watchedKey
	dirty bool // a watched key was written or deleted since it was watched
}

type watchedKey struct {
	key     string
	expired bool // its time had come when it was watched, and it was not yet deleted
}

func newWatchSet(shards int) *watchSet {
	ws := &watchSet{shards: make([]watchShard, shards), where: make([]bool, shards)}
	watch := commands["watch"]
	c := *watch
	c.route, c.comb, c.read = routeKeys, combOK, true
	c.run = func(d *db, argv [][]byte, out []byte) ([]byte, int64) {
		for _, k := range argv[1:] {
			ws.add(d, k)
		}
		return append(out, replyOK...), 0
	}
	c.part = func(d *db, argv [][]byte, out []byte) ([]byte, int64) {
		ws.add(d, argv[0])
		return out, 0
	}
	ws.cmd = &c
	return ws
}

// add watches key on d's shard.
func (ws *watchSet) add(d *db, key []byte) {
	if ws.dead.Load() {
		return // unwatched meanwhile
	}
	w := &ws.shards[d.shard.index]
	for _, k := range w.keys {
		if k.key == string(key) {
			return
		}
	}
	w.keys = append(w.keys, watchedKey{key: string(key), expired: d.present(key) && d.expiredNow(key)})
	if d.watched == nil {
		d.watched = map[string][]*watchSet{}
	}
	d.watched[string(key)] = append(d.watched[string(key)], ws)
}

// changed reports, under EXEC's claims on d's shard, whether a key ws
// watches there was written or deleted, or expired, since it was watched.
func (ws *watchSet) changed(d *db) bool {
	w := &ws.shards[d.shard.index]
	if w.dirty {
		return true
	}
	for _, k := range w.keys {
		if b := []byte(k.key); !k.expired && d.present(b) && d.expiredNow(b) {
			return true
		}
	}
	return false
}

// unwatch forgets ws on every shard that may hold some of its keys; home
// is the caller's shard.
func (ws *watchSet) unwatch(s *Server, home int) {
	ws.dead.Store(true)
	for i, on := range ws.where {
		switch {
		case !on:
		case i == home:
			ws.drop(&s.shards.Local().db)
		default:
			_ = shard.Send(s.g, i, func() { ws.drop(&s.shards.Local().db) })
		}
	}
}

// drop forgets ws's keys on d's shard.
func (ws *watchSet) drop(d *db) {
	w := &ws.shards[d.shard.index]
	for _, k := range w.keys {
		list := d.watched[k.key]
		for i, x := range list {
			if x == ws {
				list[i] = list[len(list)-1]
				list[len(list)-1] = nil
				list = list[:len(list)-1]
				break
			}
		}
		if len(list) == 0 {
			delete(d.watched, k.key)
		} else {
			d.watched[k.key] = list
		}
	}
	w.keys = nil
}

// touchWatched marks the watchSets that watch key, just written or
// deleted, as redis-server's touchWatchedKey does: a key watched after
// its time had come is no change once it is gone (and from then on it is
// watched as any other); one written while still there was deleted and
// written again for redis-server (a write deletes an expired key first),
// a change.
func (d *db) touchWatched(key []byte) {
	list := d.watched[string(key)]
	if len(list) == 0 {
		return
	}
	gone := !d.present(key)
	for _, ws := range list {
		w := &ws.shards[d.shard.index]
		for i := range w.keys {
			k := &w.keys[i]
			if k.key != string(key) {
				continue
			}
			if k.expired && gone {
				k.expired = false
				break
			}
			w.dirty = true
			break
		}
	}
}

// An execTxn is EXEC's transaction (see the top of the file).
type execTxn struct {
	srv   *Server
	p     *pipeline
	home  int
	ws    *watchSet
	plan  []execShard // the keys the commands name, by shard
	parts []txnPart   // the claims, by ascending shard
	steps []execStep
	next  int    // the step to run
	out   []byte // EXEC's reply
	done  func() // on the connection's loop, once the reply is made

	rec    aofCapture // the writes, appended to the AOF whole when it finishes (aof.go)
	direct bool       // it flushes, on several shards: its writes go to the AOF as they run
	logged bool       // something was appended to the AOF
}

// execShard is what EXEC's commands need on one shard.
type execShard struct {
	keys  []string // distinct
	write bool     // a command writes there: the claim is exclusive
	seen  map[string]struct{}
}

// An execStep is one step of EXEC's commands: fn runs on shard, or, if
// shard is -1, wherever the transaction is.
type execStep struct {
	shard int
	fn    func(st *shardState)
}

func newExecTxn(p *pipeline, cmds []queued, ws *watchSet) *execTxn {
	n := p.srv.g.Len()
	e := &execTxn{srv: p.srv, p: p, home: p.home.index, ws: ws, plan: make([]execShard, n)}
	e.done = func() { p.execDone(e) }
	e.out = appendArray(e.out, len(cmds))
	for _, q := range cmds {
		e.add(q.cmd, q.argv)
		e.direct = e.direct || (q.cmd.route == routeAll && !q.cmd.read && n > 1)
	}
	return e
}

// key notes that a command names key, on shard sh.
func (e *execTxn) key(sh int, key []byte, write bool) {
	x := &e.plan[sh]
	x.write = x.write || write
	if x.seen == nil {
		x.seen = map[string]struct{}{}
	}
	if _, ok := x.seen[string(key)]; !ok {
		x.seen[string(key)] = struct{}{}
		x.keys = append(x.keys, string(key))
	}
}

func (e *execTxn) step(sh int, fn func(st *shardState)) {
	e.steps = append(e.steps, execStep{sh, fn})
}

// add plans a queued command's steps.
func (e *execTxn) add(cmd *command, argv [][]byte) {
	if cmd.validate != nil {
		if bad := cmd.validate(argv); bad != "" {
			e.step(-1, func(*shardState) { e.out = appendError(e.out, bad) })
			return
		}
	}
	write := !cmd.read
	switch cmd.route {
	case routeConn:
		e.step(e.home, func(*shardState) { e.out = cmd.conn(e.p.c, argv, e.out) })
	case routeMulti: // UNWATCH: the watches were read already
		e.step(-1, func(*shardState) { e.out = append(e.out, replyOK...) })
	case routeKey:
		o := e.srv.owner(argv[1])
		e.key(o, argv[1], write)
		e.step(o, func(st *shardState) { e.out, _ = cmd.run(&st.db, argv, e.out) })
	case routeKeys, routePairs:
		step := 1
		if cmd.route == routePairs {
			step = 2
		}
		var own, shards []int
		for i := 1; i < len(argv); i += step {
			o := e.srv.owner(argv[i])
			e.key(o, argv[i], write)
			own = append(own, o)
			if !containsInt(shards, o) {
				shards = append(shards, o)
			}
		}
		if len(shards) == 1 {
			e.step(shards[0], func(st *shardState) { e.out, _ = cmd.run(&st.db, argv, e.out) })
			return
		}
		sortInts(shards)
		c := &txnCmd{cmd: cmd, nx: cmd.name == "msetnx", argv: argv, step: step, own: own, res: make([]result, len(own))}
		for _, sh := range shards {
			e.step(sh, func(st *shardState) { c.runPart(&st.db, st.index) })
		}
		if c.nx {
			for _, sh := range shards {
				e.step(sh, func(st *shardState) { c.writeNX(&st.db, st.index) })
			}
		}
		e.step(-1, func(st *shardState) {
			if c.wrote() {
				st.db.propagate(argv) // whole, where its parts end
			}
			e.out = c.reply(e.out)
		})
	case routeAll:
		var lines []byte
		counts := make([]int64, e.srv.g.Len())
		for sh := range e.srv.g.Len() {
			e.step(sh, func(st *shardState) { lines, counts[sh] = cmd.run(&st.db, argv, lines) })
		}
		e.step(-1, func(*shardState) {
			switch cmd.comb {
			case combSum:
				var sum int64
				for _, n := range counts {
					sum += n
				}
				e.out = appendInt(e.out, sum)
			case combInfo:
				e.out = appendInfo(e.out, e.srv, argv, lines, counts)
			default:
				e.out = append(e.out, replyOK...)
			}
		})
	}
}

// start claims the keys of the first shard concerned, or, with none,
// runs the commands at once; on the connection's loop.
func (e *execTxn) start() {
	if plantedBugs.execSplit {
		for i := range e.plan {
			e.plan[i].keys = nil // planted: the commands' keys are not claimed
		}
	}
	for sh := range e.plan {
		if len(e.plan[sh].keys) > 0 || (e.ws != nil && e.ws.where[sh]) {
			e.parts = append(e.parts, txnPart{shard: sh})
		}
	}
	switch {
	case len(e.parts) == 0:
		e.run()
	case e.parts[0].shard == e.home:
		e.claim(0)
	default:
		e.visit(0)
	}
}

func (e *execTxn) visit(i int) {
	_ = shard.Send(e.srv.g, e.parts[i].shard, func() { e.claim(i) })
}

// claim claims part i's keys, those of the commands and those watched,
// on its shard, the caller's.
func (e *execTxn) claim(i int) {
	st := e.srv.shards.Local()
	p := &e.parts[i]
	x := &e.plan[p.shard]
	keys := x.keys
	if e.ws != nil {
		for _, k := range e.ws.shards[p.shard].keys {
			if _, ok := x.seen[k.key]; !ok {
				keys = append(keys, k.key)
			}
		}
	}
	p.lock = lockReq{keys: keys, shared: !x.write, owner: e, part: i}
	st.claims++
	st.acquire(&p.lock)
}

// granted checks the watches of part i's shard under its claim, then goes
// on to the next shard, or runs the commands once it holds every claim.
func (e *execTxn) granted(st *shardState, i int) {
	if e.ws != nil && e.ws.changed(&st.db) {
		// A watched key changed: nothing runs, and EXEC answers nil.
		e.out = appendNullArray(e.out[:0])
		e.parts = e.parts[:i+1]
		e.finish(st)
		return
	}
	if i < len(e.parts)-1 {
		e.visit(i + 1)
		return
	}
	e.run()
}

// run runs the steps, each on its shard, from the caller's on.
func (e *execTxn) run() {
	st := e.srv.shards.Local()
	for e.next < len(e.steps) {
		s := e.steps[e.next]
		if s.shard >= 0 && s.shard != st.index {
			_ = shard.Send(e.srv.g, s.shard, e.run)
			return
		}
		e.next++
		d := &st.db
		before := d.appends
		if d.aof != nil && !e.direct {
			d.capture = &e.rec
		}
		s.fn(st)
		d.capture = nil
		if d.appends != before {
			e.logged = true
		}
	}
	e.finish(st)
}

// finish releases the claims, on st's shard at once and on the others by
// a message, and sends the reply to the connection.
func (e *execTxn) finish(st *shardState) {
	if e.rec.ops > 0 {
		// MULTI, the writes, EXEC, while every claim is held.
		st.db.appendAOF(e.rec.record())
		e.logged = true
	}
	for k := range e.parts {
		p := &e.parts[k]
		if p.shard == st.index {
			st.release(&p.lock)
			continue
		}
		_ = shard.Send(e.srv.g, p.shard, func() { e.srv.shards.Local().release(&p.lock) })
	}
	_ = shard.Send(e.srv.g, e.home, e.done)
}

// runPart runs the command's part for its keys on shard sh (d), in their
// order: MSETNX checks whether one exists.
func (c *txnCmd) runPart(d *db, sh int) {
	for j, o := range c.own {
		if o != sh {
			continue
		}
		a := 1 + j*c.step
		if c.nx {
			c.exist = c.exist || d.exists(c.argv[a])
			continue
		}
		off := len(c.out)
		var n int64
		c.out, n = c.cmd.part(d, c.argv[a:a+c.step], c.out)
		c.res[j] = result{off, len(c.out), n}
		c.n += n
	}
}

// writeNX sets MSETNX's keys of shard sh, once every shard has found
// none of them.
func (c *txnCmd) writeNX(d *db, sh int) {
	if c.exist {
		return
	}
	for j, o := range c.own {
		if o == sh {
			d.setString(c.argv[1+2*j], c.argv[2+2*j], false)
		}
	}
}
