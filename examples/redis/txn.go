package main

// Commands over keys of several shards, atomically: MSET, MSETNX, MGET,
// DEL and EXISTS whose keys are not all on one shard run as a transaction
// (txn) that claims their keys on every shard concerned before it lets
// anyone see its effect, as redis-server, with one thread, gives for free.
//
// Claims. Each shard keeps a claim table (shardState.locks): for a key
// claimed, the queue of the claims (lockReq) on it, the first holding it
// (or the first readers together: below). A claim takes all the keys it
// wants on its shard at once, in one step of that shard's loop, and is
// granted once it holds each of them; released, it leaves every queue and
// the claims that now hold all their keys are granted, in order. A command that is not a transaction (GET, SET,
// a single-shard MGET...) and touches a claimed key waits for it the same
// way: its batch parks in the queues (a claim of its own) and goes on,
// where it stopped, once granted, so the commands on one key still run in
// the order they reached the shard. A shard with no claim pays one length
// check per command.
//
// A transaction. The connection's shard coordinates; the transaction
// visits the shards of its keys one after the other, in ascending shard
// order: on each, it claims its keys there and, once granted, does its
// part under the claim (MSET and DEL write, MGET and EXISTS read, MSETNX
// checks that none of its keys exists), then moves to the next shard,
// holding its claims. On the last shard it finishes (MSETNX decides, and
// writes if none of its keys existed), releases the claims on every shard
// (MSETNX's writes on the other shards go with their release) and sends
// its reply to the coordinator. What it wrote is visible to no one before
// every part is done, and what it read no one changed before every part
// was read: every other command on those keys waits in their queues.
//
// Deadlock freedom: a claim takes its keys on one shard in one step, so on
// every shard the queues of all its keys are in one order (that of the
// claims' arrival); a transaction waits only on the shard it is at and
// holds claims only on the shards before it; a waiting command that is not
// a transaction holds nothing. A cycle of waits would need a transaction
// to wait on a shard before one where it holds a claim.
//
// The connection runs a transaction alone: the requests before it have
// run (their replies combined), and those after it are not routed until
// its reply is back (pipeline.go), so a connection's requests take effect
// in their order, whatever shard they touch. Commands over several shards
// that follow one another in a pipeline are one transaction (a run, up to
// txnMaxCmds commands and txnMaxKeys keys): their claims go together, and
// on each shard their parts run in their order, so a pipeline of MSETs
// costs one chain of claims, not one per MSET.
//
// Readers share: the claims of a transaction that only reads (MGET,
// EXISTS) are shared, and so are those of a waiting command that only
// reads (GET, TTL, ...); shared claims before the first exclusive one in
// a key's queue hold the key together, and a reader that finds only
// shared claims on its keys does not wait. DBSIZE, FLUSHALL and INFO run
// on each shard in turn and claim nothing: they are not atomic across
// shards. EXEC's transaction (multi.go) takes its claims the same way,
// all of them before any of its commands runs.
//
// Invariants: a lockReq is in the queue of each of its keys exactly once,
// and need counts the keys it does not hold; a claim holds its key when
// it is first, or when it and every claim before it are shared;
// exclusive counts a queue's exclusive claims; granted holds the claims
// granted and not yet run, in the order they were granted; a key is in
// locks only while its queue is not empty.

import (
	"github.com/spindle-rt/spindle/shard"
)

// A lockReq is a claim on keys of one shard.
type lockReq struct {
	keys   []string // distinct
	need   int      // the keys it does not hold yet
	shared bool     // a reader's: held together with the other readers' claims
	owner  lockOwner
	part   int // the transaction's part (lockOwner's argument)
}

// A lockOwner is told when its claim is granted, on the claim's shard.
type lockOwner interface {
	granted(st *shardState, part int)
}

// keyLock is the queue of the claims on one key: the first holds it, or
// the shared claims before the first exclusive one hold it together.
type keyLock struct {
	queue     []claim
	exclusive int // the exclusive claims in queue
}

// A claim is a lockReq in the queue of one of its keys.
type claim struct {
	r    *lockReq
	held bool
}

