// Package simnet is a simulated network of stream sockets on fake time:
// hosts, listeners, connections, the bytes between them and the faults
// that befall them, all decided by one seeded *rand.Rand. It knows nothing
// of loops or of netio: netio's simulated backend adapts its sockets to
// connections, and package sim drives the clock, the network's events and
// the loops.
//
// Invariants:
//   - everything runs on one goroutine (the simulation's driver and the
//     loops it steps): nothing here locks;
//   - every choice that is not the program's own (how a write is cut into
//     pieces, how long each piece takes, which listener of a group takes a
//     connection, the order in which ready sockets are served) is drawn
//     from Rand, in an order that depends only on what happened before, so
//     one seed gives one run;
//   - the bytes of one direction of a connection arrive in the order they
//     were written: they wait in one queue (the receiver's incoming), and
//     one event at a time delivers the head of it;
//   - a writer may have at most Window bytes on the way to its peer or
//     unread there; a write takes no more, and the writer is told
//     (Writable) once the peer reads and makes room;
//   - every byte delivered and every event is folded into the trace, so
//     two runs that differ in anything observable differ in Trace;
//   - a crashed host's pollers are dead and its sockets crashed: nothing
//     done through them reaches another socket (no FIN, no reset, no
//     byte), every operation on them fails or does nothing, and bytes
//     that reach one of them wait while the host is down (held) and reset
//     their sender once it is up again, as a rebooted kernel that knows
//     nothing of the connection does.
package simnet

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"math/rand"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Event is what a socket's handler is told: a set of the bits below.
type Event uint8

// The events.
const (
	Readable  Event = 1 << iota // bytes, an end or an error may be read
	Writable                    // a write may take more
	Connected                   // a connect ended (Err says how)
)

// Handler receives a socket's events, when the loop that serves it
// dispatches them.
type Handler interface {
	Event(ev Event)
}

// Faults are the chances and delays the seed draws from. The zero value
// is a network without faults; Net uses DefaultFaults.
type Faults struct {
	MinDelay, MaxDelay time.Duration // one piece of a write takes this long to arrive
	MaxPieces          int           // a write is cut into at most this many pieces (>= 1)
	Window             int           // bytes a writer may have on the way or unread (> 0)
	ShortWrite         float64       // chance that a write takes fewer bytes than it could
	Refuse             float64       // chance that a connect to a listener is refused
	SlowConnect        float64       // chance that a connect takes SlowDelay more
	SlowDelay          time.Duration
	CrashSilent        float64 // chance that a crashed host's connection goes silent (else its peer is reset)
	DownUnanswered     float64 // chance, per crash, that connects to the host while down go unanswered (else refused)
	AcceptFail         float64 // chance that an accept finding a connection fails with EMFILE or ENFILE (it stays queued)
	AcceptAbort        float64 // chance that an accept finding a connection fails with ECONNABORTED (it is dropped, its client reset)
}

// DefaultFaults are the delays of a quiet network: no faults; a crash
// (CrashHost) resets or silences a connection, and refuses or leaves
// unanswered the connects, with even chances.
var DefaultFaults = Faults{MinDelay: 10 * time.Microsecond, MaxDelay: 500 * time.Microsecond, MaxPieces: 3, Window: 64 << 10, CrashSilent: 0.5, DownUnanswered: 0.5}

// Net is a simulated network. Make one with New.
type Net struct {
	Rand   *rand.Rand
	Faults Faults

	now    int64
	seq    uint64
	events eventHeap
	hosts  []*Host
	lns    map[string][]*Listener // by address
	cut    map[[2]int]bool
	held   map[[2]int][]*Sock // receivers whose delivery waits for a heal
	nextID uint64
	port   int
	trace  hash.Hash64
	socks  []*Sock // every socket made, for ResetHost
	hit    Hits
	buf    [32]byte
}

