package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

var crashKills = flag.Int("crash.kills", 20, "SIGKILLs in a row of TestCrash, per backend (3 with -short)")

// crashServer is the server run as a process of its own: the test binary
// running main (runMainEnv).
type crashServer struct {
	cmd   *exec.Cmd
	addr  string
	done  chan struct{} // closed once the process has exited and its output is read
	epoll bool          // io_uring was asked for and refused: the loops use epoll
}

// startCrashServer starts the server with an AOF in dir, under
// appendfsync always, with env added to its environment and the AOF's
// file layer aofio (-aofio).
func startCrashServer(t *testing.T, dir string, env []string, aofio string) *crashServer {
	t.Helper()
	args := "-addr 127.0.0.1:0 -shards 2 -appendonly yes -appendfsync always -aofio " + aofio + " -dir " + dir
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), runMainEnv+"="+args), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &crashServer{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	var logs strings.Builder
	var mu sync.Mutex
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			mu.Unlock()
			if strings.Contains(line, "SPINDLE_NETIO=uring asks for io_uring, which the kernel refuses") {
				s.epoll = true
			}
			if _, rest, ok := strings.Cut(line, "listening on "); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case s.addr = <-addr:
	case <-s.done:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the server ended before it listened:\n%s", logs.String())
	case <-time.After(spindletest.Safety):
		_ = cmd.Process.Kill()
		<-s.done
		t.Fatal("the server did not listen")
	}
	return s
}

// kill sends SIGKILL and waits for the process to end.
func (s *crashServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// crashClient is one client's history: its ops are numbered, and op j
// is, by j%4, SET c<i>:<j> j, RPUSH list<i> j, MSET a<i>:<j> j b<i>:<j> j
// (keys usually on two shards), INCR cnt<i>. Ops before settled were
// checked after a restart, and keys, list and cnt are what they left.
type crashClient struct {
	id      int
	next    int // the first op not yet sent
	acked   int // ops [0, acked) were answered
	settled int
	keys    int // the SET and MSET keys there
	list    []string
	cnt     int
}

func (c *crashClient) op(j int) []string {
	v := strconv.Itoa(j)
	id := strconv.Itoa(c.id)
	switch j % 4 {
	case 0:
		return []string{"SET", "c" + id + ":" + v, v}
	case 1:
		return []string{"RPUSH", "list" + id, v}
	case 2:
		return []string{"MSET", "a" + id + ":" + v, v, "b" + id + ":" + v, v}
	}
	return []string{"INCR", "cnt" + id}
}

// drive sends ops one at a time until the connection fails (the kill),
// recording those answered.
func (c *crashClient) drive(addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		_ = conn.SetDeadline(time.Now().Add(spindletest.Safety))
		if _, err := conn.Write([]byte(multibulk(c.op(c.next)...))); err != nil {
			return
		}
		c.next++
		line, err := r.ReadString('\n')
		if err != nil || line[0] == '-' {
			return
		}
		c.acked = c.next
	}
}

