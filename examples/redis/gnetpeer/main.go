// Command gnetpeer is the comparison peer of examples/redis: the same
// string, key and list commands served by gnet v2 (an event-loop
// networking library, one loop per core), with the keyspace in one map
// guarded by a sync.Mutex. It is the design a Go programmer reaching for
// an event loop would write: compare.sh runs redis-benchmark against it,
// redis-server and examples/redis in one interleaved run.
//
//	go run . -addr 127.0.0.1:6381
//
// It is a nested module so that the spindle module does not depend on
// gnet. Its RESP parser takes well-formed multibulk and inline requests
// (what redis-benchmark and redis-cli send); it does not reproduce Redis's
// error texts for malformed input, as examples/redis does.
package main

import (
	"bytes"
	"flag"
	"log"
	"strconv"
	"strings"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

type server struct {
	gnet.BuiltinEventEngine
	mu    sync.Mutex
	strs  map[string][]byte
	lists map[string][][]byte
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6381", "listen address")
	flag.Parse()
	s := &server{strs: map[string][]byte{}, lists: map[string][][]byte{}}
	log.Fatal(gnet.Run(s, "tcp://"+*addr, gnet.WithMulticore(true), gnet.WithReusePort(true)))
}

func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	var out []byte
	used := 0
	var argv [][]byte
	for {
		var n int
		var ok bool
		argv, n, ok = parse(buf[used:], argv[:0])
		if !ok {
			break
		}
		used += n
		if len(argv) > 0 {
			out = s.exec(argv, out)
		}
	}
	if len(out) > 0 {
		_, _ = c.Write(out)
	}
	_, _ = c.Discard(used)
	return gnet.None
}

// parse reads one request from b: its arguments (slices of b), the bytes
// it took, and ok false if it is not complete yet.
func parse(b []byte, argv [][]byte) ([][]byte, int, bool) {
	if len(b) == 0 {
		return argv, 0, false
	}
	if b[0] != '*' {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return argv, 0, false
		}
		argv = append(argv, bytes.Fields(b[:nl])...)
		return argv, nl + 1, true
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return argv, 0, false
	}
	n, _ := strconv.Atoi(string(bytes.TrimRight(b[1:nl], "\r")))
	pos := nl + 1
	for range n {
		nl := bytes.IndexByte(b[pos:], '\n')
		if nl < 0 {
			return argv, 0, false
		}
		l, _ := strconv.Atoi(string(bytes.TrimRight(b[pos+1:pos+nl], "\r")))
		pos += nl + 1
		if len(b)-pos < l+2 {
			return argv, 0, false
		}
		argv = append(argv, b[pos:pos+l])
		pos += l + 2
	}
	return argv, pos, true
}

func bulk(out, v []byte) []byte {
	out = append(out, '$')
	out = strconv.AppendInt(out, int64(len(v)), 10)
	out = append(out, '\r', '\n')
	out = append(out, v...)
	return append(out, '\r', '\n')
}

func integer(out []byte, n int64) []byte {
	out = append(out, ':')
	out = strconv.AppendInt(out, n, 10)
	return append(out, '\r', '\n')
}

func (s *server) exec(argv [][]byte, out []byte) []byte {
	name := strings.ToLower(string(argv[0]))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case name == "ping" && len(argv) == 1:
		return append(out, "+PONG\r\n"...)
	case name == "ping" && len(argv) == 2, name == "echo" && len(argv) == 2:
		return bulk(out, argv[1])
	case name == "set" && len(argv) >= 3:
		s.strs[string(argv[1])] = bytes.Clone(argv[2])
		delete(s.lists, string(argv[1]))
		return append(out, "+OK\r\n"...)
	case name == "get" && len(argv) == 2:
		v, ok := s.strs[string(argv[1])]
		if !ok {
			return append(out, "$-1\r\n"...)
		}
		return bulk(out, v)
	case name == "incr" && len(argv) == 2:
		n, _ := strconv.ParseInt(string(s.strs[string(argv[1])]), 10, 64)
		n++
		s.strs[string(argv[1])] = strconv.AppendInt(nil, n, 10)
		return integer(out, n)
	case name == "mset" && len(argv) >= 3 && len(argv)%2 == 1:
		for i := 1; i < len(argv); i += 2 {
			s.strs[string(argv[i])] = bytes.Clone(argv[i+1])
		}
		return append(out, "+OK\r\n"...)
	case name == "mget" && len(argv) >= 2:
		out = append(out, '*')
		out = strconv.AppendInt(out, int64(len(argv)-1), 10)
		out = append(out, '\r', '\n')
		for _, k := range argv[1:] {
			if v, ok := s.strs[string(k)]; ok {
				out = bulk(out, v)
			} else {
				out = append(out, "$-1\r\n"...)
			}
		}
		return out
	case (name == "del" || name == "exists") && len(argv) >= 2:
		n := 0
		for _, k := range argv[1:] {
			_, a := s.strs[string(k)]
			_, b := s.lists[string(k)]
			if a || b {
				n++
				if name == "del" {
					delete(s.strs, string(k))
					delete(s.lists, string(k))
				}
			}
		}
		return integer(out, int64(n))
	case (name == "lpush" || name == "rpush") && len(argv) >= 3:
		l := s.lists[string(argv[1])]
		for _, v := range argv[2:] {
			if name == "lpush" {
				l = append([][]byte{bytes.Clone(v)}, l...)
			} else {
				l = append(l, bytes.Clone(v))
			}
		}
		s.lists[string(argv[1])] = l
		return integer(out, int64(len(l)))
	case (name == "lpop" || name == "rpop") && len(argv) == 2:
		l := s.lists[string(argv[1])]
		if len(l) == 0 {
			return append(out, "$-1\r\n"...)
		}
		var v []byte
		if name == "lpop" {
			v, l = l[0], l[1:]
		} else {
			v, l = l[len(l)-1], l[:len(l)-1]
		}
		s.lists[string(argv[1])] = l
		return bulk(out, v)
	case name == "lrange" && len(argv) == 4:
		l := s.lists[string(argv[1])]
		start, _ := strconv.Atoi(string(argv[2]))
		end, _ := strconv.Atoi(string(argv[3]))
		if start < 0 {
			start += len(l)
		}
		if end < 0 {
			end += len(l)
		}
		start, end = max(start, 0), min(end, len(l)-1)
		if start > end {
			return append(out, "*0\r\n"...)
		}
		out = append(out, '*')
		out = strconv.AppendInt(out, int64(end-start+1), 10)
		out = append(out, '\r', '\n')
		for _, v := range l[start : end+1] {
			out = bulk(out, v)
		}
		return out
	case name == "dbsize" && len(argv) == 1:
		return integer(out, int64(len(s.strs)+len(s.lists)))
	case name == "flushall":
		s.strs, s.lists = map[string][]byte{}, map[string][][]byte{}
		return append(out, "+OK\r\n"...)
	case name == "config":
		return append(out, "*0\r\n"...)
	}
	return append(out, "-ERR unknown command '"+string(argv[0])+"'\r\n"...)
}
