package shard

// One-way messages: Send and Update.
//
// A Send made on shard i to shard j is its func value: the lane carries it
// as the message (a func is pointer-shaped, so it fits in the message
// interface without an allocation), shard j calls it, and nothing comes
// back. An Update made on shard i to shard j goes into the batch that lane
// i->j has open (lane.open): a message that carries a list of (fn, arg)
// pairs for one Sharded service. The batch is sealed (pushed on the lane)
// when it is full, when shard i sends anything else to shard j, and at
// shard i's batch boundary; shard j applies every pair to its instance and
// sends the emptied batch back on lane j->i, where shard i keeps it for its
// next batch. So a one-way update costs an append to a list, and a
// batch's trip out and back is paid once for updateBatch updates.
//
// Invariants:
//   - a lane has at most one open batch, owned by its source's loop; while
//     it is open the lane is in its source's dirty list, so the batch
//     boundary seals it;
//   - a lane pushes its open batch before any other message, so the
//     messages and updates one shard sends another arrive in the order they
//     were made;
//   - a batch is owned by one party at a time, like a call (call.go): the
//     source while open or free, the lanes in between, the destination
//     while it applies the updates; back is false on the way out and true
//     on the way back, and the source's free list takes it back;
//   - a panic in an update goes to the destination's panic handler; the
//     updates after it in the batch are still applied;
//   - one-way messages still in a lane when the group has closed are
//     dropped, as work submitted to a closed executor is: there is no
//     future to fail.

