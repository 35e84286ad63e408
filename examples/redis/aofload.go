package main

// Loading an AOF: reading its commands and running them on the shards'
// dbs (see aof.go).
//
// The files are read through the AOF's layer (aofStore: package os, or
// fileio on the first shard's loop, which under package sim is the
// host's simulated disk), the same that then appends to them.
//
// The end of the file. A crash in the middle of a write leaves the file
// cut in its last command: that command is dropped with a warning and the
// file cut after the last whole one, as redis-server's aof-load-truncated
// does (an unfinished MULTI at the end is dropped whole). The crash of a
// machine (not only of the process) may also leave, after the last sync,
// a write lost and a later one kept: a hole of zero bytes where a command
// should go on, followed by whatever the later writes left. A command
// that is malformed and holds a zero byte where the format has none (in
// its count or length lines, or in place of the CRLF after an argument)
// is taken for that end too: it is dropped, with what follows it, as a
// cut last command is. Only the writes after the last successful sync can
// be there (a sync makes everything before it durable, zeros included),
// so under appendfsync always only writes never acknowledged are
// dropped. redis-server refuses such a file (bad format) until
// redis-check-aof --fix cuts it at the same place. Anything else
// malformed refuses the start, with the offset.
//
// Invariants: the loader runs before the server serves and before the
// shards' expiry timers start, so no loop touches a db while it runs; the
// shards' states came from their loops through a call (happens-before),
// and go back to them the same way. valid is the offset just past the
// last whole command outside a MULTI (what a cut file keeps).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// loader loads AOF files into the shards' dbs.
type loader struct {
	s        *Server
	store    aofStore
	sts      []*shardState
	start    time.Time
	cmds     int    // commands run
	imported []byte // a redis-server directory's commands, for the new file
	out      []byte // replies, dropped

	truncated bool
	multi     [][][]byte // the commands queued since MULTI
	inMulti   bool
}

// errCorrupt marks a file that is malformed before its end.
var errCorrupt = errors.New("bad file format")

// errHole marks a command malformed where a zero byte is: the end of what
// a crash kept (see the top of the file).
var errHole = errors.New("zero bytes where a command goes on (a write lost at a crash)")

// aofReader reads RESP commands from an AOF and counts the bytes read.
type aofReader struct {
	r   *bufio.Reader
	off int64
}

// line reads a line ending in CRLF; at the end of the file in the middle
// of one, io.ErrUnexpectedEOF.
func (a *aofReader) line() ([]byte, error) {
	b, err := a.r.ReadSlice('\n')
	a.off += int64(len(b))
	switch {
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	case err == bufio.ErrBufferFull:
		return nil, corrupt(b) // no count line is that long
	case err != nil:
		return nil, err
	case len(b) < 2 || b[len(b)-2] != '\r':
		return nil, corrupt(b)
	}
	return b[:len(b)-2], nil
}

// corrupt is the error of malformed bytes b: errHole if they hold a
// zero byte.
func corrupt(b []byte) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return errHole
	}
	return errCorrupt
}

// count reads a line "<prefix><n>".
func (a *aofReader) count(prefix byte, max int64) (int64, error) {
	l, err := a.line()
	if err != nil {
		return 0, err
	}
	if len(l) < 2 || l[0] != prefix {
		return 0, corrupt(l)
	}
	n, err := strconv.ParseInt(string(l[1:]), 10, 64)
	if err != nil || n < 0 || n > max {
		return 0, corrupt(l)
	}
	return n, nil
}

// command reads one command: io.EOF at the end of the file between two,
// io.ErrUnexpectedEOF in the middle of one, errCorrupt where it is
// malformed.
func (a *aofReader) command() ([][]byte, error) {
	if _, err := a.r.Peek(1); err == io.EOF {
		return nil, io.EOF
	}
	argc, err := a.count('*', 1<<31-1)
	if err != nil {
		return nil, err
	}
	if argc < 1 {
		return nil, errCorrupt
	}
	argv := make([][]byte, 0, min(argc, 1024))
	for range argc {
		n, err := a.count('$', DefaultMaxBulk)
		if err != nil {
			return nil, err
		}
		arg := make([]byte, n+2)
		k, err := io.ReadFull(a.r, arg)
		a.off += int64(k)
		if err != nil {
			if plantedBugs.tornReplay && k > 0 && len(argv) == int(argc)-1 {
				return append(argv, arg[:min(int64(k), n)]), nil // planted: the cut value is run
			}
			return nil, io.ErrUnexpectedEOF
		}
		if arg[n] != '\r' || arg[n+1] != '\n' {
			return nil, corrupt(arg[n:])
		}
		argv = append(argv, arg[:n:n])
	}
	return argv, nil
}