// acquire queues r on each of its keys; r is granted (runGranted) once it
// heads every queue.
func (st *shardState) acquire(r *lockReq) {
	if st.locks == nil {
		st.locks = map[string]*keyLock{}
	}
	r.need = 0
	for _, k := range r.keys {
		l := st.locks[k]
		if l == nil {
			if n := len(st.freeLocks); n > 0 {
				l = st.freeLocks[n-1]
				st.freeLocks = st.freeLocks[:n-1]
			} else {
				l = &keyLock{queue: make([]claim, 0, 2)}
			}
			st.locks[k] = l
		}
		held := len(l.queue) == 0 || (r.shared && l.exclusive == 0)
		l.queue = append(l.queue, claim{r, held})
		if !r.shared {
			l.exclusive++
		}
		if !held {
			r.need++
		}
	}
	if r.need == 0 {
		st.granted = append(st.granted, r)
		st.runGranted()
	}
}

// release takes r, which holds its keys, off their queues and grants the
// claims that now hold all of theirs.
func (st *shardState) release(r *lockReq) {
	for _, k := range r.keys {
		l := st.locks[k]
		i := 0
		for l.queue[i].r != r {
			i++
		}
		n := i + copy(l.queue[i:], l.queue[i+1:]) // queues are short: the array stays, for reuse
		l.queue[n] = claim{}
		l.queue = l.queue[:n]
		if !r.shared {
			l.exclusive--
		}
		if n == 0 {
			delete(st.locks, k)
			if len(st.freeLocks) < 1024 && cap(l.queue) <= 8 {
				st.freeLocks = append(st.freeLocks, l)
			}
			continue
		}
		// The first claim holds the key, and the shared ones after it up
		// to the first exclusive one, if it is shared.
		for j := range l.queue {
			c := &l.queue[j]
			if j > 0 && !c.r.shared {
				break
			}
			if !c.held {
				c.held = true
				c.r.need--
				if c.r.need == 0 {
					st.granted = append(st.granted, c.r)
				}
			}
			if !c.r.shared {
				break
			}
		}
	}
	st.runGranted()
}

// runGranted tells the owners of the claims granted, in order. A grant
// that releases or acquires adds to the list; the outer call runs it.
func (st *shardState) runGranted() {
	if st.granting {
		return
	}
	st.granting = true
	defer func() { st.granting = false }()
	for i := 0; i < len(st.granted); i++ {
		r := st.granted[i]
		st.granted[i] = nil
		r.owner.granted(st, r.part)
	}
	st.granted = st.granted[:0]
}

// claimed reports whether a key of u is claimed so that u must wait for
// it: by anyone, or, if u only reads, by a writer.
func (st *shardState) claimed(u *unit) bool {
	if len(st.locks) == 0 {
		return false
	}
	found := false
	u.eachKey(func(k []byte) bool {
		l, ok := st.locks[string(k)]
		found = ok && (!u.read || l.exclusive > 0)
		return !found
	})
	return found
}

// keyStrings returns u's keys, distinct.
func (u *unit) keyStrings() []string {
	var ks []string
	u.eachKey(func(k []byte) bool {
		ks = appendDistinct(ks, k)
		return true
	})
	return ks
}

// appendDistinct appends k to ks unless it is there.
func appendDistinct(ks []string, k []byte) []string {
	for _, x := range ks {
		if x == string(k) {
			return ks
		}
	}
	return append(ks, string(k))
}

// eachKey calls fn with each key of u (repeats included) until fn
// returns false.
func (u *unit) eachKey(fn func([]byte) bool) {
	switch u.keys {
	case keyFirst:
		fn(u.argv[1])
	case keyPart:
		fn(u.argv[0])
	case keyAll:
		for _, k := range u.argv[1:] {
			if !fn(k) {
				return
			}
		}
	case keyPairs:
		for i := 1; i < len(u.argv); i += 2 {
			if !fn(u.argv[i]) {
				return
			}
		}
	}
}