// The server killed with SIGKILL at a random moment under appendfsync
// always, then restarted: every write acknowledged is there, and none that
// was never sent; a write in flight at the kill is there whole or not at
// all (an MSET over two shards included). -crash.kills kills in a row, on
// epoll and on io_uring, and with the AOF on the first shard's loop
// (-aofio=loop).
func TestCrash(t *testing.T) {
	if testing.Short() && *crashKills > 3 {
		*crashKills = 3
	}
	for _, backend := range []string{"epoll", "uring", "loop"} {
		t.Run(backend, func(t *testing.T) {
			var env []string
			if backend == "uring" {
				env = []string{"SPINDLE_NETIO=uring"}
			}
			aofio := AOFIOThread
			if backend == "loop" {
				aofio = AOFIOLoop // the AOF on the first shard's loop (fileio), epoll
			}
			begin := time.Now()
			dir := t.TempDir()
			clients := make([]*crashClient, 4)
			for i := range clients {
				clients[i] = &crashClient{id: i}
			}
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			srv := startCrashServer(t, dir, env, aofio)
			if srv.epoll {
				srv.kill()
				t.Skip("the kernel refuses io_uring")
			}
			for kill := 0; kill < *crashKills; kill++ {
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c.drive(srv.addr)
					}()
				}
				time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond) // a random moment to kill it, not a synchronisation
				srv.kill()
				wg.Wait()
				srv = startCrashServer(t, dir, env, aofio)
				checkCrash(t, srv.addr, clients, kill)
			}
			srv.kill()
			total := 0
			for _, c := range clients {
				total += c.next
			}
			t.Logf("%s: %d kills, %d writes sent, all acknowledged ones found, in %v", backend, *crashKills, total, time.Since(begin).Round(time.Millisecond))
		})
	}
}

// checkCrash checks each client's ops since the last check, after a
// restart: each there if it was answered, none past those sent, the one in
// flight at the kill whole or not at all; then the keys there are, all
// rounds together. The op in flight is settled as it came out.
func checkCrash(t *testing.T, addr string, clients []*crashClient, kill int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc := &respClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	expect := 0
	for _, c := range clients {
		id := strconv.Itoa(c.id)
		want := append([]string(nil), c.list...)
		var inflight []string // an RPUSH not answered
		incrs, incrsInFlight := 0, 0
		for j := c.settled; j < c.next+4; j++ {
			v := strconv.Itoa(j)
			var there bool
			switch j % 4 {
			case 0:
				there = rc.do("EXISTS", "c"+id+":"+v) == ":1\r\n"
				if there {
					c.keys++
				}
			case 2:
				n := rc.do("EXISTS", "a"+id+":"+v, "b"+id+":"+v)
				if n == ":1\r\n" {
					t.Fatalf("kill %d: client %d's MSET %d is there in part", kill, c.id, j)
				}
				there = n == ":2\r\n"
				if there {
					c.keys += 2
				}
			case 1:
				switch {
				case j < c.acked:
					want = append(want, v)
				case j < c.next:
					inflight = append(inflight, v)
				}
				continue
			case 3:
				switch {
				case j < c.acked:
					incrs++
				case j < c.next:
					incrsInFlight++
				}
				continue
			}
			switch {
			case j < c.acked && !there:
				t.Fatalf("kill %d: client %d's op %d (%v) was acknowledged and is lost", kill, c.id, j, c.op(j))
			case j >= c.next && there:
				t.Fatalf("kill %d: client %d's op %d (%v) is there, never sent", kill, c.id, j, c.op(j))
			}
		}
		got := bulks(rc.do("LRANGE", "list"+id, "0", "-1"))
		if !slices.Equal(got, want) && !slices.Equal(got, append(want, inflight...)) {
			t.Fatalf("kill %d: client %d's list %v, want %v (and maybe %v)", kill, c.id, got, want, inflight)
		}
		c.list = got
		n := 0
		if r := rc.do("GET", "cnt"+id); r != "$-1\r\n" {
			n, _ = strconv.Atoi(bulks(r)[0])
		}
		if n < c.cnt+incrs || n > c.cnt+incrs+incrsInFlight {
			t.Fatalf("kill %d: client %d's counter %d, want %d (and %d in flight)", kill, c.id, n, c.cnt+incrs, incrsInFlight)
		}
		c.cnt = n
		c.settled, c.acked = c.next, c.next
		expect += c.keys
		if len(c.list) > 0 {
			expect++
		}
		if c.cnt > 0 {
			expect++
		}
	}
	if r := rc.do("DBSIZE"); r != fmt.Sprintf(":%d\r\n", expect) {
		t.Fatalf("kill %d: DBSIZE %q, want :%d: keys of earlier rounds are lost", kill, r, expect)
	}
}
