package main

// A connection: its input, its output and its end.
//
// A connection belongs to the shard whose listener accepted it, and all of
// its state is touched only by that shard's loop. It reads with PollRecv
// (waiting for input costs no future), hands what it reads to its
// pipeline (pipeline.go) and writes the replies of each round in one
// Write. Its output is bounded by backpressure, as Redis bounds it by its
// output buffer limits:
//
//   - once more than Config.OutputHighWater reply bytes wait for the peer
//     (Conn.Buffered), the connection stops: it reads nothing and runs none
//     of the requests already read until the output is flushed (it awaits
//     Conn.Flush), so a client that sends without reading holds back only
//     itself, through TCP, and holds about the high-water mark plus one
//     round of replies;
//   - a connection whose peer takes none of its output for
//     Config.OutputTimeout is closed, wherever that output waits: in the
//     connection's buffer (Conn.Buffered) or in the kernel's send buffer,
//     not yet acknowledged by the peer (Conn.Unacked). A check runs every
//     quarter of the timeout while output waits, and the connection is
//     closed after four checks in a row that found no byte more taken;
//   - with Config.OutputLimit set, more reply bytes than that waiting
//     closes the connection at once.
//
// A connection ends in one of three ways: the peer closes or fails
// (close); the server closes it (QUIT, a protocol error, shutdown): it
// answers every request it has read, shuts its write side once the replies
// are out, and reads and drops what the peer still sends until the peer
// closes or Config.Linger passes (linger), so that the peer receives
// every reply and then the end of the stream, never a reset; or at once
// (abort: Close, the limits).
//
// Invariants: state says what the connection waits for. Only an idle
// connection reads; a busy one waits for its batches (pl.waiting) or for
// its output to drain; a lingering one only drops input; a closed one
// does nothing, and the callbacks still due to it return at once.

