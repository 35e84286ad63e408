package main

// The server: its configuration, its shards, its listeners and its life
// (serving, draining, closing). The request pipeline (parse, route, batch,
// combine) is in pipeline.go, a connection's input, output and
// backpressure in conn.go, a shard's bookkeeping in shards.go, the
// keyspace in db.go.
//
// Invariants: live counts the connections open on every shard; once
// draining is set it is never cleared, no connection is accepted and every
// open one finishes the requests it has read, sends their replies and
// closes; drained is closed once draining is set and live is zero.

import (
	"context"
	"errors"
	"hash/maphash"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// Defaults of the output policy (see Config and the README).
const (
	// DefaultOutputHighWater is the backpressure point: the reply bytes a
	// connection may have waiting for its peer before the server stops
	// reading its requests.
	DefaultOutputHighWater = 1 << 20
	// DefaultOutputTimeout is how long a connection with replies waiting
	// for its peer may go without the peer taking a byte of them before it
	// is closed.
	DefaultOutputTimeout = 60 * time.Second
	// DefaultLinger bounds how long a connection that the server closes
	// (QUIT, a protocol error, shutdown) waits for its peer to close after
	// its last reply, reading and dropping what the peer still sends, so
	// that the peer receives every reply before the end of the stream.
	DefaultLinger = 2 * time.Second
)

// Config holds the server's limits and settings. The zero value of a
// field means its default.
type Config struct {
	// Shards is the number of shards of the group NewServer starts; 0:
	// runtime.GOMAXPROCS(0). New takes the group's.
	Shards int
	// MaxBulk is the longest argument (Redis's proto-max-bulk-len);
	// default DefaultMaxBulk (512 MB).
	MaxBulk int64
	// MaxMultibulk is the largest argument count of one request; default
	// DefaultMaxMultibulk (Redis 7's limit, INT_MAX).
	MaxMultibulk int64
	// QueryBufferLimit bounds the bytes of a request that is still
	// arriving (Redis's client-query-buffer-limit); past it the
	// connection is closed. Default 1 GB.
	QueryBufferLimit int
	// OutputHighWater is the backpressure point: once more reply bytes
	// than this wait for the peer to read them, the connection's requests
	// are no longer read or run (those already read included) until its
	// output has drained. It also bounds the replies one shard makes for
	// a connection in one go. Default DefaultOutputHighWater (1 MB).
	OutputHighWater int
	// OutputLimit is the hard limit on the reply bytes waiting for the
	// peer (Redis's client-output-buffer-limit): past it the connection is
	// closed at once. 0 (the default, Redis's for normal clients) or less:
	// none; backpressure alone bounds what a connection holds, to about
	// OutputHighWater plus one round of replies.
	OutputLimit int
	// OutputTimeout closes a connection whose peer takes none of its
	// replies for this long, wherever they wait (in the connection's
	// buffer, or in the kernel's, unacknowledged): a client that never
	// reads ends (Redis's soft limit, in time), and the connection is
	// reset. Default DefaultOutputTimeout (60 s); negative: never.
	OutputTimeout time.Duration
	// Linger bounds the wait, after a connection's last reply, for its
	// peer to close (see DefaultLinger). Default DefaultLinger.
	Linger time.Duration
	// ExpireInterval is how often each shard samples the keys with a time
	// to live (Redis: 10 times a second); default 100 ms.
	ExpireInterval time.Duration
	// Clock returns the time in Unix milliseconds, which key expiry runs
	// on; default each shard's loop clock (Executor.Now: the system clock,
	// or the simulation's under package sim). Tests move it.
	Clock func() int64
	// KeyHash places keys on shards; default a maphash with a seed of
	// the process's. A simulation gives a fixed one, so that a seed
	// replays the same placement.
	KeyHash func(key []byte) uint64

	// AppendOnly keeps every write in an append-only file (redis-server's
	// appendonly; aof.go), replayed by OpenAOF, which Listen calls.
	AppendOnly bool
	// AppendFsync is when the AOF is synced: FsyncAlways (a write is
	// answered once it is on disk), FsyncEverySec (the default) or
	// FsyncNo.
	AppendFsync string
	// Dir is the AOF's directory; default the working directory.
	Dir string
	// AppendFilename is the AOF's name in Dir; default
	// DefaultAppendFilename (appendonly.aof).
	AppendFilename string
	// AOFIO is the AOF's file layer: AOFIOThread (a goroutine of the
	// AOF's own writes and syncs with package os) or AOFIOLoop (package
	// fileio, from the first shard's loop: the one a simulated server
	// can use, its files on the simulated disk). Default: AOFIOLoop when
	// the loops are simulated (package sim), AOFIOThread otherwise.
	AOFIO string
}

func (c *Config) defaults() {
	if c.MaxBulk <= 0 {
		c.MaxBulk = DefaultMaxBulk
	}
	if c.MaxMultibulk <= 0 {
		c.MaxMultibulk = DefaultMaxMultibulk
	}
	if c.QueryBufferLimit <= 0 {
		c.QueryBufferLimit = 1 << 30
	}
	if c.OutputHighWater <= 0 {
		c.OutputHighWater = DefaultOutputHighWater
	}
	if c.OutputLimit < 0 {
		c.OutputLimit = 0
	}
	if c.OutputTimeout == 0 {
		c.OutputTimeout = DefaultOutputTimeout
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	if c.ExpireInterval <= 0 {
		c.ExpireInterval = 100 * time.Millisecond
	}
	if c.AppendFsync == "" {
		c.AppendFsync = FsyncEverySec
	}
	if c.AppendFilename == "" {
		c.AppendFilename = DefaultAppendFilename
	}
}

// Server is a Redis-compatible server over a shard group.
type Server struct {
	cfg    Config
	g      *shard.Group
	owned  bool // NewServer started g, and Shutdown and Close end it
	shards *shard.Sharded[shardState]
	seed   maphash.Seed
	start  time.Time

	mu   sync.Mutex
	ls   []*netio.Listener
	port int

	ids      atomic.Uint64
	live     atomic.Int64 // connections open
	draining atomic.Bool
	drained  chan struct{}
	once     sync.Once

	aof     *aofLog // the AOF, once open (aof.go)
	aofOnce sync.Once
	aofErr  error
	// openFile opens the AOF's file; default openAOFFile (tests put
	// another in its place).
	openFile func(path string) (aofFile, error)
}

// NewServer starts a shard group of cfg.Shards shards and a server on it;
// Shutdown and Close end the group too.
func NewServer(cfg Config) *Server {
	g := shard.New(cfg.Shards, executor.WithName("redis"))
	g.Start()
	s := New(g, cfg)
	s.owned = true
	return s
}

// New makes a server over g, a started group, which the caller keeps:
// Shutdown and Close end the server's connections and timers, not g. It
// serves nothing until Listen or Serve.
func New(g *shard.Group, cfg Config) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, g: g, seed: maphash.MakeSeed(), start: time.Now(), drained: make(chan struct{})}
	s.shards = shard.NewSharded(g, func(i int) *shardState { return newShardState(s, i) })
	return s
}