// Hits count the faults the network has drawn: those whose effect only the
// program sees (an accept that failed), for a test to compare with what
// its program reports.
type Hits struct {
	AcceptFailed  uint64 // accepts failed with EMFILE or ENFILE (AcceptFail)
	AcceptAborted uint64 // connections dropped at accept with ECONNABORTED (AcceptAbort)
}

// Hits returns the counts of the faults drawn so far.
func (n *Net) Hits() Hits { return n.hit }

// New returns a network whose choices are drawn from rng.
func New(rng *rand.Rand) *Net {
	return &Net{
		Rand: rng, Faults: DefaultFaults,
		lns: map[string][]*Listener{}, cut: map[[2]int]bool{}, held: map[[2]int][]*Sock{},
		port: 40000, trace: fnv.New64a(),
	}
}

// Now returns the network's time in nanoseconds.
func (n *Net) Now() int64 { return n.now }

// Trace returns the digest of everything delivered and every event so far.
func (n *Net) Trace() uint64 { return n.trace.Sum64() }

// Record folds an event of the simulation into the trace: a kind, two
// numbers and bytes.
func (n *Net) Record(kind byte, a, b uint64, data []byte) {
	n.buf[0] = kind
	binary.LittleEndian.PutUint64(n.buf[1:], a)
	binary.LittleEndian.PutUint64(n.buf[9:], b)
	binary.LittleEndian.PutUint64(n.buf[17:], uint64(len(data)))
	n.trace.Write(n.buf[:25])
	n.trace.Write(data)
}

// NextEvent returns the time of the network's next event, if it has one.
func (n *Net) NextEvent() (int64, bool) {
	if len(n.events) == 0 {
		return 0, false
	}
	return n.events[0].at, true
}

// Advance moves the clock to t (never back) and runs the events due by
// then, in time order.
func (n *Net) Advance(t int64) {
	if t > n.now {
		n.now = t
	}
	for len(n.events) > 0 && n.events[0].at <= n.now {
		ev := heap.Pop(&n.events).(*event)
		ev.fn()
	}
}

// After runs fn d from now, on the network's clock, among its own events
// (the simulated disk's completions use it): events due at one instant
// run in the order they were scheduled.
func (n *Net) After(d time.Duration, fn func()) { n.after(d, fn) }

// after runs fn d from now.
func (n *Net) after(d time.Duration, fn func()) {
	n.seq++
	heap.Push(&n.events, &event{at: n.now + int64(d), seq: n.seq, fn: fn})
}

// delay draws a delivery delay.
func (n *Net) delay() time.Duration {
	f := n.Faults
	if f.MaxDelay <= f.MinDelay {
		return f.MinDelay
	}
	return f.MinDelay + time.Duration(n.Rand.Int63n(int64(f.MaxDelay-f.MinDelay)))
}

func (n *Net) chance(p float64) bool { return p > 0 && n.Rand.Float64() < p }

// Host is a machine of the network: an IP address, and the pollers of the
// loops that run on it.
type Host struct {
	Name string
	IP   net.IP
	Disk any // the host's simulated disk (an *internal/simdisk.Disk), set by package sim
	net  *Net
	id   int

	down    bool        // crashed, not restarted
	refuse  bool        // while down, connects are refused (else unanswered)
	pollers []*Poller   // the pollers of the running incarnation
	lns     []*Listener // its open listeners, each at its hidx
	held    []*Sock     // crashed sockets with bytes waiting for the host to be up
}

// Host adds a machine named name, at 10.0.x.y.
func (n *Net) Host(name string) *Host {
	id := len(n.hosts)
	h := &Host{Name: name, IP: net.IPv4(10, 0, byte((id+1)>>8), byte(id+1)).To4(), net: n, id: id}
	n.hosts = append(n.hosts, h)
	return h
}

// Poller is the part of a host that one loop serves: the sockets whose
// events that loop dispatches.
type Poller struct {
	Host  *Host
	Ext   any // the backend's state for this poller (netio's)
	ready []readyItem
	dead  bool // its host crashed: nothing it does reaches the network
}

type readyItem interface {
	take() (Handler, Event)
}