import (
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

type connState uint8

const (
	stIdle   connState = iota // reading, or waiting for input
	stBusy                    // waiting for batches or for the output to drain
	stLinger                  // replies out, write side shut: dropping input until the peer closes
	stClosed
)

// client is a connection's state. An idle connection that has sent
// nothing costs this struct and what netio keeps for it.
type client struct {
	srv      *Server
	conn     *netio.Conn
	home     *shardState // the connection's shard
	id       uint64
	name     string
	state    connState
	pl       *pipeline             // made with the first bytes received
	onReady  func()                // ready, made once (Wake posts it)
	onSynced func(struct{}, error) // synced, made once
	prev     *client               // the shard's list of connections
	next     *client

	timer *executor.Timer // the linger
	stall *executor.Timer // the output timeout's next check, while output waits for the peer
	lineT *executor.Timer // a line past 64 KB whose rest has not arrived: lineGrace
	wrote int64           // reply bytes written
	taken int64           // of them, those the peer had taken at the last check
	still int             // checks in a row that found no byte more taken
}

func (s *Server) serve(conn *netio.Conn) {
	st := s.shards.Local()
	conn.SetOutputLimit(0) // the server's own policy bounds the output (above)
	s.live.Add(1)
	c := &client{srv: s, conn: conn, home: st, id: s.ids.Add(1)}
	c.onReady = c.ready
	c.onSynced = c.synced
	st.add(c)
	c.recv() // shutting down already: it lingers, and its peer reads the end of the stream
}

// maxRounds bounds how many receives in a row one connection handles
// before it lets the loop's other work run.
const maxRounds = 16

// Wake is netio's signal that input may have arrived (executor.Waker): it
// runs ready as a task of its own, outside netio's call.
func (c *client) Wake() {
	if plantedBugs.lostWake && c.pl != nil && len(c.pl.pend) > 0 {
		return // planted: a wake-up for a connection with a partial request is lost
	}
	c.home.ex.Post(c.onReady)
}

func (c *client) ready() {
	switch c.state {
	case stIdle:
		c.recv()
	case stLinger:
		c.discard()
	}
}

// recv reads and handles the connection's input for as long as it is
// there and its rounds finish at once, then waits: for netio's Wake when
// nothing is readable, for the shards or the output otherwise.
func (c *client) recv() {
	for range maxRounds {
		if c.state != stIdle {
			return
		}
		if c.srv.draining.Load() {
			c.linger() // shutting down: every request read is answered
			return
		}
		data, ok, err := c.conn.PollRecv(c)
		if !ok && err == nil {
			if c.pl != nil && c.pl.stalled() && c.lineT == nil {
				fed := c.pl.fed
				c.lineT = c.home.ex.AfterFunc(lineGrace, func() {
					c.lineT = nil
					switch {
					case c.state != stIdle:
						// Busy: it reads again, and waits again, once done.
					case c.pl.refuseLine(fed):
						c.pump() // the line redis-server refuses: its error, then the close
					case fed != c.pl.fed:
						// More of the line came within the grace: the
						// newest bytes get theirs (no wake-up may come).
						c.recv()
					}
				})
			}
			return // Wake comes when input may have arrived
		}
		if err != nil {
			if c.pl != nil && c.pl.stalled() && c.pl.refuseLine(c.pl.fed) {
				// The peer closed its side after a line redis-server
				// refuses at the read that found its last bytes.
				c.pump()
				return
			}
			c.close() // the peer closed or failed
			return
		}
		if c.pl == nil {
			c.pl = newPipeline(c)
		}
		if !c.pl.feed(data) {
			c.abort() // past the query buffer limit
			return
		}
		if !c.pump() {
			return
		}
	}
	c.home.ex.Post(c.onReady) // let the others have the loop
}

// pump runs the pipeline as far as it goes without waiting: rounds of the
// requests read, their replies written, as long as the output allows. It
// reports whether the connection may read on; if not, it waits (for its
// batches, its output or its peer's close) or is closed.
func (c *client) pump() bool {
	pl := c.pl
	for {
		if pl.pending() {
			if pl.mustSync() {
				// appendfsync always: the replies once the writes are on disk.
				c.state = stBusy
				c.srv.aof.file.Sync(c.home.ex).OnComplete(c.onSynced)
				return false
			}
			if !c.write(pl.combine()) {
				return false
			}
			pl.out = shrink(pl.out) // written: netio holds a copy
			if pl.pending() {       // units left on shards that stopped at the budget
				if c.held() {
					return false
				}
				if pl.send() {
					c.state = stBusy
					return false
				}
				continue
			}
		}
		if pl.round {
			pl.endRound()
		}
		if pl.quit {
			if pl.cut {
				c.abort()
			} else {
				c.linger()
			}
			return false
		}
		if c.held() || !pl.more {
			return !pl.more && c.state == stIdle
		}
		pl.parse()
		if pl.send() {
			c.state = stBusy
			return false
		}
	}
}

// batchDone runs when a batch comes back from its shard.
func (c *client) batchDone(err error) {
	c.pl.waiting--
	if c.state == stClosed {
		return
	}
	if err != nil {
		c.abort() // the shard closed
		return
	}
	if c.pl.waiting == 0 {
		c.resume()
	}
}

// resume goes on once what the connection waited for has come.
func (c *client) resume() {
	c.state = stIdle
	if c.pump() {
		c.recv()
	}
}

// write writes a round's replies.
func (c *client) write(out []byte) bool {
	if len(out) == 0 {
		return true
	}
	if _, err := c.conn.Write(out); err != nil {
		c.abort()
		return false
	}
	if limit := c.srv.cfg.OutputLimit; limit > 0 && c.conn.Buffered() > limit {
		c.abort()
		return false
	}
	c.wrote += int64(len(out))
	if c.stall == nil && c.srv.cfg.OutputTimeout > 0 {
		c.taken, c.still = c.wrote-c.unsent(), 0
		c.stall = c.home.ex.AfterFunc(c.srv.cfg.OutputTimeout/stallChecks, c.checkStall)
	}
	return true
}

// stallChecks is how many checks in a row, a quarter of the output timeout
// apart, must find no byte of output taken before the connection is
// closed: it is closed between one and one and a quarter timeouts after
// its peer stopped reading.
const stallChecks = 4

// unsent returns the reply bytes the peer has not taken: those waiting
// in the connection's buffer and those the kernel took and the peer has
// not acknowledged.
func (c *client) unsent() int64 { return int64(c.conn.Buffered() + c.conn.Unacked()) }

// checkStall is the output timeout's check: while output waits for the
// peer it runs every quarter of the timeout, and closes the connection
// once stallChecks checks in a row found no byte more taken. Once
// everything has been taken it stops; the next write starts it again.
func (c *client) checkStall() {
	c.stall = nil
	if c.state == stLinger || c.state == stClosed {
		return
	}
	unsent := c.unsent()
	if unsent == 0 {
		return
	}
	if taken := c.wrote - unsent; taken > c.taken {
		c.taken, c.still = taken, 0
	} else if c.still++; c.still >= stallChecks {
		c.abort() // the peer took nothing for the output timeout
		return
	}
	c.stall = c.home.ex.AfterFunc(c.srv.cfg.OutputTimeout/stallChecks, c.checkStall)
}

// held reports whether the output is past the high-water mark; if so the
// connection waits until it has drained.
func (c *client) held() bool {
	if c.conn.Buffered() < c.srv.cfg.OutputHighWater {
		return false
	}
	c.state = stBusy
	c.conn.Flush().OnComplete(c.flushed)
	return true
}

// synced goes on once the AOF's sync that the round's replies waited for
// is done; if it failed, the connection closes without them: they are
// not on disk.
func (c *client) synced(_ struct{}, err error) {
	switch {
	case c.state == stClosed:
	case err != nil:
		logSyncError(err)
		c.abort()
	default:
		c.pl.synced = true
		c.resume()
	}
}

func (c *client) flushed(_ struct{}, err error) {
	switch {
	case c.state == stClosed:
	case err != nil:
		c.close()
	default:
		c.resume()
	}
}

func (c *client) stopTimers() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.stall != nil {
		c.stall.Stop()
		c.stall = nil
	}
	if c.lineT != nil {
		c.lineT.Stop()
		c.lineT = nil
	}
}

