package main

// A shard's part of the server: its keyspace (db) and its bookkeeping:
// the connections it serves, its counters, its expiry timer. Everything
// here is touched only by the shard's own loop.
//
// Invariants: clients lists exactly the connections of this shard that
// are not closed (conns is its length); stopped is set once, by drain, and
// then the expiry timer is not armed again.

import (
	"github.com/spindle-rt/spindle/executor"
)

// shardState is one shard's state, made on its own loop (shard.Sharded).
type shardState struct {
	srv   *Server
	index int                // the shard's index in the group
	ex    *executor.Executor // the shard's executor
	db    db                 // the keys this shard owns

	clients *client // the connections this shard serves, through client.prev and next
	conns   int     // connections open
	total   uint64  // connections accepted
	cmds    uint64  // commands received by this shard's connections
	remote  uint64  // batches run here for other shards' connections
	claims  uint64  // transactions' claims taken here
	waits   uint64  // times a batch waited here for keys claimed

	timer   *executor.Timer // the active expiry's next tick
	stopped bool            // draining: no more ticks

	locks     map[string]*keyLock // the keys claimed, by transactions or by commands waiting for them (txn.go)
	granted   []*lockReq          // claims granted, their owners not yet told
	granting  bool                // runGranted is telling them
	freeLocks []*keyLock          // queues for keys to claim, kept for reuse
}

func newShardState(s *Server, i int) *shardState {
	st := &shardState{srv: s, index: i, ex: s.g.Shard(i)}
	clock := s.cfg.Clock
	if clock == nil {
		ex := st.ex
		clock = func() int64 { return ex.Now().UnixMilli() }
	}
	st.db.init(clock)
	st.db.shard = st
	if !s.cfg.AppendOnly {
		st.startExpiry()
	} // else once the AOF is loaded (OpenAOF): nothing touches the db meanwhile
	return st
}

// startExpiry arms the active expiry's timer.
func (st *shardState) startExpiry() {
	if !st.stopped {
		st.timer = st.ex.AfterFunc(st.srv.cfg.ExpireInterval, st.tick)
	}
}

// tick runs one cycle of active expiry and arms the next.
func (st *shardState) tick() {
	if st.stopped {
		return
	}
	st.db.expireCycle()
	st.timer = st.ex.AfterFunc(st.srv.cfg.ExpireInterval, st.tick)
}

// add records a new connection.
func (st *shardState) add(c *client) {
	st.conns++
	st.total++
	c.next = st.clients
	if c.next != nil {
		c.next.prev = c
	}
	st.clients = c
}

// remove forgets a closed connection.
func (st *shardState) remove(c *client) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		st.clients = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
	st.conns--
}

// drain stops the expiry timer and tells every connection that the server
// is shutting down.
func (st *shardState) drain() {
	st.stopped = true
	if st.timer != nil {
		st.timer.Stop()
	}
	for c := st.clients; c != nil; {
		next := c.next // c may leave the list
		c.drain()
		c = next
	}
}

// closeAll closes every connection at once.
func (st *shardState) closeAll() {
	for c := st.clients; c != nil; {
		next := c.next
		c.abort()
		c = next
	}
}
