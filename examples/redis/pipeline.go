package main

// The request pipeline of one connection: parse, route, batch, combine.
//
// A connection's input is handled in rounds. A round:
//
//  1. parses the complete requests of the bytes received (the arguments
//     are slices of the receive buffer, or of pend, the kept tail of a
//     request that arrived in pieces: no copy), until the replies made on
//     the connection's own shard reach the budget (Config.OutputHighWater);
//     the requests left stay in the buffer for the next round;
//  2. routes each request: a command whose keys are all on one shard is
//     one unit for that shard (DBSIZE, FLUSHALL and INFO are one unit per
//     shard). Units for the connection's own shard run at once; units for
//     other shards are gathered into one batch per shard. A command over
//     keys of several shards (MGET, MSET, MSETNX, DEL, EXISTS) is a
//     transaction (txn.go), which the connection runs alone: the round
//     ends with it (the commands over several shards right after it join
//     it), it starts once every request before it has run, and the
//     requests after it are routed once its replies are back. A unit
//     whose keys a transaction holds waits for them: on the connection's
//     own shard the round ends with it too;
//  3. sends each batch to its shard in one cross-shard call
//     (shard.InvokeWith), which runs its units in order on that shard's db
//     until their replies reach the budget, and carries them back; a batch
//     that reaches a unit whose keys are held parks on that shard until
//     they are free, and comes back (a one-way message) once it stops;
//  4. combines, once every batch is back, the replies of the requests
//     whose units have all run, in request order, into one buffer, which
//     the connection writes at once. If units are left (a shard stopped at
//     the budget), the connection sends their batches again, once its
//     output allows (conn.go), and combines on.
//
// So replies keep the order of the requests whatever shard answered them,
// the commands on one key run in the order they were sent (each key has
// one owner and batches to a shard run in order), a command whose keys
// are all local never leaves its shard, and the replies a round holds are
// bounded by about the budget per shard, plus one reply. Commands over
// several shards are atomic: no command sees part of one (txn.go).
//
// Invariants: waiting counts the batches in flight, and the transaction
// (txn) once started; while it is not zero the batches, argv and buffers
// belong to the shards running them. txn is the round's last request
// while set, and its reply the local batch's last unit, not run. In a
// batch, units[:ran] have run (their res are set) and res[:taken] have
// been combined; the units of a batch are in request order, so the
// combined ones are a prefix. slots are the requests of the round not yet
// combined. buf is the round's input and the parser's offsets refer to
// it; more is set while buf may hold requests not yet parsed.

import (
	"time"

	"github.com/spindle-rt/spindle/shard"
)

// A unit is one command, or one part of one, for one shard's db.
type unit struct {
	run  runFunc
	argv [][]byte
	keys keyMode // where its keys are in argv: what it waits for when they are held
	read bool    // it only reads: it shares its keys with other readers
}

// keyMode says which arguments of a unit are keys.
type keyMode uint8

const (
	keyNone  keyMode = iota // none (DBSIZE, FLUSHALL, INFO)
	keyFirst                // argv[1]
	keyAll                  // argv[1:]
	keyPairs                // argv[1], argv[3], ...
	keyPart                 // argv[0]: one key's part of a command
)

type result struct {
	off, end int
	n        int64
}

// A batch is the units of one round for one shard, and their replies.
type batch struct {
	units  []unit
	res    []result
	out    []byte
	ran    int // units[:ran] have run
	taken  int // res[:taken] have been combined
	budget int // a run stops once it has made this many bytes of replies

	logged bool // a unit appended to the AOF: the replies wait for its sync

	lock lockReq // parked: the claim on the keys of units[ran]
	home int     // the connection's shard
	wake func()  // tells the connection that the batch, parked, has stopped (on its shard)
}

func (b *batch) reset() {
	clear(b.units)
	b.units, b.res, b.out = b.units[:0], b.res[:0], shrink(b.out)
	b.ran, b.taken = 0, 0
}