// drain is the server's shutdown reaching the connection: an idle one
// lingers now, a busy one once it has answered what it has read.
func (c *client) drain() {
	if c.state == stIdle {
		c.linger()
	}
}

// linger ends the connection from the server's side: the write side shut
// once the replies are out, then the peer's input dropped until it closes
// or the linger time passes.
func (c *client) linger() {
	if c.state == stLinger || c.state == stClosed {
		return
	}
	c.state = stLinger
	c.stopTimers() // the linger bounds the rest
	if c.conn.CloseWrite() != nil {
		c.close()
		return
	}
	c.timer = c.home.ex.AfterFunc(c.srv.cfg.Linger, c.lingered)
	c.discard()
}

func (c *client) lingered() {
	c.timer = nil
	c.close()
}

// discard drops what a lingering connection receives, until the peer
// closes.
func (c *client) discard() {
	for range maxRounds {
		if c.state != stLinger {
			return
		}
		_, ok, err := c.conn.PollRecv(c)
		if err != nil {
			c.close()
			return
		}
		if !ok {
			return
		}
	}
	c.home.ex.Post(c.onReady)
}

// close closes the connection; netio still sends the output written.
func (c *client) close() {
	if c.state == stClosed {
		return
	}
	c.state = stClosed
	c.stopTimers()
	if c.pl != nil {
		c.pl.multi = nil
		c.pl.unwatch()
	}
	c.conn.Close()
	c.home.remove(c)
	if c.srv.live.Add(-1) == 0 && c.srv.draining.Load() {
		c.srv.markDrained()
	}
}

// abort closes the connection at once, its unsent output dropped.
func (c *client) abort() {
	if c.state != stClosed {
		c.conn.SetLinger(0)
	}
	c.close()
}
