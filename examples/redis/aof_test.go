package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// startAOF runs a server with an AOF in dir until it is stopped (the
// returned func, also run when the test ends).
func startAOF(t *testing.T, dir string, cfg Config) (*Server, func()) {
	t.Helper()
	cfg.AppendOnly, cfg.Dir = true, dir
	cfg.Linger = 50 * time.Millisecond // the test's connections stay open: Shutdown waits this long for them
	if cfg.Shards == 0 {
		cfg.Shards = 4
	}
	s := NewServer(cfg)
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

// aofScript writes every type of value, with every command that writes,
// over keys of several shards.
var aofScript = [][]string{
	{"SET", "a", "1"}, {"SET", "b", "2", "EX", "1000"}, {"SET", "c", "3", "PX", "1000000", "NX"},
	{"SET", "a", "9", "KEEPTTL", "GET"}, {"SET", "gone", "x", "PX", "1"}, {"EXPIRE", "a", "1000"},
	{"PEXPIREAT", "c", "99999999999999", "NX"}, {"EXPIREAT", "c", "99999999999"}, {"EXPIRE", "c", "-1"},
	{"INCR", "n"}, {"INCRBY", "n", "5"}, {"DECR", "n"}, {"DECRBY", "n", "2"},
	{"MSET", "x", "1", "y", "2", "z", "3", "w", "4"}, {"MSETNX", "x", "1", "v", "2"}, {"MSETNX", "v", "1", "u", "2"},
	{"DEL", "x", "y", "nosuch"}, {"PERSIST", "b"},
	{"LPUSH", "l", "a", "b", "c"}, {"RPUSH", "l", "d", "e"}, {"LPOP", "l"}, {"RPOP", "l", "2"},
	{"SADD", "s", "m1", "m2", "m3", "m4"}, {"SREM", "s", "m1"}, {"SPOP", "s"}, {"SADD", "s1", "only"}, {"SPOP", "s1", "3"},
	{"SADD", "si", "3", "1", "2"},
	{"HSET", "h", "f", "v", "g", "w"}, {"HSET", "h", "f", "v2"},
	{"ZADD", "zz", "1", "a", "2", "b", "3", "c", "1.5", "d"}, {"ZPOPMIN", "zz"},
	{"MULTI"}, {"SET", "t1", "1"}, {"INCR", "t2"}, {"MSET", "m1", "1", "m2", "2", "m3", "3"}, {"EXPIRE", "t1", "5000"}, {"EXEC"},
	{"SET", "f1", "1"}, {"FLUSHALL"}, {"SET", "p", "1"}, {"MSET", "x", "1", "y", "2", "z", "3", "w", "4"},
	{"SET", "a", "1"}, {"SET", "b", "2", "EX", "1000"}, {"SADD", "si", "3", "1", "2", "-7"},
	{"LPUSH", "l", "a", "b", "c"}, {"HSET", "h", "f", "v", "g", "w"}, {"ZADD", "zz", "1", "a", "2", "b", "-inf", "c", "0.25", "d"},
	{"SADD", "s", "m1", "m2"}, {"SPOP", "s"}, {"DEL", "w", "x"},
}

// aofKeys are the keys aofScript may leave.
var aofKeys = []string{"a", "b", "c", "gone", "n", "x", "y", "z", "w", "v", "u", "l", "s", "s1", "si", "h", "zz", "t1", "t2", "m1", "m2", "m3", "f1", "p"}

// query sends a request on a connection and returns the raw reply.
type query func(args ...string) string

// dump describes the keys: type, value (set members sorted) and whether
// they have a time to live; the same keyspace gives the same dump.
func dump(q query, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		typ := q("TYPE", k)
		b.WriteString(k + " " + strings.TrimSpace(typ) + " ")
		switch typ {
		case "+string\r\n":
			b.WriteString(q("GET", k))
		case "+list\r\n":
			b.WriteString(q("LRANGE", k, "0", "-1"))
		case "+set\r\n":
			ms := bulks(q("SMEMBERS", k))
			slices.Sort(ms)
			b.WriteString(strings.Join(ms, ","))
		case "+hash\r\n":
			b.WriteString(q("HGETALL", k))
		case "+zset\r\n":
			b.WriteString(q("ZRANGE", k, "0", "-1", "WITHSCORES"))
		}
		if ttl := q("PTTL", k); ttl != ":-1\r\n" && ttl != ":-2\r\n" {
			b.WriteString(" ttl")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// bulks returns the bulk strings of a raw array reply.
func bulks(reply string) []string {
	var out []string
	r := bufio.NewReader(strings.NewReader(reply))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		if line[0] != '$' {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return out
		}
		out = append(out, string(buf[:n]))
	}
}

// connQuery returns a query over a new connection to addr (network net).
func connQuery(t *testing.T, network, addr string) query {
	conn, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &respClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	return c.do
}

func serverQuery(t *testing.T, s *Server) query { return connQuery(t, "tcp", s.Addr().String()) }

func runScript(q query, script [][]string) {
	for _, cmd := range script {
		q(cmd...)
	}
}

// The AOF replayed gives back every key, its value and its time to live,
// whatever shard it is on and however it was written.
// Both file layers (Config.AOFIO) write the same file, and each loads what
// the other wrote.
func TestAOFReplay(t *testing.T) {
	for _, tc := range []struct{ fsync, io, io2 string }{
		{FsyncAlways, AOFIOThread, AOFIOThread}, {FsyncEverySec, "", ""}, {FsyncNo, AOFIOThread, AOFIOThread},
		{FsyncAlways, AOFIOLoop, AOFIOLoop}, {FsyncEverySec, AOFIOLoop, AOFIOThread}, {FsyncNo, AOFIOThread, AOFIOLoop},
	} {
		t.Run(tc.fsync+"/"+tc.io+"/"+tc.io2, func(t *testing.T) {
			fsync := tc.fsync
			dir := t.TempDir()
			s, stop := startAOF(t, dir, Config{AppendFsync: fsync, AOFIO: tc.io})
			q := serverQuery(t, s)
			runScript(q, aofScript)
			want := dump(q, aofKeys)
			stop()
			for range 2 { // twice: a file loaded and appended to loads again
				s2, stop2 := startAOF(t, dir, Config{AppendFsync: fsync, Shards: 3, AOFIO: tc.io2})
				if got := dump(serverQuery(t, s2), aofKeys); got != want {
					t.Fatalf("after a restart:\n%s\nbefore:\n%s", got, want)
				}
				stop2()
			}
		})
	}
}

// The records, as redis-server 7.0.15 writes them for the same commands
// (times in milliseconds masked): the same bytes.
func TestAOFRecordsAsRedis(t *testing.T) {
	bin := redisBin(t, "redis-server")
	script := [][]string{
		{"SET", "a", "1"}, {"SET", "b", "2", "EX", "100"}, {"SET", "c", "3", "PX", "100000", "NX"},
		{"SET", "d", "4", "EXAT", "99999999999", "GET"}, {"SET", "e", "5", "PXAT", "99999999999999", "XX"},
		{"set", "a", "9", "KEEPTTL", "GET"}, {"SET", "k2", "v", "NX", "GET", "get"}, {"expire", "a", "100"},
		{"PEXPIRE", "a", "50000", "GT"}, {"PEXPIRE", "a", "500000", "GT"}, {"EXPIRE", "a", "-1"}, {"EXPIRE", "nosuch", "10"},
		{"PEXPIREAT", "k2", "99999999999999", "NX"}, {"EXPIREAT", "d", "99999999998"}, {"PERSIST", "d"}, {"PERSIST", "d"},
		{"incr", "n"}, {"INCRBY", "n", "5"}, {"DECR", "n"}, {"DECRBY", "n", "2"},
		{"MSET", "x", "1", "y", "2"}, {"MSETNX", "x", "1", "z", "2"}, {"MSETNX", "z", "1", "w", "2"},
		{"DEL", "x", "nosuch"}, {"DEL", "nosuch"},
		{"LPUSH", "l", "a", "b", "c"}, {"RPUSH", "l", "d"}, {"LPOP", "l"}, {"RPOP", "l", "2"}, {"LPOP", "nosuch"},
		{"SADD", "s", "a"}, {"SADD", "s", "a"}, {"SPOP", "s"}, {"SADD", "s2", "a", "b"}, {"SPOP", "s2", "5"},
		{"SADD", "s3", "1", "2", "3"}, {"SPOP", "s3", "0"}, {"SREM", "s3", "1", "9"}, {"SREM", "s3", "9"},
		{"HSET", "h", "f", "v", "g", "w"}, {"HSET", "h", "f", "v"},
		{"ZADD", "z", "1", "a", "2", "b", "3", "c"}, {"ZADD", "z", "1", "a"}, {"ZPOPMIN", "z"}, {"ZPOPMIN", "z", "5"}, {"ZPOPMIN", "z"},
		{"FLUSHDB"}, {"SET", "q", "1"}, {"FLUSHALL", "ASYNC"}, {"SET", "p", "1"},
		{"MULTI"}, {"SET", "t1", "1"}, {"GET", "t1"}, {"EXEC"},
		{"MULTI"}, {"SET", "t2", "1"}, {"INCR", "t2"}, {"EXPIRE", "t2", "50"}, {"EXEC"},
		{"MULTI"}, {"GET", "t1"}, {"EXEC"},
	}
	dir := t.TempDir()
	ref := runRedis(t, bin, dir, "--appendonly", "yes")
	runScript(connQuery(t, "unix", ref.sock), script)
	incr, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	if err != nil || len(incr) != 1 {
		t.Fatalf("redis-server's incremental file: %v %v", incr, err)
	}
	ref.stop()
	want, err := os.ReadFile(incr[0])
	if err != nil {
		t.Fatal(err)
	}
	ours := t.TempDir()
	s, stop := startAOF(t, ours, Config{Shards: 1, AppendFsync: FsyncAlways})
	runScript(serverQuery(t, s), script)
	stop()
	got, err := os.ReadFile(filepath.Join(ours, DefaultAppendFilename))
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`\$1[34]\r\n1[0-9]{12,13}\r\n`)
	mask := func(b []byte) string { return ms.ReplaceAllString(string(b), "$$13\r\n<ms>\r\n") }
	if mask(got) != mask(want) {
		t.Fatalf("AOF differs from redis-server's:\n got %q\nwant %q", mask(got), mask(want))
	}
}

// A file cut in its last command loads what is whole and is cut there; an
// unfinished MULTI at the end is dropped whole; anything malformed before
// the end refuses the start.
func TestAOFDamage(t *testing.T) {
	set := func(k, v string) string { return multibulk("SET", k, v) }
	whole := string(selectDB0) + set("a", "1") + set("b", "2")
	cases := []struct {
		name  string
		file  string
		keys  string // the keys a, b, c, d as GET answers them, "" if it refuses
		size  int    // the file's size after the start
		error string // in the refusal
	}{
		{"whole", whole, "12--", len(whole), ""},
		{"cut in a value", whole + set("c", "3")[:18], "12--", len(whole), ""},
		{"cut in a count line", whole + "*3\r", "12--", len(whole), ""},
		{"cut after a count line", whole + "*3\r\n", "12--", len(whole), ""},
		{"cut before CRLF", whole + strings.TrimSuffix(set("c", "3"), "\r\n"), "12--", len(whole), ""},
		{"unfinished MULTI", whole + multibulk("MULTI") + set("c", "3") + set("d", "4"), "12--", len(whole), ""},
		{"MULTI cut in a command", whole + multibulk("MULTI") + set("c", "3") + set("d", "4")[:10], "12--", len(whole), ""},
		{"MULTI", whole + multibulk("MULTI") + set("c", "3") + set("d", "4") + multibulk("EXEC"), "1234", 0, ""},
		{"garbage in the middle", string(selectDB0) + set("a", "1") + "garbage\r\n" + set("b", "2"), "", 0, "bad file format reading the append only file"},
		{"bad length", string(selectDB0) + "*2\r\n$x\r\n", "", 0, "at offset 23"},
		{"no CRLF after a value", string(selectDB0) + "*1\r\n$4\r\nPINGxx*1\r\n", "", 0, "bad file format"},
		{"unknown command", string(selectDB0) + multibulk("FOO", "a") + set("a", "1"), "", 0, "unknown command 'FOO'"},
		{"another database", multibulk("SELECT", "1") + set("a", "1"), "", 0, "database 0 only"},
		// A machine's crash: a write lost (zeros), a later one kept.
		{"a hole, then a command", whole + "\x00\x00\x00\x00\x00" + set("c", "3"), "12--", len(whole), ""},
		{"a torn command, a hole, a command", whole + set("c", "3")[:14] + "\x00\x00\x00\x00\x00\x00\x00\x00" + set("d", "4"), "12--", len(whole), ""},
		{"a hole in a count line", whole + "*3\r\n$\x00\x00\r\n" + set("d", "4"), "12--", len(whole), ""},
		{"a zero in a value is a value", string(selectDB0) + set("a", "\x001") + set("b", "2"), "\x0012--", 0, ""},
	}
	for _, tc := range cases {
		for _, io := range []string{AOFIOThread, AOFIOLoop} { // the two file layers read alike
			t.Run(tc.name+"/"+io, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, DefaultAppendFilename)
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
				s := NewServer(Config{Shards: 2, AppendOnly: true, Dir: dir, AOFIO: io})
				defer s.Close()
				err := s.Listen("tcp", "127.0.0.1:0")
				if tc.keys == "" {
					if err == nil || !strings.Contains(err.Error(), tc.error) {
						t.Fatalf("the start: %v, want an error with %q", err, tc.error)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				q := serverQuery(t, s)
				var keys string
				for _, k := range []string{"a", "b", "c", "d"} {
					if r := q("GET", k); r == "$-1\r\n" {
						keys += "-"
					} else {
						keys += bulks(r)[0]
					}
				}
				if keys != tc.keys {
					t.Fatalf("keys %q, want %q", keys, tc.keys)
				}
				if tc.size > 0 {
					fi, err := os.Stat(path)
					if err != nil || fi.Size() != int64(tc.size) {
						t.Fatalf("the file's size %v %v, want %d", fi.Size(), err, tc.size)
					}
				}
			})
		}
	}
}

// An unknown file layer refuses the start.
func TestAOFIOUnknown(t *testing.T) {
	s := NewServer(Config{Shards: 1, AppendOnly: true, Dir: t.TempDir(), AOFIO: "mmap"})
	defer s.Close()
	if err := s.Listen("tcp", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), `AOFIO "mmap"`) {
		t.Fatalf("Listen: %v", err)
	}
}

