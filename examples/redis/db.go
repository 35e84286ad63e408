package main

// The keyspace: one db per shard, touched only by its shard's loop.
//
// Invariants:
//   - a key is in at most one of strs and objs; strs holds the string
//     values (the common case: one allocation per key holds the key, the
//     value's length and the value, and the map's value is a pointer to
//     the length, so a slot is 24 bytes), objs the lists, sets, hashes
//     and sorted sets;
//   - expires holds the keys of strs or objs that have a time to live
//     (absolute, in Unix milliseconds) and no other: a key leaves expires
//     when it is deleted, overwritten by SET without KEEPTTL, or PERSISTed;
//   - a key whose time has come is gone for every command: lookups delete
//     it on access (lazy expiry), and the shard's expiry timer samples
//     expires and deletes what it finds expired (active expiry), so keys
//     nobody reads again do not stay in memory;
//   - every write of a key, and its deletion (expiry included), touches
//     it (touch): the connections that WATCH it learn that it changed, as
//     Redis's signalModifiedKey tells them. The setters below touch; the
//     commands that change a list, set, hash or sorted set in place touch
//     when they change it.

import (
	"container/heap"
	"encoding/binary"

	"time"
	"unsafe"
)

type db struct {
	strs    map[string]*byte // see newEntry
	objs    map[string]any   // *list, set, hash or *zset
	expires map[string]int64
	clock   func() int64           // now, in Unix milliseconds
	expired uint64                 // keys deleted because their time had come
	shard   *shardState            // the shard that owns the db
	watched map[string][]*watchSet // the keys connections WATCH, and theirs (multi.go)

	aof     *aofLog     // the AOF the writes go to; nil: none, or loading (aof.go)
	capture *aofCapture // a transaction's record being built: the writes go there
	scratch []byte      // a write's record
	appends uint64      // records appended to the file by this shard's loop
}

func (d *db) init(clock func() int64) {
	d.strs, d.objs, d.expires, d.clock = map[string]*byte{}, map[string]any{}, map[string]int64{}, clock
}

func (d *db) keys() int { return len(d.strs) + len(d.objs) }

// newEntry lays out a string key and its value in one allocation, the
// key, then the value's length (4 bytes, little-endian), then the value.
// It returns the key, as a string over the allocation, and a pointer to
// the length, from which value reads the value back. Both strings are
// sound because nothing writes the allocation after newEntry returns: a
// new value for the key is a new entry, and the old one is left to the
// collector while any string made from it lives.
func newEntry(key, val []byte) (string, *byte) {
	b := make([]byte, len(key)+4+len(val))
	copy(b, key)
	binary.LittleEndian.PutUint32(b[len(key):], uint32(len(val)))
	copy(b[len(key)+4:], val)
	var k string
	if len(key) > 0 {
		k = unsafe.String(&b[0], len(key))
	}
	return k, &b[len(key)]
}

// value returns the value of an entry made by newEntry.
func value(p *byte) string {
	n := binary.LittleEndian.Uint32(unsafe.Slice(p, 4))
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(p), 4)), n)
}

// expireIfNeeded deletes key if its time has come.
func (d *db) expireIfNeeded(key []byte) {
	if len(d.expires) == 0 {
		return
	}
	if at, ok := d.expires[string(key)]; ok && at <= d.clock() {
		d.expireKey(key)
	}
}

// expireKey deletes key, whose time has come, and propagates it as a DEL,
// as redis-server does.
func (d *db) expireKey(key []byte) {
	d.delete(key)
	d.expired++
	d.propagate([][]byte{cmdDEL, key})
}

var cmdDEL = []byte("DEL")

// getString returns key's string value. wrong is true if key holds
// another type.
func (d *db) getString(key []byte) (v string, found, wrong bool) {
	d.expireIfNeeded(key)
	if p, ok := d.strs[string(key)]; ok {
		return value(p), true, false
	}
	if len(d.objs) > 0 {
		if _, ok := d.objs[string(key)]; ok {
			return "", false, true
		}
	}
	return "", false, false
}