// Poller returns a new poller on h. It panics if h is down.
func (h *Host) Poller() *Poller {
	if h.down {
		panic("simnet: Poller on host " + h.Name + ", which is down")
	}
	p := &Poller{Host: h}
	h.pollers = append(h.pollers, p)
	return p
}

// Down reports whether h is crashed and not restarted.
func (h *Host) Down() bool { return h.down }

// HasReady reports whether events wait for Dispatch.
func (p *Poller) HasReady() bool { return len(p.ready) > 0 }

// Dispatch tells each socket with events its events, in an order drawn
// from the seed.
func (p *Poller) Dispatch() {
	if len(p.ready) == 0 || p.dead {
		p.ready = nil
		return
	}
	rs := p.ready
	p.ready = nil
	n := p.Host.net
	n.Rand.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
	for _, r := range rs {
		h, ev := r.take()
		if h != nil && ev != 0 {
			h.Event(ev)
		}
	}
}

// Partition cuts a from b: bytes and connects between them wait until
// Heal.
func (n *Net) Partition(a, b *Host) {
	n.cut[pair(a, b)] = true
	n.Record('P', uint64(a.id), uint64(b.id), nil)
}

// Heal joins a and b again; what waited is delivered.
func (n *Net) Heal(a, b *Host) {
	k := pair(a, b)
	delete(n.cut, k)
	n.Record('H', uint64(a.id), uint64(b.id), nil)
	held := n.held[k]
	delete(n.held, k)
	for _, s := range held {
		s.scheduled = false
		s.schedule()
	}
}

func (n *Net) isCut(a, b *Host) bool { return a != b && n.cut[pair(a, b)] }

func pair(a, b *Host) [2]int {
	if a.id > b.id {
		a, b = b, a
	}
	return [2]int{a.id, b.id}
}

// Errors of the simulated sockets: the kernel's, so that errors.Is finds
// them as it would on real sockets.
var (
	ErrRefused   = syscall.ECONNREFUSED
	ErrReset     = syscall.ECONNRESET
	ErrInUse     = syscall.EADDRINUSE
	ErrNotAvail  = syscall.EADDRNOTAVAIL
	ErrDown      = syscall.ENETDOWN     // an operation of a crashed host's program
	ErrNoFiles   = syscall.EMFILE       // an accept failed: the process has no descriptor left (AcceptFail)
	ErrNoFileTab = syscall.ENFILE       // an accept failed: the system has no descriptor left (AcceptFail)
	ErrAborted   = syscall.ECONNABORTED // an accept found its connection aborted (AcceptAbort)
	errBadAddr   = errors.New("simnet: bad address")
	errNoNetwork = errors.New("simnet: unsupported network")
)

// Listener is a listening socket.
type Listener struct {
	Addr    net.Addr
	h       Handler
	p       *Poller
	key     string
	backlog []*Sock
	closed  bool
	pending Event
	queued  bool
	id      uint64
	hidx    int // its place in its host's lns
}

func (l *Listener) take() (Handler, Event) {
	l.queued = false
	ev := l.pending
	l.pending = 0
	if l.closed {
		return nil, 0
	}
	return l.h, ev
}

func (l *Listener) notify() {
	l.pending |= Readable
	if !l.queued && !l.closed {
		l.queued = true
		l.p.ready = append(l.p.ready, l)
	}
}

// SetHandler sets who hears that a connection waits.
func (l *Listener) SetHandler(h Handler) { l.h = h }

// resolve turns address into the key of a listener, for a socket on host.
func resolve(h *Host, network, address string) (string, net.Addr, int, error) {
	switch network {
	case "unix":
		return "unix:" + address, &net.UnixAddr{Name: address, Net: "unix"}, 0, nil
	case "tcp", "tcp4", "tcp6":
	default:
		return "", nil, 0, errNoNetwork
	}
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return "", nil, 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", nil, 0, errBadAddr
	}
	ip := h.IP
	if host != "" && host != "localhost" {
		pip := net.ParseIP(host)
		if pip == nil {
			return "", nil, 0, errBadAddr
		}
		if !pip.IsLoopback() && !pip.IsUnspecified() {
			ip = pip.To4()
			if ip == nil {
				ip = pip
			}
		}
	}
	return "", &net.TCPAddr{IP: ip, Port: port}, port, nil
}