// heldFile is an aofFile whose syncs, once held, complete when the test
// says.
type heldFile struct {
	mu       sync.Mutex
	data     []byte
	held     bool
	unsynced bool
	err      error // the first failed sync: every later one fails
	pending  []*future.Promise[struct{}]
}

func (f *heldFile) Append(_ *executor.Executor, b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = append(f.data, b...)
	f.unsynced = true
}

func (f *heldFile) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *heldFile) Unsynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unsynced
}

func (f *heldFile) Sync(ex *executor.Executor) *future.Future[struct{}] {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return future.Failed[struct{}](ex, f.err)
	}
	if !f.held {
		f.unsynced = false
		return future.Resolved(ex, struct{}{})
	}
	p := future.NewPromise[struct{}](ex)
	f.pending = append(f.pending, p)
	return p.Future()
}

func (f *heldFile) Close() error { return nil }

// release completes the syncs asked for so far, with err.
func (f *heldFile) release(err error) int {
	f.mu.Lock()
	ps := f.pending
	f.pending = nil
	f.unsynced = f.unsynced && err != nil
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	for _, p := range ps {
		p.Complete(struct{}{}, err)
	}
	return len(ps)
}

func (f *heldFile) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// Under appendfsync always a write is answered only once the sync that
// covers it is done, a read that wrote nothing at once; a failed sync
// closes the connection without the reply.
func TestAOFAlwaysWaitsForSync(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(strconv.Itoa(shards), func(t *testing.T) {
			f := &heldFile{}
			s := NewServer(Config{Shards: shards, AppendOnly: true, AppendFsync: FsyncAlways, Dir: t.TempDir()})
			s.openFile = func(string) (aofFile, error) { return f, nil }
			defer s.Close()
			if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			f.held = true
			f.mu.Unlock()
			c := dial(t, s)
			for _, req := range [][]string{{"SET", "k", "v"}, {"MSET", "a", "1", "b", "2", "c", "3", "d", "4"}, {"MULTI"}, {"EXEC"}} {
				if req[0] == "EXEC" {
					c.send(multibulk("SET", "q", "1"))
					if r, err := c.read(); err != nil || r != "+QUEUED\r\n" {
						t.Fatalf("SET in MULTI: %q %v", r, err)
					}
				}
				c.send(multibulk(req...))
				if req[0] == "MULTI" {
					if r, err := c.read(); err != nil || r != "+OK\r\n" {
						t.Fatalf("MULTI: %q %v", r, err)
					}
					continue
				}
				// No reply before the sync: the request waits for it.
				deadline := time.Now().Add(spindletest.Safety)
				for f.waiting() == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("%v: no sync asked for", req)
					}
					time.Sleep(time.Millisecond) // polling the server's goroutines, which ask for the sync
				}
				_ = c.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if n, err := c.r.Peek(1); err == nil {
					t.Fatalf("%v answered %q before its sync", req, n)
				}
				f.release(nil)
				if r, err := c.read(); err != nil || r == "" || r[0] == '-' {
					t.Fatalf("%v after its sync: %q %v", req, r, err)
				}
			}
			if r := c.do("GET", "k"); r != "$1\r\nv\r\n" || f.waiting() != 0 {
				t.Fatalf("GET: %q, %d syncs asked for", r, f.waiting())
			}
			c.send(multibulk("SET", "k", "w"))
			deadline := time.Now().Add(spindletest.Safety)
			for f.waiting() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no sync asked for")
				}
				time.Sleep(time.Millisecond) // as above
			}
			f.release(errAOFClosed)
			c.expectClosed()
		})
	}
}