// loadFile loads the AOF at path. A cut last command is dropped, and the
// file cut before it if last (it is the file the server appends to);
// keep, if not nil, receives the bytes of the whole commands.
func (l *loader) loadFile(path string, last bool) error {
	return l.load(path, last, nil)
}

func (l *loader) load(path string, last bool, keep *[]byte) error {
	if l.start.IsZero() {
		l.start = time.Now()
	}
	f, err := l.store.open(path)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer f.Close()
	r := &aofReader{r: bufio.NewReaderSize(f, 64<<10)}
	if head, _ := r.r.Peek(5); string(head) == "REDIS" {
		if err := l.loadRDB(r.r, path); err != nil {
			return err
		}
		return nil
	}
	var valid, beforeMulti int64
	var cut error
	for {
		off := r.off
		argv, err := r.command()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, errCorrupt) || (errors.Is(err, errHole) && !last) {
				return fmt.Errorf("redis: bad file format reading the append only file %s at offset %d: make a backup of your AOF file, then use redis-check-aof --fix %s", path, off, path)
			}
			cut = err
			break
		}
		if err := l.apply(argv, off, &beforeMulti); err != nil {
			return fmt.Errorf("redis: %s at offset %d of %s", err, off, path)
		}
		if !l.inMulti {
			valid = r.off
		}
	}
	if l.inMulti && cut == nil {
		cut = errors.New("MULTI without EXEC")
	}
	if l.inMulti {
		l.inMulti, l.multi = false, nil
		valid = beforeMulti
	}
	if keep != nil {
		if err := l.appendFileBytes(keep, path, valid); err != nil {
			return err
		}
	}
	if cut == nil {
		return nil
	}
	if !last {
		return fmt.Errorf("redis: %s ends in the middle of a command (%v): only the last file may", path, cut)
	}
	l.truncated = true
	log.Printf("!!! Warning: short read while loading the AOF file %s (%v) !!!", path, cut)
	log.Printf("AOF loaded anyway: the file is cut at offset %d, its last whole command, as redis-server's aof-load-truncated", valid)
	if err := l.store.truncate(path, valid); err != nil {
		return fmt.Errorf("redis: cutting the AOF: %w", err)
	}
	return nil
}

// appendFileBytes appends the first n bytes of the file at path to dst.
func (l *loader) appendFileBytes(dst *[]byte, path string, n int64) error {
	f, err := l.store.open(path)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	*dst = append(*dst, b...)
	return nil
}

// apply runs one command of the file, or queues it after MULTI.
func (l *loader) apply(argv [][]byte, off int64, beforeMulti *int64) error {
	cmd := lookup(argv[0])
	switch {
	case cmd == nil:
		return fmt.Errorf("unknown command '%s' reading the append only file", cString(argv[0]))
	case cmd.name == "multi":
		if l.inMulti {
			return errors.New("nested MULTI")
		}
		l.inMulti, *beforeMulti = true, off
		return nil
	case cmd.name == "exec":
		if !l.inMulti {
			return errors.New("EXEC without MULTI")
		}
		queued := l.multi
		l.inMulti, l.multi = false, nil
		for _, q := range queued {
			if err := l.run(q); err != nil {
				return err
			}
		}
		return nil
	case l.inMulti:
		l.multi = append(l.multi, argv)
		return nil
	}
	return l.run(argv)
}