// Listen opens a listener of the poller's host on address; with reuse,
// several listeners may share it (a connect picks one).
func (p *Poller) Listen(network, address string, reuse bool) (*Listener, error) {
	if p.dead {
		return nil, ErrDown
	}
	n := p.Host.net
	key, addr, port, err := resolve(p.Host, network, address)
	if err != nil {
		return nil, err
	}
	if ta, ok := addr.(*net.TCPAddr); ok {
		if !ta.IP.Equal(p.Host.IP) {
			return nil, ErrNotAvail
		}
		if port == 0 {
			n.port++
			ta.Port = n.port
		}
		key = ta.String()
	}
	if ls := n.lns[key]; len(ls) > 0 && (!reuse || network == "unix") {
		return nil, ErrInUse
	}
	n.nextID++
	h := p.Host
	l := &Listener{Addr: addr, p: p, key: key, id: n.nextID, hidx: len(h.lns)}
	h.lns = append(h.lns, l)
	n.lns[key] = append(n.lns[key], l)
	n.Record('L', l.id, 0, []byte(key))
	return l, nil
}

// Accept returns the next connection waiting; nil and a nil error when
// none is. With a connection waiting, it fails as the kernel's accept
// does, as the faults draw: with ErrNoFiles or ErrNoFileTab (AcceptFail,
// even odds between them), the connection staying first in the queue for
// the next Accept; or with ErrAborted (AcceptAbort), the connection
// dropped and its client reset (ECONNRESET, on its connect if that has
// not ended yet), as when a peer aborts a connection before it is
// accepted. Either way no event follows: the caller tries again when it
// will (for ErrAborted, at once: the next connection may be waiting).
func (l *Listener) Accept() (*Sock, error) {
	if l.closed || len(l.backlog) == 0 {
		return nil, nil
	}
	n := l.p.Host.net
	if n.chance(n.Faults.AcceptFail) {
		err := ErrNoFiles
		if n.Rand.Intn(2) == 1 {
			err = ErrNoFileTab
		}
		n.hit.AcceptFailed++
		n.Record('a', l.id, uint64(err), nil)
		return nil, err
	}
	s := l.backlog[0]
	copy(l.backlog, l.backlog[1:])
	l.backlog[len(l.backlog)-1] = nil
	l.backlog = l.backlog[:len(l.backlog)-1]
	if n.chance(n.Faults.AcceptAbort) {
		n.hit.AcceptAborted++
		n.Record('a', l.id, uint64(ErrAborted), nil)
		s.Reset()
		s.Close()
		return nil, ErrAborted
	}
	n.Record('A', l.id, s.ID, nil)
	return s, nil
}

// Close closes l: the connections that waited are reset.
func (l *Listener) Close() {
	if l.closed {
		return
	}
	l.unlisten()
	n := l.p.Host.net
	n.Record('l', l.id, 0, nil)
	for _, s := range l.backlog {
		s.Reset()
	}
	l.backlog = nil
}

// unlisten closes l and takes it off the network: connects to its address
// no longer find it.
func (l *Listener) unlisten() {
	l.closed = true
	h := l.p.Host
	if i := l.hidx; i < len(h.lns) && h.lns[i] == l {
		last := h.lns[len(h.lns)-1]
		h.lns[i], last.hidx = last, i
		h.lns[len(h.lns)-1] = nil
		h.lns = h.lns[:len(h.lns)-1]
	}
	n := h.net
	ls := n.lns[l.key]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(n.lns, l.key)
	} else {
		n.lns[l.key] = ls
	}
}