// compact drops the units and replies already combined.
func (b *batch) compact() {
	if b.taken == 0 {
		return
	}
	off := len(b.out)
	if b.taken < b.ran {
		off = b.res[b.taken].off
	}
	b.out = b.out[:copy(b.out, b.out[off:])]
	n := copy(b.res, b.res[b.taken:])
	b.res = b.res[:n]
	for i := range b.res[:b.ran-b.taken] {
		b.res[i].off -= off
		b.res[i].end -= off
	}
	n = copy(b.units, b.units[b.taken:])
	clear(b.units[n:])
	b.units = b.units[:n]
	b.ran -= b.taken
	b.taken = 0
}

// runBatch runs a batch's units that have not run, on the shard that owns
// their keys, until their replies reach the batch's budget (at least one
// runs, unless its keys are held). It reports whether the batch parked:
// then it is the shard's until it comes back by b.wake.
func runBatch(st *shardState, b *batch) (bool, error) {
	st.remote++
	return st.runUnits(b), nil
}

// A ref names a unit: its shard's batch and its index there.
type ref struct{ shard, i int32 }

// A slot is one request's reply: how its units' replies combine.
type slot struct {
	comb     combine
	first, n int32 // refs[first:first+n]
	argv     [][]byte
}

// pipeline is a connection's request pipeline, kept from one round to the
// next. It is made with the connection's first bytes: an idle connection
// costs none of it.
type pipeline struct {
	c       *client // the connection, for its own commands (PING, CLIENT, QUIT...)
	srv     *Server
	home    *shardState // the connection's shard
	p       parser
	pend    []byte // the unparsed tail of the input
	buf     []byte // the round's input (pend, or the receive buffer)
	more    bool   // buf may hold requests not yet parsed
	round   bool   // a round is parsed and not yet ended
	quit    bool   // no more requests (QUIT, a protocol error): close once the replies are out
	argv    [][]byte
	slots   []slot
	refs    []ref
	batches []*batch // by shard; batches[home.index] is the local one
	waiting int
	out     []byte
	onDone  []func(bool, error)
	stop    bool        // the request routed ends the round (a transaction, or a local unit that waits)
	txn     *txn        // the round's transaction, last
	started bool        // txn is under way
	owners  []int       // the shards of a request's keys
	held    [][]byte    // a request parsed after txn that could not join it: the next round's first
	perr    protoError  // a protocol error found after txn: the next round's reply
	last    int64       // when input last arrived (the home shard's db.clock): how long the connection was quiet (qbuf.quiet)
	fed     uint64      // receives fed
	cut     bool        // with quit: close at once (a transaction queued past the limit)
	multi   *multiState // MULTI: the commands queued (multi.go)
	watch   *watchSet   // the keys watched (WATCH)
	exec    *execTxn    // EXEC's transaction: the round's last request
	dirty   bool        // the round appended to the AOF (and batches' logged): under appendfsync always, its replies wait for the sync
	synced  bool        // the sync the replies waited for is done (conn.go's synced)
	touched bool        // a command of the round runs on a db: its reply may show writes of others
}

func newPipeline(c *client) *pipeline {
	s := c.srv
	n := s.g.Len()
	p := &pipeline{c: c, srv: s, home: c.home, p: newParser(s.cfg.MaxBulk, s.cfg.MaxMultibulk)}
	_, p.p.perRead = c.conn.ConnectionState()
	p.batches = make([]*batch, n)
	p.onDone = make([]func(bool, error), n)
	wake := func() { c.batchDone(nil) }
	for j := range n {
		p.batches[j] = &batch{budget: s.cfg.OutputHighWater, home: c.home.index, wake: wake}
		p.onDone[j] = func(parked bool, err error) {
			if parked && err == nil {
				return // it comes back by wake
			}
			if !c.home.ex.OnLoop() {
				// A call the group's close swept completes off the loop:
				// the connection's state is its loop's, so the completion
				// goes there, or is dropped if that loop is closed too.
				_ = c.home.ex.Submit(func() { c.batchDone(err) })
				return
			}
			c.batchDone(err)
		}
	}
	return p
}