// ErrServerClosed is Listen's error after Shutdown or Close.
var ErrServerClosed = errors.New("redis: server shut down")

// Listen opens one listener per shard on address (SO_REUSEPORT) and
// serves the connections they accept. After Shutdown or Close it fails
// with ErrServerClosed.
func (s *Server) Listen(network, address string) error {
	return s.ListenContext(context.Background(), network, address)
}

// ListenContext is Listen with the context that loading the AOF waits
// with (see OpenAOFContext): a task's, when called from a task on a loop,
// as a simulated server is started.
func (s *Server) ListenContext(ctx context.Context, network, address string) error {
	if s.draining.Load() {
		return ErrServerClosed // it would accept connections only to end them
	}
	if err := s.OpenAOFContext(ctx); err != nil {
		return err
	}
	ls, err := netio.ListenGroup(s.g, network, address)
	if err != nil {
		return err
	}
	s.Serve(ls...)
	return nil
}

// Serve serves the connections ls accept. Each listener must belong to
// one of the server's shards (its executor is one of the group's); a
// connection is served by the shard whose listener accepted it.
func (s *Server) Serve(ls ...*netio.Listener) {
	s.mu.Lock()
	s.ls = append(s.ls, ls...)
	if ta, ok := s.ls[0].Addr().(*net.TCPAddr); ok && s.port == 0 {
		s.port = ta.Port
	}
	s.mu.Unlock()
	for _, l := range ls {
		netio.Serve(l, s.serve)
	}
}