// Sock is one end of a connection.
type Sock struct {
	ID            uint64
	Local, Remote net.Addr
	p             *Poller
	peer          *Sock
	h             Handler

	incoming  []piece // on the way to this end, in order
	scheduled bool    // an event delivers the head of incoming
	rbuf      []byte  // arrived, not yet read
	onWay     int     // bytes of incoming
	eof       bool    // the peer's end arrived
	err       error   // a reset or a failed connect
	connected bool
	wshut     bool
	closed    bool
	blocked   bool // a write was short: tell Writable once there is room
	crashed   bool // its host crashed (closed is set too): see CrashHost

	pending Event
	queued  bool
}

type piece struct {
	b   []byte
	fin bool
	at  int64
}

func (s *Sock) take() (Handler, Event) {
	s.queued = false
	ev := s.pending
	s.pending = 0
	if s.closed {
		return nil, 0
	}
	return s.h, ev
}

func (s *Sock) notify(ev Event) {
	s.pending |= ev
	if !s.queued && !s.closed {
		s.queued = true
		s.p.ready = append(s.p.ready, s)
	}
}

// SetHandler sets who hears the socket's events (on its poller).
func (s *Sock) SetHandler(h Handler) {
	if s.crashed {
		return
	}
	s.h = h
	if s.pending != 0 && !s.queued {
		s.queued = true
		s.p.ready = append(s.p.ready, s)
	}
}

// Err returns the socket's error: why a connect failed, or a reset.
func (s *Sock) Err() error { return s.err }

// IsConnected reports whether the connect ended well.
func (s *Sock) IsConnected() bool { return s.connected }

// Dial starts a connect from the poller's host to address; the socket is
// told Connected once it ends (Err says how).
func (p *Poller) Dial(network, address string) (*Sock, error) {
	if p.dead {
		return nil, ErrDown
	}
	n := p.Host.net
	key, addr, _, err := resolve(p.Host, network, address)
	if err != nil {
		return nil, err
	}
	var dst *Host
	if ta, ok := addr.(*net.TCPAddr); ok {
		key = ta.String()
		dst = n.hostOf(ta.IP)
	}
	n.nextID++
	s := &Sock{ID: n.nextID, p: p, Remote: addr}
	n.socks = append(n.socks, s)
	if _, ok := addr.(*net.TCPAddr); ok {
		n.port++
		s.Local = &net.TCPAddr{IP: p.Host.IP, Port: n.port}
	} else {
		s.Local = &net.UnixAddr{Net: "unix"}
	}
	n.Record('D', s.ID, 0, []byte(key))
	d := n.delay()
	if n.chance(n.Faults.SlowConnect) {
		d += n.Faults.SlowDelay
	}
	n.after(d, func() { n.syn(s, dst, key, 0) })
	return s, nil
}

// hostOf returns the host whose address is ip, or nil.
func (n *Net) hostOf(ip net.IP) *Host {
	for _, h := range n.hosts {
		if h.IP.Equal(ip) {
			return h
		}
	}
	return nil
}

// syn is a connect's arrival at the listener's side (on host dst, when
// the address is a host's).
func (n *Net) syn(s *Sock, dst *Host, key string, tries int) {
	if s.closed {
		return
	}
	if dst != nil && dst.down {
		if dst.refuse && !n.isCut(s.p.Host, dst) {
			n.after(n.delay(), func() { s.fail(ErrRefused) })
			return
		}
		// Nobody answers (or a partition is in the way): the connect
		// retries as across a partition.
		n.Record('Y', s.ID, uint64(tries), nil)
		if tries < 6 {
			n.after(time.Second<<tries, func() { n.syn(s, dst, key, tries+1) })
			return
		}
		n.after(0, func() { s.fail(syscall.ETIMEDOUT) })
		return
	}
	ls := n.lns[key]
	var l *Listener
	if len(ls) > 0 {
		l = ls[n.Rand.Intn(len(ls))]
	}
	if l != nil && n.isCut(s.p.Host, l.p.Host) {
		if tries < 6 {
			n.after(time.Second<<tries, func() { n.syn(s, dst, key, tries+1) })
			return
		}
		n.after(0, func() { s.fail(syscall.ETIMEDOUT) })
		return
	}
	if l == nil || n.chance(n.Faults.Refuse) {
		n.after(n.delay(), func() { s.fail(ErrRefused) })
		return
	}
	n.nextID++
	srv := &Sock{ID: n.nextID, p: l.p, Local: l.Addr, Remote: s.Local, peer: s, connected: true}
	if ta, ok := l.Addr.(*net.TCPAddr); ok {
		srv.Local = &net.TCPAddr{IP: ta.IP, Port: ta.Port}
	}
	s.peer = srv
	n.socks = append(n.socks, srv)
	l.backlog = append(l.backlog, srv)
	n.Record('S', s.ID, srv.ID, nil)
	l.notify()
	n.after(n.delay(), func() {
		if s.closed || s.err != nil {
			return
		}
		s.connected = true
		n.Record('C', s.ID, 0, nil)
		s.notify(Connected | Writable)
	})
}

