package netio

// The per-loop reactor state every backend shares.
//
// Invariants:
//   - a reactor belongs to one loop and is loop-owned: it is made by the
//     first listener or connection attached on that loop (reactorOf, under
//     the loop's Local table) and every field is read and written only by
//     the goroutine that holds that loop;
//   - dirty holds exactly the connections whose dirty flag is set: those
//     written to (or flushed, or closing) since the last batch boundary.
//     The reactor is one of the loop's flushers, so at every batch
//     boundary each dirty connection hands its output to the kernel (one
//     write per connection for everything the batch wrote);
//   - the pools hold only buffers no connection refers to: a connection
//     takes a read buffer when bytes may be read and gives it back when a
//     receive finds nothing, and takes an output buffer when it is written
//     to and gives it back once the output has drained. A buffer that grew
//     past its class size for a burst is never pooled, so buffers shrink
//     back once the burst is over;
//   - every attached connection is in the backend's table of sockets until
//     it is released; when the executor closes, the reactor's one close
//     watch closes them all (what is pending fails with
//     executor.ErrClosed), sets closed so that nothing more is attached,
//     and closes the backend's own descriptors.

import (
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/loop"
)

// writeBufSize is an output buffer's first size; it grows for a burst
// (the read buffers' sizes are the contract's, backend_conn.go).
const writeBufSize = 4 << 10

type reactorKey struct{}

// reactor is a loop's netio state.
type reactor struct {
	reactorIO // what a backend may read (backend_conn.go)
	ex        *executor.Executor
	rfree     [][]byte
	wfree     [][]byte
	dirty     []*Conn
	spare     []*Conn
	conns     int  // connections attached and not yet released
	closed    bool // the executor has closed: no connection is attached any more
	watch     loop.CloseWatch
	stats     *counters
	sfFree    []*fileOut // SendFiles that finished whole, for the next (sendfile.go)

	// Shutdown (drain.go)
	draining  bool                   // the executor drains: no accept, no read for a receive
	listeners map[*Listener]struct{} // those accepting on this loop, closed when the drain begins
}

// reactorWatch is how the reactor hears that its executor closes: it
// closes every connection at once (what is pending fails with
// executor.ErrClosed), then its own descriptors. One watch serves every
// connection of the loop, so a connection costs no entry of its own.
type reactorWatch reactor

func (w *reactorWatch) Interrupt(error) {
	r := (*reactor)(w)
	if r.closed {
		return // told twice: by its own watch and by the loop's ring (uring_ring.go)
	}
	r.closed = true
	for _, c := range r.be.conns(r) {
		c.interrupt()
	}
	r.be.shut(r)
}

// Flush hands the output of every dirty connection to the kernel: the
// loop calls it at every batch boundary.
func (r *reactor) Flush() {
	if !r.draining && r.lp.Closing() {
		r.beginDrain()
	}
	if len(r.dirty) > 0 {
		d := r.dirty
		r.dirty = r.spare[:0]
		for i, c := range d {
			d[i] = nil
			c.dirty = false
			if !c.released {
				c.seal()
				r.be.flushOut(c)
			}
		}
		r.spare = d[:0]
	}
}

// readNow is r.be.readNow.
func (r *reactor) readNow(c *Conn) (int, error, bool) { return r.be.readNow(c) }

// pop takes a buffer from a pool, or returns nil.
func pop(pool *[][]byte) []byte {
	n := len(*pool)
	if n == 0 {
		return nil
	}
	b := (*pool)[n-1]
	(*pool)[n-1] = nil
	*pool = (*pool)[:n-1]
	return b
}

// getW returns an empty output buffer.
func (r *reactor) getW() []byte {
	if b := pop(&r.wfree); b != nil {
		return b
	}
	return make([]byte, 0, writeBufSize)
}
