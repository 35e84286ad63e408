package main

// Differential tests: the same bytes sent to this server and to a real
// redis-server 7, which must answer them alike, byte for byte. They need
// redis-server on the PATH (apt-get install redis-server) and skip
// without it.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// refServer is a redis-server run for a test on a Unix socket.
type refServer struct {
	sock string
}

// startRedis runs redis-server on a Unix socket in t.TempDir() until the
// test ends, or skips the test when redis-server is not installed.
func startRedis(t testing.TB) *refServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server): no reference to compare with")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	waitRedis(t, sock, filepath.Join(dir, "redis.log"))
	return &refServer{sock: sock}
}

// waitRedis waits for a redis-server that is starting to answer PING on
// the Unix socket sock; it fails the test with its log if it does not.
func waitRedis(t testing.TB, sock, logFile string) {
	t.Helper()
	deadline := time.Now().Add(spindletest.Safety)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			if err == nil {
				_, err = io.ReadFull(c, buf)
			}
			c.Close()
			if err == nil && string(buf) == "+PONG\r\n" {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("redis-server did not answer on %s: %s", sock, log)
		}
		time.Sleep(10 * time.Millisecond) // polling a process that is starting, not synchronising the test
	}
}

func (r *refServer) dial() (net.Conn, error) { return net.Dial("unix", r.sock) }

// exchange sends chunks on a new connection, one write each, half-closes
// it and returns everything the server sent until it closed.
func exchange(dial func() (net.Conn, error), chunks ...string) ([]byte, error) {
	c, err := dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(spindletest.Safety))
	if tc, ok := c.(*net.TCPConn); ok {
		// A chunk goes to the kernel in one write, at once, whatever the
		// load: the server's reads find it there, as redis-server's do.
		_ = tc.SetWriteBuffer(1 << 20)
	}
	for _, ch := range chunks {
		if _, err := io.WriteString(c, ch); err != nil {
			break // the server closed it (a protocol error): read what it said
		}
	}
	switch c := c.(type) {
	case *net.TCPConn:
		_ = c.CloseWrite()
	case *net.UnixConn:
		_ = c.CloseWrite()
	case *tls.Conn:
		_ = c.CloseWrite() // close_notify
	}
	out, err := io.ReadAll(c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		return out, err
	}
	return out, nil
}

