package main

// Persistence: the append-only file (AOF), as redis-server 7's.
//
// With Config.AppendOnly, every write is appended to one file,
// Dir/AppendFilename, in RESP, as redis-server propagates it: the
// command as it was sent, or rewritten where replaying it as sent would
// not give the same result (a relative time becomes an absolute one:
// EXPIRE and SET EX become PEXPIREAT and SET PXAT; SPOP becomes the SREM
// of what it popped, or a DEL; SET's GET option goes; a key expired is a
// DEL). Commands that change nothing append nothing. The file starts with
// SELECT 0, as redis-server's.
//
// Order. A key belongs to one shard, and its writes are appended by that
// shard's loop as they run, each straight to the file (aofFile.Append),
// so the file holds each key's writes in the order they were made: the
// file replayed gives every key its value. A command over keys of several
// shards (MSET, DEL, ...) and EXEC's transaction are appended whole, by
// the shard where they finish, while they still hold the claims on every
// key they touch (txn.go, multi.go): everything written to those keys
// before is in the file before them, everything after, after. EXEC's
// writes go between MULTI and EXEC when there are several, as
// redis-server's. FLUSHALL and FLUSHDB run on each shard in turn; with
// several shards each shard appends the DEL of the keys it held, in its
// place in the file (with one, FLUSHALL itself): a FLUSHALL in the file
// would also delete the keys other shards wrote after their part had
// run. A transaction that flushes is appended command by command as its
// parts run, not wrapped in MULTI/EXEC.
//
// Durability (Config.AppendFsync). "always": a connection's replies to
// requests that wrote are written only once an fdatasync that covers those
// writes has returned (aofFile.Sync after the round's commands have run,
// wherever they ran); the syncs asked for at once share one fdatasync.
// "everysec": one sync a second, from a timer of the first shard's loop.
// "no": the file is written at once, and synced only at shutdown. Under
// "always" a round that wrote nothing waits for a sync too when it ran on
// a db while writes were appended and not yet synced (its replies may
// show them: pipeline.mustSync). A failed write or sync closes the
// connections waiting for it, with no reply, and fails every later sync;
// from then on the commands that write are refused (MISCONF,
// pipeline.diskError).
//
// Loading (OpenAOF, before serving). The file is read command by command
// and each is run on the db of the shard that owns its keys, on the
// calling goroutine while the shards' loops run nothing else (their expiry
// timers start after). A file cut in its last command (a crash in the
// middle of a write) is loaded up to its last whole command, and cut
// there, as redis-server's aof-load-truncated; an unfinished MULTI at the
// end is dropped whole. Anything else malformed refuses the start, with
// the offset. A redis-server 7 directory (appendonlydir/ and its
// manifest), when DIR has no AOF of this server, is read too (its RESP
// base and incremental files, in the manifest's order) and its commands
// written into the new file.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/shard"
)

// Fsync policies (Config.AppendFsync), redis-server's appendfsync.
const (
	FsyncAlways   = "always"
	FsyncEverySec = "everysec"
	FsyncNo       = "no"
)

// DefaultAppendFilename is the AOF's name in Config.Dir.
const DefaultAppendFilename = "appendonly.aof"

// aofLog is the server's AOF: its file and its policy.
type aofLog struct {
	file   aofFile
	path   string
	always bool
	timer  *executor.Timer // everysec: the next sync (shard 0's loop)
	stop   bool            // no more everysec syncs
}

// selectDB0 is the first command of a new file, as redis-server's.
var selectDB0 = appendCommand(nil, [][]byte{[]byte("SELECT"), []byte("0")})

// appendCommand appends argv as a RESP array of bulk strings.
func appendCommand(b []byte, argv [][]byte) []byte {
	b = appendArray(b, len(argv))
	for _, a := range argv {
		b = appendBulk(b, a)
	}
	return b
}

// aofCapture is the record of a transaction being built: the commands it
// propagates, appended to the file when it finishes.
type aofCapture struct {
	buf []byte
	ops int
}

func (c *aofCapture) add(argv [][]byte) {
	c.buf = appendCommand(c.buf, argv)
	c.ops++
}

// record returns the captured commands as they go to the file: MULTI ...
// EXEC around several, as redis-server's.
func (c *aofCapture) record() []byte {
	if c.ops <= 1 {
		return c.buf
	}
	b := make([]byte, 0, len(c.buf)+32)
	b = appendCommand(b, [][]byte{[]byte("MULTI")})
	b = append(b, c.buf...)
	return appendCommand(b, [][]byte{[]byte("EXEC")})
}