import (
	"runtime/debug"

	"github.com/spindle-rt/spindle/alloc"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// updateBatch is how many updates a batch carries at most.
const updateBatch = 64

// oneWay is a Send's message: the function itself.
type oneWay func()

func (f oneWay) deliver(*shard) { f() }

// fail reports the panic of f to the destination's panic handler: a Send
// has no future to carry it.
func (f oneWay) fail(at *shard, err error) { reportFailure(at, err) }

func (oneWay) abandon() {}

// Run runs a Send a shard makes to itself, queued on its own loop.
func (f oneWay) Run() { f() }

// reportFailure hands the panic that err carries to at's panic handler.
func reportFailure(at *shard, err error) {
	if pe, ok := err.(*future.PanicError); ok {
		at.ex.ReportPanic(pe.Value, pe.Stack)
		return
	}
	at.ex.ReportPanic(err, nil)
}

// Send runs fn on shard to's loop without waiting for it and without a
// reply: the one-way form of Call, for work whose result the caller does
// not need (an increment, a cache invalidation, a notification).
//
// Called on the loop of one of g's shards, fn travels the queue from that
// shard to shard to as one message, in the order of the calls, sends and
// updates that shard makes to shard to; the message is fn itself, so Send
// allocates nothing but what fn captures. Called anywhere else it is
// g.Shard(to).Submit(fn). fn runs with an empty async-local frame; a panic
// in it goes to shard to's panic handler.
//
// Send returns executor.ErrClosed when fn will not run: the group is
// shutting down and the caller is none of its shards, or the calling or
// the called shard has closed. Messages still on their way when the group
// closes are dropped. Send panics if to is not a shard of g or fn is nil.
func Send(g *Group, to int, fn func()) error {
	if fn == nil {
		panic("shard: Send with nil func")
	}
	dst := g.shard("send to shard %d", to)
	from, ok := g.Current()
	if !ok {
		if g.state.Load() != stateOpen {
			return executor.ErrClosed
		}
		return dst.exe.Submit(fn)
	}
	src := g.shards[from]
	if src.ex.Closed() || dst.ex.Closed() {
		return executor.ErrClosed
	}
	if dst == src {
		src.selfOpen = nil // later updates must run after fn
		src.ex.PostRunnable(oneWay(fn), nil, 0)
		return nil
	}
	src.send(to, oneWay(fn))
	return nil
}

// Update applies fn to shard to's instance of s, with arg, on shard to's
// loop, one-way: no future and no reply (see Send). It is the cheap way to
// change state that another shard owns when the caller does not need an
// answer, such as counting by key.
//
// Called on the loop of one of the group's shards, updates to shard to are
// gathered and travel in batches, one message for up to 64 of them: a
// batch leaves when it is full, when the calling shard sends shard to
// anything else (so everything one shard sends another still arrives in
// the order it was made), and at the end of the calling loop's batch of
// tasks. fn can then be a function that captures nothing, and an update
// allocates nothing. Called anywhere else, it is Submit on shard to.
// fn runs with an empty async-local frame; a panic in it goes to shard
// to's panic handler, and the updates after it are still applied.
//
// Update returns executor.ErrClosed as Send does. It panics if to is not a
// shard of the group or fn is nil.
func Update[T, A any](s *Sharded[T], to int, arg A, fn func(*T, A)) error {
	if fn == nil {
		panic("shard: Update with nil func")
	}
	g := s.g
	dst := g.shard("update of shard %d", to)
	from, ok := g.Current()
	if !ok {
		if g.state.Load() != stateOpen {
			return executor.ErrClosed
		}
		return dst.exe.Submit(func() { fn(s.local(to), arg) })
	}
	return addUpdate(g.shards[from], dst, s, fn, arg, nil)
}

// addUpdate adds the update fn(arg) of s's instance on shard dst to the
// batch open from src to dst, opening one if need be. l is the lane from
// src to dst if the caller knows it. Loop only (src's).
func addUpdate[T, A any](src, dst *shard, s *Sharded[T], fn func(*T, A), arg A, l *lane) error {
	if src.ex.Closed() || dst.ex.Closed() {
		return executor.ErrClosed
	}
	if dst == src {
		// To its own shard a batch is queued on the loop as soon as it
		// opens, and takes updates until it runs or is full.
		b, ok := src.selfOpen.(*batch[T, A])
		if !ok || b.s != s {
			b = newBatch[T, A](src, s)
			b.self = true
			src.selfOpen = b
			src.ex.PostRunnable(b, nil, 0)
		}
		if b.add(fn, arg) {
			filled(src, nil)
		}
		return nil
	}
	if l == nil {
		l = src.lane(dst.idx)
	}
	b, ok := l.open.(*batch[T, A])
	if !ok || b.s != s {
		if l.open != nil {
			l.seal()
		}
		b = newBatch[T, A](src, s)
		l.open = b
		src.markDirty(l)
	}
	if b.add(fn, arg) {
		filled(src, l)
	}
	return nil
}

// add appends an update to b, and reports whether b is full now.
func (b *batch[T, A]) add(fn func(*T, A), arg A) bool {
	b.items[b.n] = update[T, A]{fn: fn, arg: arg}
	b.n++
	return b.n == updateBatch
}

// filled stops the adding to a batch that is full: the one open on l, or
// with l nil the one src has open to itself.
func filled(src *shard, l *lane) {
	if l != nil {
		l.seal()
	} else {
		src.selfOpen = nil
	}
}

// Updater makes Update's one-way updates of a Sharded service's instances
// with one function, from the loop of one shard, for a caller that makes
// many: it has looked up once what each Update looks up (the calling shard
// and the lanes to the others), so an update costs little more than
// storing its argument. Make one with NewUpdater on the shard's loop and
// use it there only.
//
// The updater remembers, for each destination, the batch it last added an
// update to (last). While that batch is still the one open to the
// destination (the lane's, or the shard's own selfOpen: see where) and
// still for the updater's service, the next update goes straight into it;
// otherwise, and for every check that can fail (a closed shard, a full
// batch), Update takes the general path, addUpdate.
type Updater[T, A any] struct {
	s     *Sharded[T]
	fn    func(*T, A)
	src   *shard
	dests []updaterDest[T, A] // by shard index
}

// updaterDest is what an Updater keeps for one destination.
type updaterDest[T, A any] struct {
	where *message     // where its open batch is kept: &lane.open, or &src.selfOpen
	last  *batch[T, A] // the batch last added to; may have been sealed since
	lane  *lane        // to it; nil for the updater's own shard
	dst   *shard
}

// NewUpdater returns an Updater of s's instances with fn for the shard
// whose loop calls it. It panics off the loops of s's group, or if fn is
// nil.
func NewUpdater[T, A any](s *Sharded[T], fn func(*T, A)) *Updater[T, A] {
	if fn == nil {
		panic("shard: NewUpdater with nil func")
	}
	from, ok := s.g.Current()
	if !ok {
		panic("shard: NewUpdater called off the group's loops; use Update")
	}
	u := &Updater[T, A]{s: s, fn: fn, src: s.g.shards[from], dests: make([]updaterDest[T, A], s.g.Len())}
	for i := range u.dests {
		d := &u.dests[i]
		d.dst = s.g.shards[i]
		if i != from {
			d.lane = u.src.lane(i)
			d.where = &d.lane.open
		} else {
			d.where = &u.src.selfOpen
		}
	}
	return u
}

// Update is shard.Update(s, to, arg, fn) for the updater's s and fn. It
// must be called on the loop of the shard that made the updater; it panics
// elsewhere, or if to is not a shard of the group.
func (u *Updater[T, A]) Update(to int, arg A) error {
	src := u.src
	if !src.ex.OnLoop() {
		panic("shard: Updater.Update called off the loop of the shard that made it")
	}
	if uint(to) < uint(len(u.dests)) {
		// The open batch is never full: addUpdate seals a batch (or, for
		// the shard's own, stops adding to it) as it fills up.
		d := &u.dests[to]
		if b, ok := (*d.where).(*batch[T, A]); ok && b == d.last && b.s == u.s &&
			!src.ex.Closed() && !d.dst.ex.Closed() {
			if b.add(u.fn, arg) {
				d.last = nil
				filled(src, d.lane)
			}
			return nil
		}
	}
	return u.update(to, arg)
}

// update is Update's general path: addUpdate, then it remembers the batch
// the update went into if that batch is still open.
func (u *Updater[T, A]) update(to int, arg A) error {
	dst := u.src.g.shard("update of shard %d", to)
	d := &u.dests[to]
	if err := addUpdate(u.src, dst, u.s, u.fn, arg, d.lane); err != nil {
		return err
	}
	d.last, _ = (*d.where).(*batch[T, A])
	return nil
}

// newBatch takes an empty batch of updates to s's instances from src's
// free list. Loop only.
func newBatch[T, A any](src *shard, s *Sharded[T]) *batch[T, A] {
	fl := freeList[batch[T, A]](src)
	b := fl.Get()
	b.s, b.from, b.fl = s, src, fl
	return b
}

// update is one update in a batch.
type update[T, A any] struct {
	fn  func(*T, A)
	arg A
}

// batch is a message of updates to one Sharded service's instance.
type batch[T, A any] struct {
	s     *Sharded[T]
	from  *shard
	fl    *alloc.FreeList[batch[T, A]] // the source's, which takes the batch back
	items [updateBatch]update[T, A]
	n     int  // updates in items
	next  int  // destination-owned: the index of the update being applied
	back  bool // on its way back to its source
	self  bool // a batch a shard queued for its own instance, on its own loop
}

// Run applies a batch a shard queued for its own instance and gives it
// back to the free list; from now on updates go to a new batch.
func (b *batch[T, A]) Run() {
	at := b.from
	if at.selfOpen == message(b) {
		at.selfOpen = nil
	}
	inst := b.s.local(at.idx)
	for b.next = 0; b.next < b.n; b.next++ {
		u := &b.items[b.next]
		u.fn(inst, u.arg)
	}
	b.recycle()
}

// CatchPanic reports the panic of the update at b.next of a batch a shard
// queued for its own instance, and applies the rest, each guarded.
func (b *batch[T, A]) CatchPanic(v any, stack []byte) {
	at := b.from
	at.ex.ReportPanic(v, stack)
	inst := b.s.local(at.idx)
	for _, u := range b.items[b.next+1 : b.n] {
		applyGuarded(at, inst, u)
	}
	b.recycle()
}

// recycle empties b and gives it back to its source's free list. Source
// only.
func (b *batch[T, A]) recycle() {
	b.fl.Put(b) // zeroes it
}

func (b *batch[T, A]) deliver(at *shard) {
	if b.back {
		b.recycle()
		return
	}
	inst := b.s.local(at.idx)
	for b.next = 0; b.next < b.n; b.next++ {
		u := &b.items[b.next]
		u.fn(inst, u.arg)
	}
	b.reply(at)
}

// fail reports the panic of the update at b.next and applies the rest,
// each guarded.
func (b *batch[T, A]) fail(at *shard, err error) {
	reportFailure(at, err)
	inst := b.s.local(at.idx)
	for _, u := range b.items[b.next+1 : b.n] {
		applyGuarded(at, inst, u)
	}
	b.reply(at)
}

// applyGuarded applies u; a panic in it goes to at's panic handler.
func applyGuarded[T, A any](at *shard, inst *T, u update[T, A]) {
	defer func() {
		if v := recover(); v != nil {
			at.ex.ReportPanic(v, debug.Stack())
		}
	}()
	u.fn(inst, u.arg)
}

// reply sends b back to its source, which zeroes it as it recycles it.
// Destination only. The destination leaves the updates in place: clearing
// them here wrote every cache line of the batch on the destination's core,
// and the source's next updates into it then waited for each line to come
// back (a fifth of counter_sharded's time); the source zeroes the batch in
// one sweep instead, and the updates stay referenced only for the trip
// back.
func (b *batch[T, A]) reply(at *shard) {
	b.back = true
	at.send(b.from.idx, b)
}

func (*batch[T, A]) abandon() {}