// diffCases are sent as they are to both servers (after a FLUSHALL); the
// bytes each answers until it closes the connection must be the same.
var diffCases = []struct {
	name   string
	chunks []string
}{
	// A NUL before a line's end: Redis's strchr stops there, so the line
	// never ends and Redis waits (here until the half-close).
	{"nul inline", []string{"PING\x00\r\nPING\r\n"}},
	{"nul inline later", []string{"PING\r\nECHO a\x00b\r\n", "PING\r\n"}},
	{"nul count line", []string{"*1\x00\r\n$4\r\nPING\r\n"}},
	{"nul bulk line", []string{"*1\r\n$4\x00\r\nPING\r\nPING\r\n"}},
	{"nul too long", []string{"PING\x00" + strings.Repeat("x", 70000) + "\r\n"}},
	{"nul in bulk", []string{multibulk("SET", "k\x00", "a\x00b") + multibulk("GET", "k\x00")}},
	// A NUL in a command's name or arguments: the error shows the part
	// before it.
	{"nul name", []string{"*2\r\n$5\r\nGE\x00Tx\r\n$1\r\na\r\n"}},
	{"nul args", []string{"*3\r\n$3\r\nF\x00O\r\n$3\r\na\x00b\r\n$1\r\nc\r\n"}},
	{"nul subcommand", []string{multibulk("CLIENT", "x\x00y")}},
	{"unknown long", []string{multibulk(strings.Repeat("n", 200), strings.Repeat("a", 100), strings.Repeat("b", 100), "c")}},
	// MSETNX, and MSET, MGET, DEL and EXISTS over several shards,
	// pipelined: each takes effect in its place.
	{"msetnx", []string{
		"MSETNX a 1 b 2 c 3\r\nMSETNX c 4 d 5\r\nMGET a b c d\r\nSET e 1\r\nMSETNX d 1 e 2\r\nGET d\r\n" +
			"MSET a x b y e z\r\nMGET a b e\r\nEXISTS a b c d e f a\r\nDEL a b c d e a\r\nMSETNX a 1 a 2\r\nGET a\r\n",
		"MSETNX\r\nMSETNX a\r\nMSETNX a 1 b\r\nmsetnx a 1 b 2 c\r\nLPUSH l x\r\nMSETNX m 1 l 2\r\nMGET l m\r\nMSETNX \"\" \"\"\r\nMGET \"\"\r\n",
		multibulk("MSETNX", "k\x001", "v", "k\x002", "w") + multibulk("MGET", "k\x001", "k\x002", "k") + "DBSIZE\r\n",
	}},
	{"transaction then protocol error", []string{"MSET a 1 b 2 c 3 d 4\r\nMGET a b c d\r\n*2\r\n$4\r\nECHO\r\n$x\r\nPING\r\n"}},
	{"transaction then quit", []string{"MSET a 1 b 2 c 3 d 4\r\nQUIT\r\nPING\r\n"}},
	// ZPOPMIN's count.
	{"zpopmin count", []string{
		"ZPOPMIN z -1\r\nZPOPMIN z x\r\nZPOPMIN z 0\r\nZADD z 1 a 2 b 3 c\r\n" +
			"ZPOPMIN z -1\r\nZPOPMIN z x\r\nZPOPMIN z 0\r\nZPOPMIN z 1 2\r\nZPOPMIN z 99999999999999999999\r\n" +
			"ZPOPMIN z 1.5\r\nZPOPMIN z +1\r\nZPOPMIN z 01\r\nZPOPMIN z 2\r\nZPOPMIN z 9223372036854775807\r\n",
	}},
	// ZADD's scores, as strtod reads them.
	{"zadd floats", []string{
		"ZADD z 0x10 a\r\nZADD z 0x1p3 b\r\nZADD z 1e-400 c\r\nZADD z 3e-324 d\r\nZADD z 1e400 e\r\n" +
			"ZADD z +5 f\r\nZADD z 0x1.8 g\r\nZADD z infinity h\r\nZADD z -Inf i\r\nZADD z 0e-999 j\r\n" +
			"ZADD z 0x k\r\nZADD z 1_0 l\r\nZADD z .5 m\r\nZADD z 5. n\r\nZADD z 0x1p-1080 o\r\nZADD z 0X1P+2 p\r\n" +
			"ZADD z \"\" q\r\nZADD z \" 1\" q\r\nZADD z \"1 \" q\r\nZADD z 0x1P-1074 q\r\nZADD z -0x1p-1080 q\r\n" +
			"ZADD z 0x.8p1 r\r\nZADD z 1e s\r\nZADD z 0x1p s\r\nZADD z nan s\r\nZADD z -nan s\r\n" +
			"ZADD z 1.7976931348623157e308 t\r\nZADD z 1.7976931348623159e308 t\r\nZADD z 0e999999 u\r\n" +
			"ZADD z 1e-99999 u\r\nZADD z 00.0001e-400 u\r\nZADD z 0.000e-400 u\r\nZADD z 0x0p-9999 v\r\n" +
			"ZADD z 0x0.0001p-1070 w\r\nZADD z 1e-320 x\r\nZADD z 0.1 y\r\nZADD z -0.0 y2\r\nZADD z 1e22 y3\r\n" +
			"ZADD z 123456789012345678 y4\r\nZADD z inF y5\r\nZADD z +infinity y6\r\nZADD z infinit y7\r\n",
		multibulk("ZADD", "z", "1\x002", "nul"),
		"ZCARD z\r\n",
		"ZPOPMIN z 100\r\n",
	}},
	// Reads of whole sets, hashes and sorted sets. Sets of integers are
	// intsets for redis-server (numeric order), small hashes listpacks
	// (the order fields were first set); other sets are hash tables whose
	// order is redis-server's hash seed's, so they are not compared here.
	{"smembers hgetall type", []string{
		"SADD s 3 1 2 -5 10 9223372036854775807 -9223372036854775808\r\nSMEMBERS s\r\nSMEMBERS nosuch\r\nSET str v\r\n" +
			"SMEMBERS str\r\nHGETALL str\r\nHSET h b 1 a 2 c 3\r\nHSET h a 9 d 4\r\nHGETALL h\r\nHGETALL nosuch\r\n" +
			"SREM s 1 99\r\nSMEMBERS s\r\nSREM s 3 -5 10 2 9223372036854775807 -9223372036854775808\r\nEXISTS s\r\nSREM str x\r\nSREM nosuch x\r\n" +
			"SADD one 1\r\nSPOP one\r\nEXISTS one\r\nLPUSH l x\r\nZADD z 1 a\r\nSADD s2 7\r\n" +
			"TYPE str\r\nTYPE l\r\nTYPE s2\r\nTYPE h\r\nTYPE z\r\nTYPE nosuch\r\nHGETALL\r\nSMEMBERS a b\r\nSREM s\r\n",
	}},
	{"zrange", []string{
		"ZADD z 1 a 2 b 3 c 4 d 5 e\r\nZRANGE z 0 -1\r\nZRANGE z 0 -1 WITHSCORES\r\nZRANGE z -2 -1 withscores\r\n" +
			"ZRANGE z 3 1\r\nZRANGE z 0 100\r\nZRANGE z -100 1\r\nZRANGE z 0 1 REV\r\nZRANGE z 1 -1 rev withscores\r\n" +
			"ZRANGE z (1 4 BYSCORE\r\nZRANGE z -inf +inf BYSCORE LIMIT 1 2 WITHSCORES\r\nZRANGE z 4 (1 BYSCORE REV\r\n" +
			"ZRANGE z 0 -1 LIMIT 0 1\r\nZRANGE z [b (d BYLEX\r\nZRANGE z - + BYLEX\r\nZRANGE z + - BYLEX REV LIMIT 1 2\r\n" +
			"ZRANGE z - + BYLEX WITHSCORES\r\nZRANGE z x 1\r\nZRANGE z 0 y\r\nZRANGE z 0 1 foo\r\nZRANGE z a b BYSCORE\r\n" +
			"ZRANGE z a b BYLEX\r\nZRANGE nosuch 0 1\r\nZRANGE z 1 2 BYSCORE LIMIT -1 5\r\nZRANGE z 1 5 BYSCORE LIMIT 0 -1\r\n" +
			"ZRANGE z 1 2 BYSCORE LIMIT 10 1\r\nZRANGE z 1 5 BYSCORE LIMIT 1 0\r\nZRANGE z 0 -1 REV REV\r\nZRANGE z 0 -1 BYSCORE BYLEX\r\n" +
			"ZRANGE z \"( 1\" 3 BYSCORE\r\nZRANGE z \" 2\" 3 BYSCORE\r\nZRANGE z 1e400 inf BYSCORE\r\nZRANGE z -1e400 1e-400 BYSCORE\r\n" +
			"ZRANGE z nan 3 BYSCORE\r\nZRANGE z 0 -1 withscores withscores\r\nZRANGE z 0 1 LIMIT 1\r\nZRANGE z (3 (3 BYSCORE\r\n" +
			"ZRANGE z 3 1 BYSCORE\r\nZRANGE z x 1 LIMIT a b\r\nZRANGE z 0 1 LIMIT a b BYSCORE\r\n" +
			"ZADD z 1.5 x 0.1 y -inf m inf n\r\nZRANGE z 0 -1 WITHSCORES\r\nZRANGE z (1 +inf BYSCORE WITHSCORES\r\nSET str v\r\nZRANGE str 0 1\r\n" +
			"ZRANGE str x 1\r\nZRANGE z\r\nZRANGE z 1\r\n",
	}},
	{"expireat", []string{
		"SET k v\r\nEXPIREAT k 99999999999\r\nPERSIST k\r\nPEXPIREAT k 99999999999999 NX\r\nPEXPIREAT k 99999999999999 NX\r\n" +
			"PEXPIREAT k 1 GT\r\nPEXPIREAT k 1\r\nEXISTS k\r\nEXPIREAT nosuch 1\r\nSET k v\r\nEXPIREAT k x\r\n" +
			"EXPIREAT k 9223372036854775807\r\nPEXPIREAT k 9223372036854775807\r\nTTL k\r\nEXPIREAT k -1\r\nEXISTS k\r\nEXPIREAT k 1 XX LT\r\n",
	}},
	{"zadd errors", []string{"ZADD z 1\r\nZADD z 1 a 2\r\nZADD z x a\r\nSET s v\r\nZADD s 1 a\r\nZADD s x a\r\n"}},
	// The parser's edges.
	{"pipeline", []string{"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n", "*0\r\n*-1\r\n\r\nPING x\r\n"}},
	{"bad bulk after good", []string{"PING\r\n*2\r\n$4\r\nECHO\r\n$x\r\n"}},
	{"lf only", []string{"PING\nECHO hi\n"}},
	{"cr without lf", []string{"*1\r$4\r\nPING\r\n"}},
	// Lines over 64 KB, sent at once: redis-server refuses one only when
	// one of its reads ends past 64 KB of it and before its end, so the
	// sizes of its reads decide (reads.go): 16 KB, then up to 81,910
	// bytes on a new connection, more after requests or a large argument.
	{"line over 64 KB read whole", []string{"ECHO " + strings.Repeat("x", 70000) + "\r\nPING\r\n"}},
	{"line over 64 KB refused", []string{"ECHO " + strings.Repeat("x", 90000) + "\r\nPING\r\n"}},
	{"line over 80 KB after requests", []string{strings.Repeat("PING\r\n", 20) + "ECHO " + strings.Repeat("x", 90000) + "\r\nPING\r\n"}},
	{"line over 80 KB after a large argument", []string{multibulk("SET", "k", strings.Repeat("v", 40000)) + "ECHO " + strings.Repeat("x", 90000) + "\r\nPING\r\n"}},
	{"count line over 64 KB", []string{"*" + strings.Repeat("0", 70000) + "1\r\n$4\r\nPING\r\n"}},
	{"bulk count line over 80 KB", []string{"*1\r\n$" + strings.Repeat("0", 90000) + "4\r\nPING\r\n"}},
	{"line over 200 KB refused", []string{strings.Repeat("PING\r\n", 20) + "ECHO " + strings.Repeat("x", 200000) + "\r\nPING\r\n"}},
}

