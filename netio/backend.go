package netio

// The backend contract: what serves the sockets of a loop.
//
// The shared code (conn.go, listen.go, reactor.go, drain.go, server.go)
// keeps a connection's and a listener's state and rules; a backend moves
// the bytes. This file is the contract's backend side: what a backend
// does for the shared code; backend_conn.go is its other side, what of
// the shared code a backend may use. Neither side reaches the other any
// other way (contract_internal_test.go checks it). There are four, each a type of its own in files of its own
// (doc.go names the files): epollBackend (Linux: the loop waits in
// epoll_wait), uringBackend (Linux: the loop waits in its io_uring,
// internal/uring), portableBackend (package net and goroutines: -tags
// purego and systems other than Linux) and simBackend (the simulated
// network of package sim, for the loops a simulation steps). epoll and
// io_uring share the kernel's sockets (kernel_*.go): addresses, the
// listening socket, connect, the socket options.
//
// Rules every backend keeps (its own files state only their own
// invariants):
//   - choice: one backend serves a loop for its whole life. backendOf
//     names it, on any goroutine: the simulation's for a simulated loop,
//     else the one Use recorded for the executor, else SPINDLE_NETIO's
//     ("uring", "epoll"), else the build's default (epoll, or portable).
//     Two things change it, once, before the loop serves its first
//     socket: an io_uring the kernel refuses (init fails with errRefused,
//     the reactor says so once, slog, and epoll serves the loop), and a
//     loop that waits in its io_uring already (another component made it,
//     internal/uring), which io_uring serves since epoll cannot be the
//     loop's wait;
//   - where: init, conns, shut, name, the connection methods, acceptNow
//     and forget run on the loop; listen and dial run on any goroutine
//     (dial hands itself to the loop before it touches the reactor);
//     closeListener runs on any goroutine under l.mu; addr on any
//     goroutine;
//   - ok=false: readNow and acceptNow report ok=false only when nothing
//     is there now; the backend then calls c.readable (l.acceptable) on
//     the loop once bytes, an end or an error (a connection) may be there.
//     With ok=true n == 0 and a nil error is EOF;
//   - output: flushOut hands c.out[...] to the socket as far as it takes
//     it now, reports what was taken through c.took, gives c.out back to
//     the pool once it has drained, or fails c (c.abort). c.out is the
//     backend's to compact or keep while an operation reads it;
//   - buffers: readNow takes a read buffer from the reactor's pool when it
//     reads (c.rbuf) and gives it back when it finds nothing;
//   - per connection, the backend's state is c.sk and nothing else
//     (c.sk.sim on the simulation, the rest of c.sk on the host); shared
//     code never reads it;
//   - closing: closeSock closes c's socket (the backend closes the
//     descriptor, now or once its operations in flight have completed),
//     frees its slot and gives c's buffers back; after it the backend
//     calls nothing of c. A dial still pending fails with c.werr;
//   - the executor's close: the reactor interrupts every connection conns
//     returns, then calls shut, which closes what init opened.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"weak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/simnet"
	"github.com/spindle-rt/spindle/internal/uring"
)