// feed takes the bytes of a receive as the next round's input; it reports
// false when a request still arriving is past the query buffer limit.
func (p *pipeline) feed(data []byte) bool {
	now := p.home.db.clock() // Config.Clock, or the shard's loop clock
	if p.last != 0 {
		p.p.q.quiet(now - p.last)
	}
	p.last = now
	p.fed++
	if len(p.pend) > 0 {
		if len(p.pend)+len(data) > p.srv.cfg.QueryBufferLimit {
			return false
		}
		p.pend = append(p.pend, data...)
		p.buf = p.pend
	} else {
		p.buf = data
	}
	p.more = true
	return true
}

// stalled says that no more input has arrived for now, and everything
// received is parsed: redis-server's read would have ended here. It
// reports whether the line in progress is one redis-server would refuse
// unless the rest of it arrived with that read: the connection then
// gives it lineGrace to arrive, and calls refuseLine.
func (p *pipeline) stalled() bool { return p.p.stalled(p.pend) }

// refuseLine refuses the line in progress if nothing has arrived since
// stalled; it reports whether it did (the next parse answers the error).
func (p *pipeline) refuseLine(fed uint64) bool {
	if fed != p.fed {
		return false
	}
	p.p.refuse(p.pend)
	if p.p.fail == "" {
		return false
	}
	p.buf, p.more = p.pend, true
	return true
}

// lineGrace is how long the rest of a line past 64 KB may take to arrive
// once the connection has read everything: redis-server decides at its
// read, which takes what has arrived, up to the room of its buffer; this
// server reads 16 KB at a time, so it gives the bytes on their way a
// moment before it decides as that read would have.
const lineGrace = 50 * time.Millisecond

// parse parses and routes the requests of buf, until the local replies
// reach the budget or no complete request is left.
func (p *pipeline) parse() {
	p.more, p.round = false, true
	argv := p.argv[:0]
	local := p.batches[p.home.index]
	if len(p.held) > 0 {
		argv = append(argv, p.held...)
		clear(p.held)
		p.held = p.held[:0]
		p.dispatch(argv[0:len(argv):len(argv)])
	}
	if p.perr != "" {
		p.replyLocal(appendError(nil, "ERR Protocol error: "+string(p.perr)))
		p.perr, p.quit = "", true
	}
	for !p.quit && !p.stop {
		if len(local.out) >= local.budget {
			p.more = true // the rest waits for the next round
			break
		}
		n0 := len(argv)
		var ok bool
		var perr protoError
		argv, ok, perr = p.p.next(p.buf, argv)
		if perr != "" && p.txn != nil {
			p.perr, p.stop = perr, true // answered after the transaction
			break
		}
		if perr != "" {
			p.replyLocal(appendError(nil, "ERR Protocol error: "+string(perr)))
			p.quit = true
			break
		}
		if !ok {
			break
		}
		if len(argv) > n0 {
			p.dispatch(argv[n0:len(argv):len(argv)])
		}
	}
	if p.stop {
		p.stop = false
		p.more = true // the rest waits for the next round
	}
	p.argv = argv
}

// send sends the batches whose units have not all run to their shards,
// parks the local one if a unit of it waits, or, once every unit before
// it has run, starts the round's transaction; it reports whether anything
// went (and batchDone will be called for each).
func (p *pipeline) send() bool {
	remote := 0
	for i, b := range p.batches {
		if i != p.home.index && b.ran < len(b.units) {
			remote++
		}
	}
	local := p.batches[p.home.index]
	if remote == 0 && p.txn != nil && !p.started {
		p.started = true
		p.waiting++
		p.txn.start()
		return true
	}
	if remote == 0 && p.exec != nil && !p.started {
		p.started = true
		p.waiting++
		p.exec.start()
		return true
	}
	park := p.txn == nil && p.exec == nil && local.ran < len(local.units)
	p.waiting += remote
	if park {
		p.waiting++
	}
	if p.waiting == 0 {
		return false
	}
	for i, b := range p.batches {
		if i != p.home.index && b.ran < len(b.units) {
			shard.InvokeWith(p.srv.shards, i, b, runBatch).OnComplete(p.onDone[i])
		}
	}
	if park && !p.home.runUnits(local) {
		_ = shard.Send(p.srv.g, local.home, local.wake)
	}
	return true
}