// run runs one command on the dbs that own its keys.
func (l *loader) run(argv [][]byte) error {
	cmd := lookup(argv[0])
	if bad := refusal(cmd, argv); bad != "" {
		return errors.New(strings.TrimPrefix(bad, "ERR "))
	}
	if cmd.validate != nil {
		if bad := cmd.validate(argv); bad != "" {
			return errors.New(strings.TrimPrefix(bad, "ERR "))
		}
	}
	l.cmds++
	s := l.s
	out := l.out[:0]
	switch cmd.route {
	case routeConn:
		if cmd.name == "select" {
			if n, ok := parseInt(argv[1]); !ok || n != 0 {
				return fmt.Errorf("SELECT %s: this server has database 0 only", cString(argv[1]))
			}
		}
	case routeMulti: // WATCH, UNWATCH, DISCARD: nothing to load
	case routeKey:
		out, _ = cmd.run(&l.sts[s.owner(argv[1])].db, argv, out)
	case routeKeys, routePairs:
		step := 1
		if cmd.route == routePairs {
			step = 2
		}
		own := make([]int, 0, len(argv)/step)
		several := false
		for i := 1; i < len(argv); i += step {
			o := s.owner(argv[i])
			several = several || (len(own) > 0 && o != own[0])
			own = append(own, o)
		}
		if !several {
			out, _ = cmd.run(&l.sts[own[0]].db, argv, out)
			break
		}
		c := &txnCmd{cmd: cmd, nx: cmd.name == "msetnx", argv: argv, step: step, own: own, res: make([]result, len(own))}
		for i := range l.sts {
			c.runPart(&l.sts[i].db, i)
		}
		if c.nx {
			for i := range l.sts {
				c.writeNX(&l.sts[i].db, i)
			}
		}
	case routeAll:
		for i := range l.sts {
			out, _ = cmd.run(&l.sts[i].db, argv, out)
		}
	}
	l.out = out[:0]
	if cap(l.out) > 64<<10 {
		l.out = nil
	}
	return nil
}

// loadRedisDir loads a redis-server 7 AOF directory (dir/appendonlydir and
// its manifest name.manifest), if there is one: its base file, then its
// incremental files, in the manifest's order. Their commands are kept
// for the new file (imported).
func (l *loader) loadRedisDir(dir, name string) error {
	adir := filepath.Join(dir, "appendonlydir")
	mf, err := l.store.open(filepath.Join(adir, name+".manifest"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	manifest, err := io.ReadAll(mf)
	mf.Close()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	var base string
	var incr []string
	for _, line := range strings.Split(string(manifest), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var file, typ string
		for i := 0; i+1 < len(f); i += 2 {
			switch f[i] {
			case "file":
				file = f[i+1]
			case "type":
				typ = f[i+1]
			}
		}
		if file == "" || strings.ContainsAny(file, "/\\") {
			return fmt.Errorf("redis: %s.manifest: bad line %q", name, line)
		}
		switch typ {
		case "b":
			base = file
		case "i":
			incr = append(incr, file)
		}
	}
	files := incr
	if base != "" {
		files = append([]string{base}, incr...)
	}
	for i, file := range files {
		if err := l.load(filepath.Join(adir, file), i == len(files)-1, &l.imported); err != nil {
			return err
		}
	}
	log.Printf("read the redis-server AOF directory %s (%d files): its commands go into %s", adir, len(files), filepath.Join(dir, name))
	return nil
}

// loadRDB reads an RDB file (a base file of redis-server's AOF
// directory, or the RDB preamble of an old-style file): string keys, with
// their expiry, are loaded and kept for the new file as SET and
// PEXPIREAT; any other type is refused (start redis-server with
// aof-use-rdb-preamble no to have a base file of RESP commands).
func (l *loader) loadRDB(r *bufio.Reader, path string) error {
	bad := func(what string) error {
		return fmt.Errorf("redis: %s: %s (this server reads RDB files of string keys only: write the AOF with aof-use-rdb-preamble no)", path, what)
	}
	var head [9]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return bad("short RDB header")
	}
	var expire int64 = -1
	for {
		op, err := r.ReadByte()
		if err != nil {
			return bad("RDB cut before its end")
		}
		switch op {
		case 0xFF: // EOF, then the checksum
			if _, err := io.ReadFull(r, head[:8]); err != nil {
				return bad("RDB cut in its checksum")
			}
			if _, err := r.Peek(1); err != io.EOF {
				return bad("an RDB preamble followed by commands is not read")
			}
			return nil
		case 0xFA: // AUX field: name, value
			if _, err := rdbString(r); err != nil {
				return bad(err.Error())
			}
			if _, err := rdbString(r); err != nil {
				return bad(err.Error())
			}
		case 0xFE: // SELECTDB
			n, _, err := rdbLength(r)
			if err != nil {
				return bad(err.Error())
			}
			if n != 0 {
				return bad("SELECTDB " + strconv.FormatUint(n, 10))
			}
		case 0xFB: // RESIZEDB: two lengths
			for range 2 {
				if _, _, err := rdbLength(r); err != nil {
					return bad(err.Error())
				}
			}
		case 0xFC: // EXPIRETIME_MS
			if _, err := io.ReadFull(r, head[:8]); err != nil {
				return bad("RDB cut")
			}
			expire = int64(binary.LittleEndian.Uint64(head[:8]))
		case 0xFD: // EXPIRETIME (seconds)
			if _, err := io.ReadFull(r, head[:4]); err != nil {
				return bad("RDB cut")
			}
			expire = int64(binary.LittleEndian.Uint32(head[:4])) * 1000
		case 0: // a string key
			k, err := rdbString(r)
			if err != nil {
				return bad(err.Error())
			}
			v, err := rdbString(r)
			if err != nil {
				return bad(err.Error())
			}
			cmds := [][][]byte{{[]byte("SET"), k, v}}
			if expire >= 0 {
				cmds = append(cmds, [][]byte{[]byte("PEXPIREAT"), k, []byte(strconv.FormatInt(expire, 10))})
			}
			for _, c := range cmds {
				if err := l.run(c); err != nil {
					return err
				}
				l.imported = appendCommand(l.imported, c)
			}
			expire = -1
		default:
			return bad(fmt.Sprintf("RDB value type %d", op))
		}
	}
}

// rdbLength reads an RDB length; special is set for the encoded strings
// (integers, LZF).
func rdbLength(r *bufio.Reader) (n uint64, special bool, err error) {
	b, err := r.ReadByte()
	if err != nil {
		return 0, false, errors.New("RDB cut")
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3F), false, nil
	case 1:
		c, err := r.ReadByte()
		if err != nil {
			return 0, false, errors.New("RDB cut")
		}
		return uint64(b&0x3F)<<8 | uint64(c), false, nil
	case 3:
		return uint64(b & 0x3F), true, nil
	}
	var buf [8]byte
	switch b {
	case 0x80:
		if _, err := io.ReadFull(r, buf[:4]); err != nil {
			return 0, false, errors.New("RDB cut")
		}
		return uint64(binary.BigEndian.Uint32(buf[:4])), false, nil
	case 0x81:
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return 0, false, errors.New("RDB cut")
		}
		return binary.BigEndian.Uint64(buf[:]), false, nil
	}
	return 0, false, errors.New("bad RDB length")
}