// runUnits runs b's units that have not run, on st's db, until their
// replies reach the batch's budget. A unit whose keys are claimed parks
// the batch in their queues: runUnits reports true, and the batch goes on
// once granted (granted), then tells its connection (wake) when it stops.
func (st *shardState) runUnits(b *batch) (parked bool) {
	start := len(b.out)
	for b.ran < len(b.units) && len(b.out)-start < b.budget {
		u := &b.units[b.ran]
		if len(st.locks) > 0 && st.claimed(u) {
			b.lock = lockReq{keys: u.keyStrings(), shared: u.read, owner: b}
			st.waits++
			st.acquire(&b.lock)
			return true
		}
		b.runOne(&st.db)
	}
	return false
}

// runOne runs the batch's next unit.
func (b *batch) runOne(d *db) {
	u := b.units[b.ran]
	off := len(b.out)
	var n int64
	before := d.appends
	b.out, n = u.run(d, u.argv, b.out)
	b.res[b.ran] = result{off, len(b.out), n}
	b.ran++
	if d.appends != before {
		b.logged = true
	}
}

// granted runs the unit that waited, lets its keys go and goes on.
func (b *batch) granted(st *shardState, _ int) {
	b.runOne(&st.db)
	st.release(&b.lock)
	b.lock = lockReq{}
	if !st.runUnits(b) {
		_ = shard.Send(st.srv.g, b.home, b.wake)
	}
}

// A txn is a transaction: one command over keys of several shards, or a
// run of them that a connection pipelined, which then claim their keys
// together and take effect in their order. A run is atomic as a whole, so
// each of its commands is. MSETNX, whose outcome is known only at the
// last shard, ends a run: nothing after it in the run could depend on it;
// MGET ends one too (open).
type txn struct {
	srv   *Server
	cmds  []*txnCmd
	keys  int  // the keys of cmds, repeats included
	write bool // a command writes: the claims are exclusive, else shared
	parts []txnPart
	home  int
	done  func() // on the coordinator's loop, once the replies are known

	rec    aofCapture // the writes, appended to the AOF whole at the last shard (aof.go)
	logged bool       // something was appended to the AOF
}

// A txnCmd is one command of a transaction.
type txnCmd struct {
	cmd   *command
	nx    bool // MSETNX: checks on each shard, then sets if no key exists
	argv  [][]byte
	step  int      // 1: keys; 2: key value pairs
	own   []int    // own[j]: the shard of key j (argv[1+j*step])
	out   []byte   // the replies of the keys' parts (MGET)
	res   []result // res[j]: key j's reply in out, and its count
	n     int64    // the counts added up (DEL, EXISTS)
	exist bool     // MSETNX: a key exists
}

// A txnPart is a transaction's part on one shard.
type txnPart struct {
	shard int
	lock  lockReq
	pairs [][]byte // MSETNX: copies of the shard's keys and values, for the write that goes with the release
}

// Bounds of a run of commands in one transaction.
const (
	txnMaxCmds = 128
	txnMaxKeys = 1024
)

// add adds argv, whose keys' shards are own (more than one), to t.
func (t *txn) add(cmd *command, argv [][]byte, own []int) {
	c := &txnCmd{cmd: cmd, nx: cmd.name == "msetnx", argv: argv, step: 1, own: own, res: make([]result, len(own))}
	if cmd.route == routePairs {
		c.step = 2
	}
	t.cmds = append(t.cmds, c)
	t.keys += len(own)
	t.write = t.write || !cmd.read
}

// open reports whether another command may join t. MSETNX ends a run (see
// txn), and so does MGET, whose reply may be large: a round holds at most
// one such reply beyond its budget (pipeline.go).
func (t *txn) open() bool {
	last := t.cmds[len(t.cmds)-1]
	return !last.nx && last.cmd.comb != combArray && len(t.cmds) < txnMaxCmds && t.keys < txnMaxKeys
}