// txnDone takes the reply of the round's transaction, on the
// connection's loop.
func (p *pipeline) txnDone(t *txn) {
	if p.c.state != stClosed {
		b := p.batches[p.home.index]
		for _, c := range t.cmds {
			off := len(b.out)
			b.out = c.reply(b.out)
			b.res[b.ran] = result{off, len(b.out), 0}
			b.ran++
		}
	}
	p.dirty = p.dirty || t.logged
	p.txn, p.started = nil, false
	p.c.batchDone(nil)
}

// mustSync reports whether the replies to combine wait for the AOF's
// sync (appendfsync always, and a command of the round appended to it),
// and forgets it: the sync asked for next covers those appends.
func (p *pipeline) mustSync() bool {
	a := p.srv.aof
	if a == nil || !a.always {
		return false
	}
	must := p.dirty
	p.dirty = false
	for _, b := range p.batches {
		must = must || b.logged
		b.logged = false
	}
	if plantedBugs.ackBeforeSync {
		return false // planted: the replies go before the writes are on disk
	}
	if p.synced {
		p.synced = false // the replies to combine were made before that sync
		return must
	}
	// A reply may show a write of another connection that is not on disk
	// yet: it waits for the sync too, as redis-server answers no one
	// before the fsync of the writes made before (so that no one reads a
	// write a crash may lose). Replies that read no db (a refusal, PING)
	// show none.
	return must || (p.touched && !plantedBugs.dirtyRead && a.file.Unsynced())
}

// pending reports whether the round has requests not yet combined.
func (p *pipeline) pending() bool { return len(p.slots) > 0 }

// replyLocal adds a request whose reply the connection made itself.
func (p *pipeline) replyLocal(reply []byte) {
	b := p.batches[p.home.index]
	off := len(b.out)
	b.out = append(b.out, reply...)
	p.addSlot(combOne, nil)
	p.slots[len(p.slots)-1].n = 1
	p.refs = append(p.refs, ref{int32(p.home.index), int32(len(b.res))})
	b.units = append(b.units, unit{})
	b.res = append(b.res, result{off, len(b.out), 0})
	b.ran++
}

func (p *pipeline) addSlot(comb combine, argv [][]byte) {
	p.slots = append(p.slots, slot{comb: comb, first: int32(len(p.refs)), argv: argv})
}

// unit sends u to shard to: it runs at once if to is the connection's
// shard (unless its keys are held: then it waits, and ends the round),
// else joins that shard's batch.
func (p *pipeline) unit(to int, u unit) {
	p.touched = true
	b := p.batches[to]
	p.refs = append(p.refs, ref{int32(to), int32(len(b.res))})
	p.slots[len(p.slots)-1].n++
	if to == p.home.index {
		if b.ran == len(b.units) && (len(p.home.locks) == 0 || !p.home.claimed(&u)) {
			off := len(b.out)
			var n int64
			before := p.home.db.appends
			b.out, n = u.run(&p.home.db, u.argv, b.out)
			p.dirty = p.dirty || p.home.db.appends != before
			b.units = append(b.units, unit{})
			b.res = append(b.res, result{off, len(b.out), n})
			b.ran++
			return
		}
		p.stop = true
	}
	b.units = append(b.units, u)
	b.res = append(b.res, result{})
}