func (s *Sock) fail(err error) {
	if s.closed || s.connected || s.err != nil {
		return
	}
	s.err = err
	s.p.Host.net.Record('F', s.ID, 0, []byte(err.Error()))
	s.notify(Connected | Readable | Writable)
}

// Read copies what has arrived into b: n bytes; or 0 and nil at the end
// of the peer's output; or the socket's error; ok is false when nothing
// is there yet (Readable comes once something is).
func (s *Sock) Read(b []byte) (n int, err error, ok bool) {
	if s.crashed {
		return 0, ErrDown, true
	}
	if s.err != nil {
		return 0, s.err, true
	}
	if len(s.rbuf) == 0 {
		if s.eof {
			return 0, nil, true
		}
		return 0, nil, false
	}
	n = copy(b, s.rbuf)
	s.rbuf = s.rbuf[n:]
	if len(s.rbuf) == 0 {
		s.rbuf = nil
	}
	if w := s.peer; w != nil && w.blocked && !w.closed {
		w.blocked = false
		net := s.p.Host.net
		net.after(net.delay(), func() { w.notify(Writable) })
	}
	return n, nil, true
}

// End reports, without taking a byte, whether s has ended: its error,
// or io.EOF once the peer's end arrived and nothing is left unread; nil
// while s may still yield bytes.
func (s *Sock) End() error {
	if s.crashed {
		return ErrDown
	}
	if s.err != nil {
		return s.err
	}
	if s.eof && len(s.rbuf) == 0 {
		return io.EOF
	}
	return nil
}