// Addr returns the address of the first listener.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ls[0].Addr()
}

func (s *Server) listeners() []*netio.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*netio.Listener(nil), s.ls...)
}

// Shutdown stops accepting, lets every connection answer the requests it
// has read (replies sent whole, then the end of the stream), closes the
// connections, then, for a server made by NewServer, shuts the shards
// down. Past ctx, everything is closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.startDrain()
	var err error
	select {
	case <-s.drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if !s.owned {
		if err != nil {
			s.closeConns()
		}
		return errors.Join(err, s.closeAOF())
	}
	// The AOF before the shards: its loop layer runs on the first one.
	aerr := s.closeAOF()
	if err == nil {
		err = s.g.Shutdown(ctx)
	}
	if err != nil {
		s.g.Close()
	}
	return errors.Join(err, aerr)
}

// startDrain is the start of Shutdown, which then waits for s.drained: it
// stops accepting and tells every connection to answer what it has read
// and end.
func (s *Server) startDrain() {
	for _, l := range s.listeners() {
		l.Close()
	}
	s.draining.Store(true)
	for i := range s.g.Len() {
		_ = s.g.Shard(i).Submit(func() { s.shards.Local().drain() })
	}
	if s.live.Load() == 0 {
		s.markDrained()
	}
}

// Close closes everything at once.
func (s *Server) Close() error {
	for _, l := range s.listeners() {
		l.Close()
	}
	s.draining.Store(true)
	if s.live.Load() == 0 {
		s.markDrained() // else the last connection's close does
	}
	if !s.owned {
		s.closeConns()
		return s.closeAOF()
	}
	aerr := s.closeAOF() // before the shards, as in Shutdown
	return errors.Join(s.g.Close(), aerr)
}

// closeConns closes every connection at once, on each shard.
func (s *Server) closeConns() {
	for i := range s.g.Len() {
		_ = s.g.Shard(i).Submit(func() { s.shards.Local().closeAll() })
	}
}

func (s *Server) markDrained() { s.once.Do(func() { close(s.drained) }) }

func (s *Server) owner(key []byte) int {
	if s.g.Len() == 1 {
		return 0
	}
	if s.cfg.KeyHash != nil {
		return s.g.Of(s.cfg.KeyHash(key))
	}
	return s.g.Of(maphash.Bytes(s.seed, key))
}

func (s *Server) configTable() [][2]string {
	return [][2]string{
		{"save", ""},
		{"appendonly", yesNo(s.cfg.AppendOnly)},
		{"appendfsync", s.cfg.AppendFsync},
		{"appendfilename", s.cfg.AppendFilename},
		{"databases", "1"},
		{"maxmemory", "0"},
		{"proto-max-bulk-len", strconv.FormatInt(s.cfg.MaxBulk, 10)},
		{"client-query-buffer-limit", strconv.Itoa(s.cfg.QueryBufferLimit)},
		{"client-output-buffer-limit", "normal " + strconv.Itoa(s.cfg.OutputLimit) + " 0 0"},
		{"hz", strconv.Itoa(int(time.Second / s.cfg.ExpireInterval))},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func purgeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