// getObj returns key's object if it holds one; wrong is true if it holds
// a string.
func (d *db) getObj(key []byte) (o any, wrong bool) {
	d.expireIfNeeded(key)
	if len(d.objs) > 0 {
		if o, ok := d.objs[string(key)]; ok {
			return o, false
		}
	}
	_, wrong = d.strs[string(key)]
	return nil, wrong
}

func (d *db) exists(key []byte) bool {
	d.expireIfNeeded(key)
	if _, ok := d.strs[string(key)]; ok {
		return true
	}
	_, ok := d.objs[string(key)]
	return ok
}

// setString sets key to val, a new string value, dropping any object the
// key held. The time to live is cleared unless keepTTL.
func (d *db) setString(key, val []byte, keepTTL bool) {
	if keepTTL {
		d.expireIfNeeded(key) // a time that has passed is not kept: the key is new
	}
	if len(d.objs) > 0 {
		delete(d.objs, string(key))
	}
	if !keepTTL && len(d.expires) > 0 {
		delete(d.expires, string(key))
	}
	k, v := newEntry(key, val)
	d.strs[k] = v
	d.touch(key)
}

func (d *db) setObj(key []byte, o any) {
	d.objs[string(key)] = o
	d.touch(key)
}

// touch tells the connections that WATCH key that it was written or
// deleted (multi.go); it costs a length check when nobody watches.
func (d *db) touch(key []byte) {
	if len(d.watched) > 0 {
		d.touchWatched(key)
	}
}

// present reports whether key is in the db, its time come or not.
func (d *db) present(key []byte) bool {
	if _, ok := d.strs[string(key)]; ok {
		return true
	}
	_, ok := d.objs[string(key)]
	return ok
}

// expiredNow reports whether key's time has come (it may still be there).
func (d *db) expiredNow(key []byte) bool {
	at, ok := d.expires[string(key)]
	return ok && at <= d.clock()
}

// delete removes key; it reports whether it was there.
func (d *db) delete(key []byte) bool {
	if len(d.expires) > 0 {
		delete(d.expires, string(key))
	}
	if _, ok := d.strs[string(key)]; ok {
		delete(d.strs, string(key))
		d.touch(key)
		return true
	}
	if _, ok := d.objs[string(key)]; ok {
		delete(d.objs, string(key))
		d.touch(key)
		return true
	}
	return false
}

// ttl returns key's expiry time, 0 if it has none; found is false if key
// does not exist.
func (d *db) ttl(key []byte) (at int64, found bool) {
	if !d.exists(key) {
		return 0, false
	}
	return d.expires[string(key)], true
}

// setExpire sets the expiry time of key, which exists. A time that has
// passed deletes key.
func (d *db) setExpire(key []byte, at int64) {
	if at <= d.clock() {
		d.delete(key)
		return
	}
	d.expires[string(key)] = at
	d.touch(key)
}

func (d *db) persist(key []byte) bool {
	if !d.exists(key) {
		return false
	}
	if _, ok := d.expires[string(key)]; !ok {
		return false
	}
	delete(d.expires, string(key))
	d.touch(key)
	return true
}

func (d *db) flush() {
	var gone [][]byte // the watched keys the flush deletes
	for k := range d.watched {
		if b := []byte(k); d.present(b) {
			gone = append(gone, b)
		}
	}
	d.strs = map[string]*byte{}
	d.objs = map[string]any{}
	d.expires = map[string]int64{}
	for _, k := range gone {
		d.touch(k)
	}
}

// Active expiry, as Redis's activeExpireCycle: every tick, sample up to
// expireSample keys with a time to live, delete the expired ones, and go
// on sampling while more than a quarter of a sample had expired, within a
// time budget per tick. Go's map iteration starts at a random place, so
// a range over expires that stops early is a random sample.
const (
	expireSample = 20
	expireBudget = time.Millisecond
)

// expireCycle runs one tick of active expiry and returns how many keys it
// deleted.
func (d *db) expireCycle() int {
	if len(d.expires) == 0 {
		return 0
	}
	deadline := time.Now().Add(expireBudget)
	total := 0
	var victims [expireSample]string
	for {
		now := d.clock()
		n, sampled := 0, 0
		for k, at := range d.expires {
			if at <= now {
				victims[n] = k
				n++
			}
			sampled++
			if sampled == expireSample {
				break
			}
		}
		for _, k := range victims[:n] {
			d.expireKey(unsafe.Slice(unsafe.StringData(k), len(k)))
		}
		total += n
		if n*4 <= sampled || len(d.expires) == 0 || time.Now().After(deadline) {
			return total
		}
	}
}