// Once a sync of the AOF has failed, the commands that write are refused
// (MISCONF, as redis-server's after a failed write or fsync), in MULTI
// too; under everysec reads go on, under always a read that may show a
// write not on disk is not answered.
func TestAOFMisconf(t *testing.T) {
	const misconf = "-MISCONF Errors writing to the AOF file: input/output error\r\n"
	for _, fsync := range []string{FsyncEverySec, FsyncAlways} {
		t.Run(fsync, func(t *testing.T) {
			f := &heldFile{}
			s := NewServer(Config{Shards: 2, AppendOnly: true, AppendFsync: fsync, Dir: t.TempDir()})
			s.openFile = func(string) (aofFile, error) { return f, nil }
			defer s.Close()
			if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			c := dial(t, s)
			if r := c.do("SET", "k", "v"); r != "+OK\r\n" {
				t.Fatalf("SET: %q", r)
			}
			f.mu.Lock()
			f.held = true
			f.mu.Unlock()
			c.send(multibulk("SET", "k", "w"))
			if fsync == FsyncEverySec {
				if r, err := c.read(); err != nil || r != "+OK\r\n" {
					t.Fatalf("SET under everysec: %q %v", r, err)
				}
				_ = s.g.Shard(0).Submit(func() { f.Sync(s.g.Shard(0)) }) // the everysec timer's sync, now
			}
			deadline := time.Now().Add(spindletest.Safety)
			for f.waiting() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no sync asked for")
				}
				time.Sleep(time.Millisecond) // polling the server's goroutines, which ask for the sync
			}
			f.release(syscall.EIO)
			if fsync == FsyncAlways {
				c.expectClosed() // the SET's reply waited for the sync that failed
				c = dial(t, s)
			}
			for _, tc := range []struct {
				req   []string
				reply string
			}{
				{[]string{"SET", "k", "x"}, misconf},
				{[]string{"MSET", "a", "1", "b", "2"}, misconf},
				{[]string{"MULTI"}, "+OK\r\n"},
				{[]string{"SET", "k", "y"}, misconf},
				{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
				{[]string{"PING"}, "+PONG\r\n"},
			} {
				if r := c.do(tc.req...); r != tc.reply {
					t.Fatalf("%v: %q, want %q", tc.req, r, tc.reply)
				}
			}
			if fsync == FsyncEverySec {
				if r := c.do("GET", "k"); r != "$1\r\nw\r\n" {
					t.Fatalf("GET: %q", r)
				}
				return
			}
			c.send(multibulk("GET", "k")) // it may show the SET whose sync failed
			c.expectClosed()
		})
	}
}