// Write hands b to the network: it takes as much as the window allows
// (fewer bytes, sometimes, by the ShortWrite fault) and returns how many.
// A write that takes less than b is told Writable once there is room.
func (s *Sock) Write(b []byte) (int, error) {
	if s.crashed {
		return 0, ErrDown
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.closed || s.wshut || s.peer == nil {
		return 0, syscall.EPIPE
	}
	n := s.p.Host.net
	peer := s.peer
	room := n.Faults.Window - peer.onWay - len(peer.rbuf)
	k := min(len(b), max(room, 0))
	if k > 1 && n.chance(n.Faults.ShortWrite) {
		k = 1 + n.Rand.Intn(k-1)
	}
	if k < len(b) {
		if room > k {
			n.after(n.delay(), func() { s.notify(Writable) }) // short by the fault: room is there
		} else {
			s.blocked = true
		}
	}
	if k == 0 {
		return 0, nil
	}
	data := append([]byte(nil), b[:k]...)
	pieces := 1
	if n.Faults.MaxPieces > 1 && k > 1 {
		pieces = 1 + n.Rand.Intn(min(n.Faults.MaxPieces, k))
	}
	for i := 0; i < pieces; i++ {
		m := len(data)
		if i < pieces-1 {
			m = 1 + n.Rand.Intn(len(data)-(pieces-1-i))
		}
		peer.send(piece{b: data[:m:m]})
		data = data[m:]
	}
	return k, nil
}

// send queues p for delivery to s.
func (s *Sock) send(p piece) {
	n := s.p.Host.net
	p.at = n.now + int64(n.delay())
	if k := len(s.incoming); k > 0 && s.incoming[k-1].at > p.at {
		p.at = s.incoming[k-1].at
	}
	s.incoming = append(s.incoming, p)
	s.onWay += len(p.b)
	s.schedule()
}

// schedule makes an event deliver the head of s.incoming.
func (s *Sock) schedule() {
	if s.scheduled || len(s.incoming) == 0 {
		return
	}
	s.scheduled = true
	n := s.p.Host.net
	at := s.incoming[0].at
	if at < n.now {
		at = n.now
	}
	n.seq++
	heap.Push(&n.events, &event{at: at, seq: n.seq, fn: s.deliver})
}

// deliver delivers the head of s.incoming, unless s is cut from its peer.
func (s *Sock) deliver() {
	s.scheduled = false
	if len(s.incoming) == 0 {
		return
	}
	n := s.p.Host.net
	if s.peer != nil && n.isCut(s.p.Host, s.peer.p.Host) {
		k := pair(s.p.Host, s.peer.p.Host)
		n.held[k] = append(n.held[k], s)
		s.scheduled = true // Heal schedules it again
		return
	}
	if s.crashed && s.p.Host.down {
		// Nobody is there to answer: the bytes wait, the sender hears
		// nothing (its window fills), until the host is up again.
		h := s.p.Host
		h.held = append(h.held, s)
		s.scheduled = true // RestartHost schedules it again
		return
	}
	p := s.incoming[0]
	s.incoming[0] = piece{}
	s.incoming = s.incoming[1:]
	s.onWay -= len(p.b)
	if s.closed {
		// Bytes for a closed socket (or one of a host that crashed and is
		// up again): the kernel answers with a reset.
		if len(p.b) > 0 && s.peer != nil {
			s.peer.resetBy()
		}
		s.incoming, s.onWay = nil, 0
		return
	}
	if s.err == nil {
		if len(p.b) > 0 {
			n.Record('B', s.ID, 0, p.b)
			s.rbuf = append(s.rbuf, p.b...)
		}
		if p.fin {
			n.Record('E', s.ID, 0, nil)
			s.eof = true
		}
		s.notify(Readable)
	}
	s.schedule()
}

// ShutWrite sends the end of s's output after what was written.
func (s *Sock) ShutWrite() {
	if s.wshut || s.closed || s.peer == nil {
		s.wshut = true
		return
	}
	s.wshut = true
	s.peer.send(piece{fin: true})
}

// Unsettled reports whether closing s now would reset its peer or lose
// output: bytes arrived that were not read, or bytes written are still on
// the way.
func (s *Sock) Unsettled() bool {
	if s.crashed {
		return false
	}
	return len(s.rbuf) > 0 || s.onWay > 0 || (s.peer != nil && s.peer.onWay > 0)
}

// Unacked returns how many of the bytes s wrote are still on their way to
// the peer: written, not yet in its receive buffer.
func (s *Sock) Unacked() int {
	if s.closed || s.peer == nil {
		return 0
	}
	return s.peer.onWay
}

// Close closes s: its output ends (the peer reads EOF after the bytes
// written before), and bytes that reach it later reset the peer. As the
// kernel does, a close with bytes arrived and not read resets the
// connection instead (what was on the way to the peer is lost).
func (s *Sock) Close() {
	if s.closed {
		return
	}
	if len(s.rbuf) > 0 && s.err == nil && s.connected {
		s.Reset()
	}
	s.p.Host.net.Record('X', s.ID, 0, nil)
	if !s.wshut && s.peer != nil && s.err == nil {
		s.wshut = true
		s.peer.send(piece{fin: true})
	}
	s.closed = true
	s.h = nil
	s.rbuf = nil
}

// Reset resets the connection: both ends fail with ECONNRESET (the peer
// once the reset reaches it), and what was on the way is lost.
func (s *Sock) Reset() {
	if s.crashed {
		return
	}
	n := s.p.Host.net
	n.Record('R', s.ID, 0, nil)
	s.resetBy()
	if p := s.peer; p != nil {
		n.after(n.delay(), p.resetBy)
	}
}

func (s *Sock) resetBy() {
	if s.closed || s.err != nil {
		return
	}
	s.err = ErrReset
	s.rbuf, s.incoming, s.onWay = nil, nil, 0
	if !s.connected {
		s.p.Host.net.Record('F', s.ID, 0, nil)
		s.notify(Connected | Readable | Writable)
		return
	}
	s.notify(Readable | Writable)
}

// ResetHost resets every open connection with an end on h.
func (n *Net) ResetHost(h *Host) {
	for _, s := range n.liveSocks() {
		if s.p.Host == h && s.connected && s.err == nil && !s.closed {
			s.Reset()
		}
	}
}

// liveSocks drops the sockets closed or failed from n.socks and returns
// the others, in the order they were made.
func (n *Net) liveSocks() []*Sock {
	live := n.socks[:0]
	for _, s := range n.socks {
		if s.closed || s.err != nil {
			continue
		}
		live = append(live, s)
	}
	clear(n.socks[len(live):])
	n.socks = live
	return live
}

// CrashHost crashes h: its pollers die (Dial and Listen on them fail,
// their events are dropped), its listeners vanish (a connect finds
// nothing: while h is down it is refused, or goes unanswered and retries
// as across a partition, as the rand decides once per crash with
// Faults.DownUnanswered), and every open socket on h crashes: its
// program's operations on it fail or do nothing, and nothing more of it
// reaches the peer (no FIN). The rand decides per connection, with
// Faults.CrashSilent, whether the peer is reset (ECONNRESET, once the
// reset reaches it) or hears nothing: its bytes vanish into the dead
// end, which never reads them, so its window fills, until h is up again
// and the next bytes that reach h reset it. Bytes already on their way
// from h still arrive. It panics if h is down.
func (n *Net) CrashHost(h *Host) {
	if h.down {
		panic("simnet: CrashHost of host " + h.Name + ", which is down")
	}
	h.down = true
	h.refuse = n.Rand.Float64() >= n.Faults.DownUnanswered
	refuse := uint64(0)
	if h.refuse {
		refuse = 1
	}
	n.Record('K', uint64(h.id), refuse, nil)
	for _, p := range h.pollers {
		p.dead, p.ready = true, nil
	}
	clear(h.pollers)
	h.pollers = nil
	for len(h.lns) > 0 {
		l := h.lns[len(h.lns)-1]
		l.unlisten()
		l.backlog = nil // those sockets crash below
		n.Record('l', l.id, 1, nil)
	}
	for _, s := range n.liveSocks() {
		if s.p.Host != h {
			continue
		}
		silent := uint64(1)
		if p := s.peer; p != nil && p.p.Host != h && !p.closed && p.err == nil {
			if n.Rand.Float64() >= n.Faults.CrashSilent {
				silent = 0
				n.after(n.delay(), p.resetBy)
			}
		}
		n.Record('k', s.ID, silent, nil)
		s.crashed, s.closed = true, true
		s.h, s.rbuf, s.pending, s.blocked = nil, nil, 0, false
	}
}

// RestartHost brings h up again after CrashHost: its address answers
// again (a connect is refused until a new listener listens), and bytes
// that reached its crashed sockets while it was down reset their senders
// now. New pollers (Host.Poller) serve its new program. It panics if h
// is up.
func (n *Net) RestartHost(h *Host) {
	if !h.down {
		panic("simnet: RestartHost of host " + h.Name + ", which is up")
	}
	h.down = false
	n.Record('U', uint64(h.id), 0, nil)
	held := h.held
	h.held = nil
	for _, s := range held {
		s.scheduled = false
		s.schedule()
	}
}

// String describes s for logs.
func (s *Sock) String() string { return fmt.Sprintf("sock#%d(%v->%v)", s.ID, s.Local, s.Remote) }

type event struct {
	at  int64
	seq uint64
	fn  func()
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