// dispatch routes one request. While the round has a transaction, a
// request over keys of several shards joins it, if it may; any other is
// held for the next round.
func (p *pipeline) dispatch(argv [][]byte) {
	p.home.cmds++
	cmd := lookup(argv[0])
	if p.exec != nil || (p.multi != nil && p.txn != nil) {
		p.hold(argv) // after EXEC's transaction
		return
	}
	if p.multi != nil && (cmd == nil || !cmd.now) {
		p.queue(cmd, argv) // after MULTI (multi.go)
		return
	}
	bad := refusal(cmd, argv)
	if bad == "" && cmd.validate != nil {
		bad = cmd.validate(argv)
	}
	if bad == "" {
		bad = p.diskError(cmd)
	}
	if bad == "" && cmd.name == "watch" && p.multi == nil {
		cmd = p.watchCommand(argv) // a command over keys, which registers them
	}
	to, several := 0, false
	step, keys := 1, keyAll
	if bad == "" && (cmd.route == routeKeys || cmd.route == routePairs) {
		if cmd.route == routePairs {
			step, keys = 2, keyPairs
		}
		to, several = p.shardsOf(argv, step)
	}
	join := several && !(plantedBugs.split && cmd.comb != combOne)
	if p.txn != nil && !(bad == "" && join && p.txn.open()) {
		p.hold(argv)
		return
	}
	if bad != "" {
		p.refuseCommand(cmd, bad)
		return
	}
	switch cmd.route {
	case routeMulti:
		p.transaction(cmd, argv)
	case routeConn:
		b := p.batches[p.home.index]
		off := len(b.out)
		b.out = cmd.conn(p.c, argv, b.out)
		p.addSlot(combOne, nil)
		p.refs = append(p.refs, ref{int32(p.home.index), int32(len(b.res))})
		p.slots[len(p.slots)-1].n = 1
		b.units = append(b.units, unit{})
		b.res = append(b.res, result{off, len(b.out), 0})
		b.ran++
	case routeKey:
		p.addSlot(combOne, nil)
		p.unit(p.srv.owner(argv[1]), unit{cmd.run, argv, keyFirst, cmd.read})
	case routeKeys, routePairs:
		switch {
		case !several:
			p.addSlot(combOne, nil)
			p.unit(to, unit{cmd.run, argv, keys, cmd.read})
		case !join: // planted: key by key
			p.addSlot(cmd.comb, nil)
			for i, o := range p.owners {
				a := 1 + i*step
				p.unit(o, unit{cmd.part, argv[a : a+step : a+step], keyPart, cmd.read})
			}
		default:
			p.addSlot(combOne, nil)
			b := p.batches[p.home.index]
			p.refs = append(p.refs, ref{int32(p.home.index), int32(len(b.res))})
			p.slots[len(p.slots)-1].n++
			b.units = append(b.units, unit{})
			b.res = append(b.res, result{})
			p.touched = true
			if p.txn == nil {
				t := &txn{srv: p.srv, home: p.home.index}
				t.done = func() { p.txnDone(t) }
				p.txn = t
			}
			p.txn.add(cmd, argv, append([]int(nil), p.owners...))
		}
	case routeAll:
		p.addSlot(cmd.comb, argv)
		for i := range p.srv.g.Len() {
			p.unit(i, unit{cmd.run, argv, keyNone, cmd.read})
		}
	}
}

// hold keeps a request for the next round, which it starts.
func (p *pipeline) hold(argv [][]byte) {
	p.home.cmds-- // counted again in its round
	p.held = append(p.held, argv...)
	p.stop = true
}

// shardsOf finds the shards of the keys of argv (every step-th argument
// from argv[1]), in p.owners: the first's, and whether there are several.
func (p *pipeline) shardsOf(argv [][]byte, step int) (first int, several bool) {
	p.owners = p.owners[:0]
	for i := 1; i < len(argv); i += step {
		o := p.srv.owner(argv[i])
		p.owners = append(p.owners, o)
		several = several || o != p.owners[0]
	}
	return p.owners[0], several
}

// ready reports whether every unit of refs has run.
func (p *pipeline) ready(refs []ref) bool {
	for _, r := range refs {
		if int(r.i) >= p.batches[r.shard].ran {
			return false
		}
	}
	return true
}