// Every case against redis-server, byte for byte.
func TestDifferential(t *testing.T) {
	ref := startRedis(t)
	s := start(t, Config{})
	ours := func() (net.Conn, error) { return net.Dial("tcp", s.Addr().String()) }
	for _, tc := range append(diffCases, multiCases...) {
		t.Run(tc.name, func(t *testing.T) {
			for _, dial := range []func() (net.Conn, error){ref.dial, ours} {
				if r, err := exchange(dial, "FLUSHALL\r\n"); err != nil || string(r) != "+OK\r\n" {
					t.Fatalf("FLUSHALL: %q %v", r, err)
				}
			}
			want, err := exchange(ref.dial, tc.chunks...)
			if err != nil {
				t.Fatalf("redis-server: %v", err)
			}
			got, err := exchange(ours, tc.chunks...)
			if err != nil {
				t.Fatalf("examples/redis: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("replies differ:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// field returns the bulk string after the bulk string name in a raw
// reply: the value of a field of COMMAND DOCS.
func field(reply []byte, name string) string {
	key := fmt.Sprintf("$%d\r\n%s\r\n$", len(name), name)
	i := bytes.Index(reply, []byte(key))
	if i < 0 {
		return ""
	}
	rest := reply[i+len(key)-1:]
	line, rest, _ := bytes.Cut(rest, []byte("\r\n"))
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n > len(rest) {
		return ""
	}
	return string(rest[:n])
}

// COMMAND DOCS tells each command's version and group as Redis does, and
// says which commands are atomic across shards: those over keys (routeKeys,
// routePairs), which run as transactions when their keys are on several
// shards (TestMSetAtomic shows it), and not those over every shard.
func TestCommandDocs(t *testing.T) {
	ref := startRedis(t)
	s := start(t, Config{})
	ours := func() (net.Conn, error) { return net.Dial("tcp", s.Addr().String()) }
	for _, cmd := range commandList {
		req := multibulk("COMMAND", "DOCS", cmd.name)
		want, err := exchange(ref.dial, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := exchange(ours, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"since", "group"} {
			if g, w := field(got, f), field(want, f); g != w || w == "" {
				t.Errorf("COMMAND DOCS %s: %s %q, Redis says %q", cmd.name, f, g, w)
			}
		}
		if cmd.route == routeKey || cmd.route == routeConn || cmd.route == routeMulti {
			continue
		}
		sum := field(got, "summary")
		atomic := cmd.route == routeKeys || cmd.route == routePairs
		switch {
		case atomic && (!strings.HasPrefix(sum, "Atomically ") || strings.Contains(sum, "not atomically")):
			t.Errorf("COMMAND DOCS %s: %q, but its keys on different shards are handled atomically", cmd.name, sum)
		case !atomic && (strings.Contains(sum, "Atomically") || !strings.HasSuffix(sum, "not atomically.")):
			t.Errorf("COMMAND DOCS %s: %q, but it runs on the shards one at a time, not atomically", cmd.name, sum)
		}
	}
}