// backend serves the sockets of one loop (see above).
type backend interface {
	// init opens what the backend needs on r's loop and returns the IO
	// the loop waits in, or nil when the loop's own wait will do (or the
	// IO is attached already, internal/uring's ring).
	init(r *reactor) (loop.IO, error)
	// conns returns the connections the backend serves on r's loop.
	conns(r *reactor) []*Conn
	// shut closes what init opened, once the executor has closed.
	shut(r *reactor)
	// name names the backend (Stats.Backend).
	name() Backend

	// readNow reads what c's socket has into c.rbuf: n bytes, or n == 0
	// and a nil error at EOF, or the socket's error; ok is false when
	// nothing is readable yet.
	readNow(c *Conn) (n int, err error, ok bool)
	// flushOut hands c.out to the socket, as much as it takes now.
	flushOut(c *Conn)
	// full reports whether c's socket took less than it was handed last
	// and has not asked for more since (the output limit's stall rule).
	full(c *Conn) bool
	// lastWrite sends what the socket takes at once of the output, before
	// the executor's close drops the rest.
	lastWrite(c *Conn)
	// shutWrite shuts the write side of c's socket.
	shutWrite(c *Conn) error
	// mayReset reports whether closing c's socket now could make the peer
	// see a reset and lose output: input arrived that was not read, or
	// output taken is not yet delivered.
	mayReset(c *Conn) bool
	// unacked returns how many bytes of c's output the socket took that
	// the peer has not acknowledged yet; 0 when the backend cannot tell.
	unacked(c *Conn) int
	// reset makes the close of c's socket that follows reset the
	// connection: the output the socket holds is dropped, and the peer
	// sees a reset.
	reset(c *Conn)
	// addr returns the local (or, with remote, the peer's) address of c's
	// socket, for a connection that does not keep them itself (c.addrs
	// false).
	addr(c *Conn, remote bool) net.Addr
	// closeSock closes c's socket and gives its buffers back.
	closeSock(c *Conn)
	// sendFile starts sf, c's SendFile, by zero copy (written counts it
	// once the output before it has been taken: beginFile; flushOut then
	// sends it, took through tookFile) and returns its future; ok is
	// false when the backend cannot, and the copy path sends it. Asked
	// only for a connection without a layer.
	sendFile(c *Conn, sf *fileOut) (f *future.Future[struct{}], ok bool)

	// listen opens l's listening socket and returns its address.
	listen(l *Listener, network, address string) (net.Addr, error)
	// acceptNow accepts one connection; ok is false when none is waiting.
	acceptNow(l *Listener) (c *Conn, err error, ok bool)
	// forget lets the loop's state of l go once l is closed.
	forget(l *Listener)
	// closeListener closes l's listening socket.
	closeListener(l *Listener) error

	// dial connects to address and completes p with the connection, on
	// lp's loop.
	dial(ctx context.Context, lp *loop.Loop, network, address string, p *future.Promise[*Conn])
}

// Backend names a backend: what Stats.Backend reports and Use chooses.
type Backend string

// The backends.
const (
	BackendEpoll    Backend = "epoll"    // Linux: the loop waits in epoll_wait
	BackendURing    Backend = "io_uring" // Linux: the loop waits in its io_uring
	BackendPortable Backend = "portable" // package net's sockets: -tags purego, systems other than Linux
	BackendSim      Backend = "sim"      // the simulated network of package sim
)

// errRefused wraps the kernel's refusal of an io_uring (uringBackend.init).
var errRefused = errors.New("io_uring refused")

// hostEntry is what the registry keeps of a host loop: the backend chosen
// for it. It holds nothing of the loop's, so the loop is collected.
type hostEntry struct {
	want Backend // chosen by Use; "" until then
	kind Backend // what serves the loop, once backendOf has been asked
}

var hosts struct {
	mu sync.Mutex
	m  map[weak.Pointer[loop.Loop]]*hostEntry
}

// hostOf returns lp's entry, making it on first use. Under hosts.mu.
func hostOf(lp *loop.Loop) *hostEntry {
	k := weak.Make(lp)
	if e, ok := hosts.m[k]; ok {
		return e
	}
	if hosts.m == nil {
		hosts.m = make(map[weak.Pointer[loop.Loop]]*hostEntry)
	}
	e := &hostEntry{}
	hosts.m[k] = e
	runtime.AddCleanup(lp, func(k weak.Pointer[loop.Loop]) {
		hosts.mu.Lock()
		delete(hosts.m, k)
		hosts.mu.Unlock()
	}, k)
	return e
}

// kindOf returns the backend that serves the host loop lp, choosing it on
// first use. Any goroutine.
func kindOf(lp *loop.Loop) Backend {
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	e := hostOf(lp)
	if e.kind == "" {
		e.kind = e.want
		if e.kind == "" {
			e.kind = envBackend()
		}
	}
	return e.kind
}