// combine puts together, in request order, the replies of the requests
// whose units have all run, and returns them; the requests after the
// first that still waits on a unit stay.
func (p *pipeline) combine() []byte {
	out := p.out[:0]
	slots := p.slots
	if plantedBugs.localFirst {
		slots = p.localFirst()
	}
	k := 0
	for ; k < len(slots); k++ {
		s := slots[k]
		refs := p.refs[s.first : s.first+s.n]
		if !p.ready(refs) {
			break
		}
		switch s.comb {
		case combOne:
			out = p.appendResult(out, refs[0])
		case combArray:
			out = appendArray(out, len(refs))
			for _, r := range refs {
				out = p.appendResult(out, r)
			}
		case combSum:
			var sum int64
			for _, r := range refs {
				sum += p.batches[r.shard].res[r.i].n
			}
			out = appendInt(out, sum)
		case combOK:
			out = append(out, replyOK...)
		case combInfo:
			out = p.appendInfo(out, s.argv, refs)
		}
		for _, r := range refs {
			p.batches[r.shard].taken = int(r.i) + 1
		}
	}
	p.out = out
	switch {
	case k == len(p.slots):
		p.slots, p.refs = p.slots[:0], p.refs[:0] // endRound resets the batches
	case k > 0:
		p.drop(k)
	}
	return out
}

// plantedBugs are bugs a test plants to show that the simulation finds
// them (sim_test.go); nothing else sets them.
var plantedBugs struct {
	localFirst bool // combine writes the replies made on the connection's shard before the others
	lostWake   bool // Wake drops the wake-up of a connection holding a partial request
	split      bool // MSET, MGET, DEL and EXISTS over several shards run key by key, with no transaction
	execSplit  bool // EXEC runs its commands claiming none of their keys

	ackBeforeSync bool // appendfsync always answers writes before their sync (sim_crash_test.go)
	dirtyRead     bool // appendfsync always answers reads of writes not yet synced
	slowEverySec  bool // appendfsync everysec syncs every 3 s
	tornReplay    bool // the AOF's load runs a command cut by a crash, with the bytes it has
}

// localFirst is the planted bug's order: once every request of the round
// is ready, the slots answered on the connection's own shard, then the
// others.
func (p *pipeline) localFirst() []slot {
	for _, s := range p.slots {
		if !p.ready(p.refs[s.first : s.first+s.n]) {
			return p.slots
		}
	}
	var local, remote []slot
	for _, s := range p.slots {
		isLocal := true
		for _, r := range p.refs[s.first : s.first+s.n] {
			isLocal = isLocal && int(r.shard) == p.home.index
		}
		if isLocal {
			local = append(local, s)
		} else {
			remote = append(remote, s)
		}
	}
	return append(local, remote...)
}

// drop forgets the first k slots, combined, and their units and replies.
func (p *pipeline) drop(k int) {
	first := p.slots[k].first
	p.refs = p.refs[:copy(p.refs, p.refs[first:])]
	for i := range p.refs {
		p.refs[i].i -= int32(p.batches[p.refs[i].shard].taken)
	}
	p.slots = p.slots[:copy(p.slots, p.slots[k:])]
	for i := range p.slots {
		p.slots[i].first -= first
	}
	for _, b := range p.batches {
		b.compact()
	}
}

// endRound resets the round once every request is combined and written,
// keeping buffers of a sensible size and, if buf is all parsed, the
// unparsed tail for the next receive.
func (p *pipeline) endRound() {
	p.round, p.touched = false, false
	p.out = shrink(p.out)
	p.slots, p.refs = p.slots[:0], p.refs[:0]
	clear(p.argv)
	p.argv = p.argv[:0]
	for _, b := range p.batches {
		b.reset()
	}
	if p.more {
		return
	}
	t := p.p.tail()
	if len(p.pend) > 0 && len(p.buf) > 0 && &p.buf[0] == &p.pend[0] {
		if t > 0 { // a request still arriving stays where it is: no copy per receive
			p.pend = p.pend[:copy(p.pend, p.pend[t:])]
		}
	} else {
		p.pend = append(p.pend[:0], p.buf[t:]...)
	}
	p.p.rebase()
	if len(p.pend) == 0 {
		p.pend = shrink(p.pend)
	}
	p.buf = nil
}

func (p *pipeline) appendResult(out []byte, r ref) []byte {
	b := p.batches[r.shard]
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