// Syncs asked for at once share one fdatasync: many clients' writes cost
// far fewer syncs than writes.
func TestAOFGroupCommit(t *testing.T) {
	dir := t.TempDir()
	var file *fileAOF
	s := NewServer(Config{Shards: 2, AppendOnly: true, AppendFsync: FsyncAlways, Dir: dir})
	s.openFile = func(path string) (aofFile, error) {
		f, err := openAOFFile(path)
		file = f
		return f, err
	}
	defer s.Close()
	if err := s.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	const clients, each = 20, 50
	before := file.syncs.Load()
	var wg sync.WaitGroup
	for i := range clients {
		c := dial(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				c.send(multibulk("SET", "k"+strconv.Itoa(i)+":"+strconv.Itoa(j), "v"))
				if r, err := c.read(); err != nil || r != "+OK\r\n" {
					t.Errorf("SET: %q %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := file.syncs.Load() - before
	t.Logf("%d writes acknowledged, %d fdatasyncs", clients*each, syncs)
	if syncs == 0 || syncs >= clients*each {
		t.Fatalf("%d fdatasyncs for %d writes, want fewer", syncs, clients*each)
	}
}

// redisBin finds a redis binary or skips the test.
func redisBin(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install redis-server)", name)
	}
	return bin
}

// redisProc is a redis-server run for a test on a Unix socket.
type redisProc struct {
	sock string
	cmd  *exec.Cmd
	dir  string
	done bool
}

// runRedis starts redis-server with its files in dir and args, until
// stop or the test's end.
func runRedis(t *testing.T, bin, dir string, args ...string) *redisProc {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "r.sock")
	logf := filepath.Join(t.TempDir(), "redis.log")
	all := append([]string{"--port", "0", "--unixsocket", sock, "--save", "", "--dir", dir, "--logfile", logf}, args...)
	cmd := exec.Command(bin, all...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &redisProc{sock: sock, cmd: cmd, dir: dir}
	t.Cleanup(r.stop)
	waitRedis(t, sock, logf)
	return r
}

// stop shuts redis-server down (SIGTERM: it syncs its AOF) and waits.
func (r *redisProc) stop() {
	if r.done {
		return
	}
	r.done = true
	_ = r.cmd.Process.Signal(os.Interrupt)
	_ = r.cmd.Wait()
}

// copyDir copies the regular files of src (one level of directories) into
// a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case fi.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// Our AOF is one redis-check-aof accepts, and redis-server 7 started with
// appendonly yes on a copy of it loads the same keys.
func TestAOFRedisLoadsOurs(t *testing.T) {
	bin := redisBin(t, "redis-server")
	dir := t.TempDir()
	s, stop := startAOF(t, dir, Config{AppendFsync: FsyncEverySec})
	q := serverQuery(t, s)
	runScript(q, aofScript)
	want := dump(q, aofKeys)
	stop()
	path := filepath.Join(dir, DefaultAppendFilename)
	if check, err := exec.LookPath("redis-check-aof"); err == nil {
		out, err := exec.Command(check, path).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("is valid")) {
			t.Fatalf("redis-check-aof: %v\n%s", err, out)
		}
	}
	ref := runRedis(t, bin, copyDir(t, dir), "--appendonly", "yes")
	if got := dump(connQuery(t, "unix", ref.sock), aofKeys); got != want {
		t.Fatalf("redis-server loaded:\n%s\nwe had:\n%s", got, want)
	}
}

// A directory redis-server 7 wrote (appendonlydir/, its manifest, an RDB
// base and incremental files of commands) loads into this server, which
// goes on in its own file; string keys in an RDB base (after
// BGREWRITEAOF) too.
func TestAOFOursLoadsRedis(t *testing.T) {
	bin := redisBin(t, "redis-server")
	for _, rewrite := range []bool{false, true} {
		t.Run("rewrite="+strconv.FormatBool(rewrite), func(t *testing.T) {
			dir := t.TempDir()
			ref := runRedis(t, bin, dir, "--appendonly", "yes")
			rq := connQuery(t, "unix", ref.sock)
			keys := aofKeys
			if rewrite {
				// Strings only, some long enough to be compressed.
				keys = []string{"a", "b", "c", "n", "big"}
				runScript(rq, [][]string{{"SET", "a", "1"}, {"SET", "b", "x", "EX", "1000"}, {"INCRBY", "n", "-70000"},
					{"SET", "big", strings.Repeat("abc", 100)}, {"SET", "c", "12345678901"}})
				rq("BGREWRITEAOF")
				deadline := time.Now().Add(spindletest.Safety)
				for !strings.Contains(rq("INFO", "persistence"), "aof_rewrite_in_progress:0") || strings.Contains(rq("INFO", "persistence"), "aof_rewrite_scheduled:1") {
					if time.Now().After(deadline) {
						t.Fatal("BGREWRITEAOF did not end")
					}
					time.Sleep(10 * time.Millisecond) // polling redis-server's rewrite
				}
				rq("SET", "a", "2")
			} else {
				runScript(rq, aofScript)
			}
			want := dump(rq, keys)
			ref.stop()
			cp := copyDir(t, dir)
			for range 2 { // then from its own file
				s, stop := startAOF(t, cp, Config{})
				if got := dump(serverQuery(t, s), keys); got != want {
					t.Fatalf("loaded:\n%s\nredis-server had:\n%s", got, want)
				}
				stop()
			}
		})
	}
}