// backendOf returns the backend that serves lp's sockets for Listen and
// Dial: the simulation's, or for a host loop one of its kind that keeps no
// loop's state (listen, dial, and closeListener before the first accept
// need none). Any goroutine.
func backendOf(lp *loop.Loop) backend {
	if p, ok := lp.Sim().(*simnet.Poller); ok {
		return simBackendOf(p)
	}
	return hostProto(kindOf(lp))
}

// loopBackendOf returns the backend to attach to lp's reactor: the
// simulation's, or a new one of the host loop's kind. Loop only.
func loopBackendOf(lp *loop.Loop) backend {
	if p, ok := lp.Sim().(*simnet.Poller); ok {
		return simBackendOf(p)
	}
	return newHostBackend(kindOf(lp))
}

// setKind makes b the backend of the host loop lp: epoll when the kernel
// refused its io_uring, io_uring when the loop waits in one already. Loop
// only, before lp serves a socket.
func setKind(lp *loop.Loop, b Backend) {
	hosts.mu.Lock()
	hostOf(lp).kind = b
	hosts.mu.Unlock()
}

// Use chooses the backend that serves ex's sockets: BackendEpoll or
// BackendURing on Linux, BackendPortable with -tags purego and on other
// systems. Call it before ex serves its first socket (Listen, Dial); the
// choice then holds for ex's whole life. Without Use, the environment
// variable SPINDLE_NETIO chooses ("uring" or "epoll"), so a built program
// switches without rebuilding; without either, the build's default
// (epoll, or portable). Where the kernel refuses an io_uring, epoll serves
// the loop instead and says so once (log/slog); Stats.Backend names what
// serves it. A simulated executor (package sim) is always served by the
// simulation. Use fails for a backend this build lacks, for a simulated
// executor, and once ex's sockets are served by another backend. With
// epoll chosen, fileio leaves the loop without a ring unless asked for
// one by name (fileio.Config). Any goroutine.
func Use(ex *executor.Executor, b Backend) error {
	if ex == nil {
		panic("netio: Use with nil executor")
	}
	lp := (*loop.Loop)(ex)
	if lp.Sim() != nil {
		if b == BackendSim {
			return nil
		}
		return fmt.Errorf("netio: Use(%q): a simulated executor is served by the simulation", b)
	}
	if !hostHas(b) {
		return fmt.Errorf("netio: Use(%q): not a backend of this build", b)
	}
	hosts.mu.Lock()
	defer hosts.mu.Unlock()
	e := hostOf(lp)
	if e.kind != "" && e.kind != b && e.want != b {
		return fmt.Errorf("netio: Use(%q): %s already serves the executor's sockets", b, e.kind)
	}
	// epoll chosen: fileio does not make the loop a ring for its files
	// on SPINDLE_NETIO's word alone (the ring would take the sockets).
	uring.Decline(lp, b == BackendEpoll)
	e.want = b
	return nil
}

// envBackend is the backend SPINDLE_NETIO names, or the build's default;
// a value this build cannot serve is said once (slog).
func envBackend() Backend {
	switch v := os.Getenv("SPINDLE_NETIO"); v {
	case "":
		return hostDefault
	case "uring", "io_uring":
		if hostHas(BackendURing) {
			return BackendURing
		}
		unknownEnv(v)
	case "epoll", "portable":
		if hostHas(Backend(v)) {
			return Backend(v)
		}
		unknownEnv(v)
	default:
		unknownEnv(v)
	}
	return hostDefault
}

var unknownEnvOnce sync.Once

func unknownEnv(v string) {
	unknownEnvOnce.Do(func() {
		slog.Warn("netio: SPINDLE_NETIO names no backend of this build; the loops use the default",
			"SPINDLE_NETIO", v, "default", string(hostDefault))
	})
}

// refusedOnce makes refused log once per process.
var refusedOnce sync.Once

// refused says, once, that io_uring was asked for and the kernel refused
// it (err): the loops are served by epoll instead.
func refused(err error) {
	refusedOnce.Do(func() {
		slog.Warn("netio: io_uring was asked for (netio.Use or SPINDLE_NETIO=uring), and the kernel refuses it; the loops use epoll",
			"err", err)
	})
}

var (
	_ backend = (*simBackend)(nil)
)