// rdbString reads an RDB string: raw, an integer, or LZF-compressed.
func rdbString(r *bufio.Reader) ([]byte, error) {
	n, special, err := rdbLength(r)
	if err != nil {
		return nil, err
	}
	if special {
		var buf [4]byte
		var v int64
		switch n {
		case 0:
			b, err := r.ReadByte()
			if err != nil {
				return nil, errors.New("RDB cut")
			}
			v = int64(int8(b))
		case 1:
			if _, err := io.ReadFull(r, buf[:2]); err != nil {
				return nil, errors.New("RDB cut")
			}
			v = int64(int16(binary.LittleEndian.Uint16(buf[:2])))
		case 2:
			if _, err := io.ReadFull(r, buf[:4]); err != nil {
				return nil, errors.New("RDB cut")
			}
			v = int64(int32(binary.LittleEndian.Uint32(buf[:4])))
		case 3: // LZF: the compressed length, the length, the bytes
			clen, _, err := rdbLength(r)
			if err != nil {
				return nil, err
			}
			n, _, err := rdbLength(r)
			if err != nil {
				return nil, err
			}
			if clen > uint64(DefaultMaxBulk) || n > uint64(DefaultMaxBulk) {
				return nil, errors.New("RDB string too long")
			}
			in := make([]byte, clen)
			if _, err := io.ReadFull(r, in); err != nil {
				return nil, errors.New("RDB cut")
			}
			return lzfDecompress(in, int(n))
		default:
			return nil, errors.New("bad RDB string encoding")
		}
		return strconv.AppendInt(nil, v, 10), nil
	}
	if n > uint64(DefaultMaxBulk) {
		return nil, errors.New("RDB string too long")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, errors.New("RDB cut")
	}
	return b, nil
}

// lzfDecompress decompresses LZF data (liblzf's format, as RDB files
// hold it) into n bytes.
func lzfDecompress(in []byte, n int) ([]byte, error) {
	bad := errors.New("bad LZF string in the RDB")
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			k := ctrl + 1
			if i+k > len(in) || len(out)+k > n {
				return nil, bad
			}
			out = append(out, in[i:i+k]...)
			i += k
			continue
		}
		k := ctrl >> 5 // a back reference of k+2 bytes
		if k == 7 {
			if i >= len(in) {
				return nil, bad
			}
			k += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, bad
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		if ref < 0 || len(out)+k+2 > n {
			return nil, bad
		}
		for j := range k + 2 {
			out = append(out, out[ref+j])
		}
	}
	if len(out) != n {
		return nil, bad
	}
	return out, nil
}