// A list is a deque of values.
type list struct {
	buf  []string
	head int
	n    int
}

func (l *list) at(i int) string { return l.buf[(l.head+i)&(len(l.buf)-1)] }

func (l *list) grow() {
	size := len(l.buf) * 2
	if size == 0 {
		size = 4
	}
	nb := make([]string, size)
	for i := 0; i < l.n; i++ {
		nb[i] = l.at(i)
	}
	l.buf, l.head = nb, 0
}

func (l *list) pushFront(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = v
	l.n++
}

func (l *list) pushBack(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = v
	l.n++
}

func (l *list) popFront() string {
	v := l.buf[l.head]
	l.buf[l.head] = ""
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	l.shrink()
	return v
}

func (l *list) popBack() string {
	i := (l.head + l.n - 1) & (len(l.buf) - 1)
	v := l.buf[i]
	l.buf[i] = ""
	l.n--
	l.shrink()
	return v
}

// shrink gives memory back once the list has shrunk to an eighth of its
// buffer.
func (l *list) shrink() {
	if len(l.buf) > 64 && l.n < len(l.buf)/8 {
		nb := make([]string, len(l.buf)/4)
		for i := 0; i < l.n; i++ {
			nb[i] = l.at(i)
		}
		l.buf, l.head = nb, 0
	}
}

type set map[string]struct{}

// A hash keeps its fields in the order they were first set, the order in
// which redis-server's listpack encoding (small hashes) gives them back.
type hash struct {
	m      map[string]string
	fields []string
}

func newHash() *hash { return &hash{m: map[string]string{}} }

// set sets field to v and reports whether field is new.
func (h *hash) set(field, v string) bool {
	_, ok := h.m[field]
	if !ok {
		h.fields = append(h.fields, field)
	}
	h.m[field] = v
	return !ok
}

// A zset is a sorted set: members with scores, in order of score then
// member. It supports what ZADD, ZCARD and ZPOPMIN need: a heap ordered as
// the set, whose entries go stale when their member is updated or
// removed (each member's current entry is the one with its generation),
// compacted when stale entries outnumber live ones.
type zset struct {
	members map[string]zmember
	h       zheap
	gen     uint64
}

type zmember struct {
	score float64
	gen   uint64
}

type zentry struct {
	score  float64
	member string
	gen    uint64
}

type zheap []zentry

func (h zheap) Len() int { return len(h) }
func (h zheap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score < h[j].score
	}
	return h[i].member < h[j].member
}
func (h zheap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *zheap) Push(x any)   { *h = append(*h, x.(zentry)) }
func (h *zheap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newZset() *zset { return &zset{members: map[string]zmember{}} }

// add sets member's score and reports whether member is new, and whether
// the set changed (a new member, or a new score).
func (z *zset) add(member string, score float64) (isNew, changed bool) {
	old, ok := z.members[member]
	if ok && old.score == score {
		return false, false
	}
	z.gen++
	z.members[member] = zmember{score, z.gen}
	heap.Push(&z.h, zentry{score, member, z.gen})
	if len(z.h) > 2*len(z.members)+16 {
		z.compact()
	}
	return !ok, true
}

func (z *zset) compact() {
	live := z.h[:0]
	for _, e := range z.h {
		if m, ok := z.members[e.member]; ok && m.gen == e.gen {
			live = append(live, e)
		}
	}
	clear(z.h[len(live):])
	z.h = live
	heap.Init(&z.h)
}

// popMin removes and returns the first member.
func (z *zset) popMin() (zentry, bool) {
	for len(z.h) > 0 {
		e := heap.Pop(&z.h).(zentry)
		if m, ok := z.members[e.member]; ok && m.gen == e.gen {
			delete(z.members, e.member)
			return e, true
		}
	}
	return zentry{}, false
}