// propagate appends a write to the AOF, as it is to be replayed: into the
// transaction's record if one is being built on this db, else to the
// file. Nothing without an AOF.
func (d *db) propagate(argv [][]byte) {
	if d.aof == nil {
		return
	}
	if d.capture != nil {
		d.capture.add(argv)
		return
	}
	d.scratch = appendCommand(d.scratch[:0], argv)
	d.appendAOF(d.scratch)
}

// propagateAll appends the writes of one command that propagates several
// (SPOP with a count): wrapped in MULTI/EXEC, unless a transaction's
// record is being built, which wraps them.
func (d *db) propagateAll(ops [][][]byte) {
	if d.aof == nil || len(ops) == 0 {
		return
	}
	if d.capture != nil || len(ops) == 1 {
		for _, op := range ops {
			d.propagate(op)
		}
		return
	}
	c := aofCapture{buf: d.scratch[:0]}
	for _, op := range ops {
		c.add(op)
	}
	rec := c.record() // a new buffer: several ops
	d.scratch = c.buf[:0]
	d.appendAOF(rec) // drops scratch if the ops made it large
}

// appendAOF appends a record to the file and counts it.
func (d *db) appendAOF(rec []byte) {
	d.aof.file.Append(d.shard.ex, rec)
	d.appends++
	if cap(d.scratch) > 64<<10 {
		d.scratch = nil
	}
}

// propagateFlush records a flush of d: FLUSHALL as sent with one shard,
// the DEL of the keys d held with several (see the top of the file).
func (d *db) propagateFlush(argv [][]byte, keys []string) {
	if d.aof == nil {
		return
	}
	if d.shard.srv.g.Len() == 1 {
		d.propagate(argv)
		return
	}
	const chunk = 1024
	del := []byte("DEL")
	for len(keys) > 0 {
		n := min(len(keys), chunk)
		op := make([][]byte, 0, n+1)
		op = append(op, del)
		for _, k := range keys[:n] {
			op = append(op, []byte(k))
		}
		d.propagate(op)
		keys = keys[n:]
	}
}

// aofKeys returns d's keys, for propagateFlush, or nil without an AOF.
func (d *db) aofKeys() []string {
	if d.aof == nil || d.shard.srv.g.Len() == 1 {
		return nil
	}
	keys := make([]string, 0, d.keys())
	for k := range d.strs {
		keys = append(keys, k)
	}
	for k := range d.objs {
		keys = append(keys, k)
	}
	return keys
}

// OpenAOF opens the AOF of the server's configuration (Config.Dir and
// Config.AppendFilename), loads it into the keyspace, and appends every
// write from then on. Listen calls it when Config.AppendOnly is set; call
// it before serving. It refuses a file with anything but a cut last
// command malformed in it.
func (s *Server) OpenAOF() error { return s.OpenAOFContext(context.Background()) }

// OpenAOFContext is OpenAOF with the context its waits take: from a task
// on a loop (future.Spawn), the task's, so that its waits suspend the
// task instead of blocking the loop's goroutine. A simulated server
// (package sim, where every loop runs on the test's goroutine) opens its
// AOF so.
func (s *Server) OpenAOFContext(ctx context.Context) error {
	s.aofOnce.Do(func() { s.aofErr = s.openAOF(ctx) })
	return s.aofErr
}

// aofIO returns the AOF's file layer: Config.AOFIO, or, when it is empty,
// the loop layer if the loops are simulated (package fileio serves the
// first shard's files from a simulated disk), the thread layer otherwise.
// The check for the file, made through fileio in that case, tells.
func (s *Server) aofIO(ctx context.Context, path string) (mode string, exists bool, err error) {
	mode = s.cfg.AOFIO
	if mode == AOFIOThread {
		switch _, err := os.Stat(path); {
		case err == nil:
			return mode, true, nil
		case errors.Is(err, os.ErrNotExist):
			return mode, false, nil
		default:
			return mode, false, fmt.Errorf("redis: %w", err)
		}
	}
	ex := s.g.Shard(0)
	exists, err = loopStore{ctx: ctx, ex: ex}.exists(path)
	if err != nil {
		return mode, false, fmt.Errorf("redis: %w", err)
	}
	if mode == "" {
		mode = AOFIOThread
		if fileio.StatsOf(ex).Engine == "sim" {
			mode = AOFIOLoop
		}
	}
	return mode, exists, nil
}