// start finds the shards, ascending (the order of the claims), and sends
// the transaction to the first.
func (t *txn) start() {
	var shards []int
	for _, c := range t.cmds {
		for _, o := range c.own {
			if !containsInt(shards, o) {
				shards = append(shards, o)
			}
		}
	}
	sortInts(shards)
	t.parts = make([]txnPart, len(shards))
	for i, sh := range shards {
		t.parts[i] = txnPart{shard: sh}
	}
	if shards[0] == t.home {
		t.claim(0) // on the coordinator's loop already
		return
	}
	t.visit(0)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// visit sends the transaction to its part i's shard, where it claims the
// part's keys.
func (t *txn) visit(i int) {
	_ = shard.Send(t.srv.g, t.parts[i].shard, func() { t.claim(i) })
}

// claim claims part i's keys on its shard, the caller's.
func (t *txn) claim(i int) {
	st := t.srv.shards.Local()
	p := &t.parts[i]
	var keys []string
	var seen map[string]struct{}
	for _, c := range t.cmds {
		for j, o := range c.own {
			if o != p.shard {
				continue
			}
			k := c.argv[1+j*c.step]
			if len(keys) < 16 {
				keys = appendDistinct(keys, k)
				continue
			}
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(keys))
				for _, x := range keys {
					seen[x] = struct{}{}
				}
			}
			if _, ok := seen[string(k)]; !ok {
				seen[string(k)] = struct{}{}
				keys = append(keys, string(k))
			}
		}
	}
	p.lock = lockReq{keys: keys, shared: !t.write, owner: t, part: i}
	st.claims++
	st.acquire(&p.lock)
}

// granted does part i under its claim, command by command, then goes on
// to the next shard or finishes.
func (t *txn) granted(st *shardState, i int) {
	p := &t.parts[i]
	d := &st.db
	last := i == len(t.parts)-1
	if d.aof != nil {
		d.capture = &t.rec // keys expired on the way
	}
	for _, c := range t.cmds {
		c.runPart(d, p.shard)
	}
	d.capture = nil
	nx := t.cmds[len(t.cmds)-1]
	if !nx.nx {
		nx = nil
	}
	if !last {
		if nx != nil && !nx.exist {
			p.pairs = nx.pairsOf(p.shard) // the coordinator's buffer may be gone by the write
		}
		t.visit(i + 1)
		return
	}
	// Every part has run. MSETNX's writes go with the releases.
	write := nx != nil && !nx.exist
	if write {
		for j, o := range nx.own {
			if o == p.shard {
				d.setString(nx.argv[1+2*j], nx.argv[2+2*j], false)
			}
		}
	}
	if d.aof != nil {
		// The commands whole, while every key they touch is still held.
		for _, c := range t.cmds {
			if c.wrote() {
				t.rec.add(c.argv)
			}
		}
		if t.rec.ops > 0 {
			d.appendAOF(t.rec.record())
			t.logged = true
		}
	}
	st.release(&p.lock)
	for k := range i {
		_ = shard.Send(t.srv.g, t.parts[k].shard, func() { t.finish(k, write) })
	}
	_ = shard.Send(t.srv.g, t.home, t.done)
}

// finish releases part k's claim on its shard, the caller's, after
// MSETNX's write if write.
func (t *txn) finish(k int, write bool) {
	st := t.srv.shards.Local()
	p := &t.parts[k]
	if write {
		for i := 0; i+1 < len(p.pairs); i += 2 {
			st.db.setString(p.pairs[i], p.pairs[i+1], false)
		}
	}
	st.release(&p.lock)
}

// wrote reports whether the command, all its parts run, wrote: what the
// AOF records.
func (c *txnCmd) wrote() bool {
	switch {
	case c.nx:
		return !c.exist
	case c.cmd.read:
		return false
	case c.cmd.comb == combSum: // DEL
		return c.n > 0
	}
	return true
}

// pairsOf returns copies of the keys and values of shard sh, in order.
func (c *txnCmd) pairsOf(sh int) [][]byte {
	var kv [][]byte
	for j, o := range c.own {
		if o == sh {
			a := 1 + 2*j
			kv = append(kv, append([]byte(nil), c.argv[a]...), append([]byte(nil), c.argv[a+1]...))
		}
	}
	return kv
}

// reply appends the command's reply, on the coordinator's loop.
func (c *txnCmd) reply(out []byte) []byte {
	switch {
	case c.nx && c.exist:
		return appendInt(out, 0)
	case c.nx:
		return appendInt(out, 1)
	}
	switch c.cmd.comb {
	case combArray:
		out = appendArray(out, len(c.res))
		for _, r := range c.res {
			out = append(out, c.out[r.off:r.end]...)
		}
		return out
	case combSum:
		return appendInt(out, c.n)
	}
	return append(out, replyOK...)
}