func (s *Server) openAOF(ctx context.Context) error {
	if !s.cfg.AppendOnly {
		return nil
	}
	switch s.cfg.AOFIO {
	case "", AOFIOThread, AOFIOLoop:
	default:
		return fmt.Errorf("redis: AOFIO %q: %q or %q", s.cfg.AOFIO, AOFIOThread, AOFIOLoop)
	}
	sts, err := s.states(ctx)
	if err != nil {
		return err
	}
	dir := s.cfg.Dir
	if dir == "" {
		dir = "."
	}
	name := s.cfg.AppendFilename
	path := filepath.Join(dir, name)
	mode, exists, err := s.aofIO(ctx, path)
	if err != nil {
		return err
	}
	var store aofStore = osStore{}
	if mode == AOFIOLoop {
		store = loopStore{ctx: ctx, ex: s.g.Shard(0)}
	}
	ld := &loader{s: s, sts: sts, store: store}
	fresh := !exists
	if exists {
		if err := ld.loadFile(path, true); err != nil {
			return err
		}
	} else if err := ld.loadRedisDir(dir, name); err != nil {
		return err
	}
	open := s.openFile
	if open == nil {
		open = func(path string) (aofFile, error) {
			if mode == AOFIOLoop {
				return openLoopAOF(ctx, s.g.Shard(0), path)
			}
			return openAOFFile(path)
		}
	}
	f, err := open(path)
	if err != nil {
		return fmt.Errorf("redis: opening the AOF: %w", err)
	}
	if fresh {
		f.Append(nil, selectDB0)
		f.Append(nil, ld.imported) // the commands of a redis-server directory, if any
	}
	a := &aofLog{file: f, path: path, always: s.cfg.AppendFsync == FsyncAlways}
	s.aof = a
	if fresh {
		if _, err := f.Sync(s.g.Shard(0)).Await(ctx); err != nil {
			return err
		}
	}
	// From here on, the shards log their writes and expire keys.
	for i, st := range sts {
		_, err := shard.InvokeWith(s.shards, i, st, func(st *shardState, _ *shardState) (struct{}, error) {
			st.db.aof = a
			st.startExpiry()
			if st.index == 0 && s.cfg.AppendFsync == FsyncEverySec {
				a.everySec(st.ex)
			}
			return struct{}{}, nil
		}).Await(ctx)
		if err != nil {
			return err
		}
	}
	if ld.cmds > 0 || ld.truncated {
		log.Printf("DB loaded from append only file %s: %d commands, %.3f seconds", path, ld.cmds, time.Since(ld.start).Seconds())
	}
	return nil
}

// everySec syncs the file once a second, from ex's loop, until stopped.
func (a *aofLog) everySec(ex *executor.Executor) {
	if a.stop {
		return
	}
	every := time.Second
	if plantedBugs.slowEverySec {
		every = 3 * time.Second // planted: the bound is broken
	}
	a.timer = ex.AfterFunc(every, func() {
		a.timer = nil
		a.file.Sync(ex).OnComplete(func(_ struct{}, err error) {
			if err != nil && !errors.Is(err, errAOFClosed) {
				log.Print(err)
			}
		})
		a.everySec(ex)
	})
}

// states returns the shards' states, made on their loops.
func (s *Server) states(ctx context.Context) ([]*shardState, error) {
	sts := make([]*shardState, s.g.Len())
	for i := range sts {
		st, err := shard.Invoke(s.shards, i, func(st *shardState) (*shardState, error) { return st, nil }).Await(ctx)
		if err != nil {
			return nil, err
		}
		sts[i] = st
	}
	return sts, nil
}

// closeAOF stops the everysec timer and closes the file: what is pending
// is written and synced. Once every connection has gone.
func (s *Server) closeAOF() error {
	a := s.aof
	if a == nil {
		return nil
	}
	_ = s.g.Shard(0).Submit(func() {
		a.stop = true
		if a.timer != nil {
			a.timer.Stop()
		}
	})
	return a.file.Close()
}

// diskError returns the error that refuses cmd once the AOF has failed (a
// write or a sync): MISCONF, as redis-server's, for a command that
// writes, and for EXEC of a transaction that does; "" otherwise. Nothing
// the server cannot log is acknowledged: the writes already waiting for a
// sync failed with it (their connections closed without a reply).
func (p *pipeline) diskError(cmd *command) string {
	a := p.srv.aof
	if a == nil || cmd == nil {
		return ""
	}
	err := a.file.Err()
	if err == nil {
		return ""
	}
	w := cmd.write
	if cmd.name == "exec" && p.multi != nil {
		for _, q := range p.multi.cmds {
			w = w || q.cmd.write
		}
	}
	if !w {
		return ""
	}
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	return "MISCONF Errors writing to the AOF file: " + msg
}

var syncErrOnce sync.Once

// logSyncError logs the first failed sync a connection waited for.
func logSyncError(err error) {
	syncErrOnce.Do(func() { log.Printf("%v: the connections waiting for it are closed", err) })
}
