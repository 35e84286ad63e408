// Command slowloris measures how an echo server treats its good clients
// while many slow connections trickle bytes at it: Slow connections each
// send one byte every Every, and Good clients each make a 64-byte round
// trip every Pace; it reports the good clients' round-trip times (p50,
// p99, max) and the server's CPU time per second.
//
// Three servers are measured in one run, in interleaved rounds, each alone
// in a child process (netcase.ServerEnv) while this process is the load:
// go_net (a goroutine per connection on package net), spindle with netio's
// epoll backend, and spindle with netio's portable backend (package net
// and goroutines, -tags purego). The command builds the two spindle
// binaries with the go command it finds on PATH, so run it from the
// module:
//
//	go run ./bench/netcase/slowloris                  # 500 slow, 50 good, 5 s per server, 2 rounds
//	go run ./bench/netcase/slowloris -rounds 3 -dur 10s
//	go run ./bench/netcase/slowloris -servers spindle_purego -cpuprofile /tmp/p  # /tmp/p.spindle_purego.1
//	go run ./bench/netcase/slowloris -extra old=/tmp/old  # /tmp/old: go build -tags purego of another version
//
// For a spindle server it also prints the loop's tasks run per second and
// its busy share over the measured time (executor.Stats).
//
// The figures are wall-clock latencies on whatever else the machine runs:
// compare the servers of one run, and note the load average it prints.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/child"
	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/executor"
)

var (
	slowN  = flag.Int("slow", 500, "slow connections")
	goodN  = flag.Int("good", 50, "good clients")
	every  = flag.Duration("every", 100*time.Millisecond, "how often a slow connection sends its byte")
	pace   = flag.Duration("pace", 10*time.Millisecond, "how often a good client starts a round trip")
	dur    = flag.Duration("dur", 5*time.Second, "measured time per server per round")
	rounds = flag.Int("rounds", 2, "interleaved rounds")
	only   = flag.String("servers", "go_net,spindle_epoll,spindle_purego", "servers to measure, comma-separated")
	extra  = flag.String("extra", "", "more servers, comma-separated name=binary: a build of this command (as another version of spindle), serving spindle")
	prof   = flag.String("cpuprofile", "", "write each server's CPU profile of the measured time to this path plus .server.round")
)

// childEnv makes a process the server under test ("spindle" or "go_net"):
// it prints its address, then serves; a line "start <path>" on its input
// begins the measured time (and a CPU profile, if path is not "-"), "stop"
// ends it and prints the loop's figures; the end of its input ends it.
const childEnv = "SPINDLE_SLOWLORIS_SERVER"

func main() {
	if name := os.Getenv(childEnv); name != "" {
		if err := serve(name); err != nil {
			fmt.Fprintln(os.Stderr, "slowloris server:", err)
			os.Exit(1)
		}
		return
	}
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "slowloris:", err)
		os.Exit(1)
	}
}

// server is how to start one server under test.
type server struct {
	name string
	bin  string // binary to run with childEnv set
	env  string // its value
}

func run() error {
	if lim := netcase.RaiseFileLimit(); lim < uint64(*slowN+*goodN+64) {
		return fmt.Errorf("%d connections need more open files than RLIMIT_NOFILE's %d", *slowN+*goodN, lim)
	}
	dir, err := os.MkdirTemp("", "slowloris")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self := "github.com/spindle-rt/spindle/bench/netcase/slowloris"
	epoll, purego := filepath.Join(dir, "epoll"), filepath.Join(dir, "purego")
	for _, b := range []struct{ out, tags string }{{epoll, ""}, {purego, "purego"}} {
		args := []string{"build", "-o", b.out}
		if b.tags != "" {
			args = append(args, "-tags", b.tags)
		}
		cmd := exec.Command("go", append(args, self)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b.tags, err)
		}
	}
	all := []server{
		{"go_net", epoll, "go_net"},
		{"spindle_epoll", epoll, "spindle"},
		{"spindle_purego", purego, "spindle"},
	}
	var servers []server
	for _, s := range all {
		if slices.Contains(strings.Split(*only, ","), s.name) {
			servers = append(servers, s)
		}
	}
	if *extra != "" {
		for _, e := range strings.Split(*extra, ",") {
			name, bin, ok := strings.Cut(e, "=")
			if !ok {
				return fmt.Errorf("-extra %q: want name=binary", e)
			}
			servers = append(servers, server{name, bin, "spindle"})
		}
	}
	fmt.Printf("slow %d (1 byte every %v), good %d (64 B every %v), %v per server, %d rounds\n",
		*slowN, *every, *goodN, *pace, *dur, *rounds)
	fmt.Printf("%-6s %-15s %8s %8s %8s %8s %9s %8s  %-16s %s\n", "round", "server", "trips", "p50", "p99", "max", "cpu-ms/s", "slow-B", "loadavg", "loop")
	for r := 1; r <= *rounds; r++ {
		for _, s := range servers {
			profile := "-"
			if *prof != "" {
				profile = fmt.Sprintf("%s.%s.%d", *prof, s.name, r)
			}
			res, err := measure(s, profile)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			fmt.Printf("%-6d %-15s %8d %8s %8s %8s %9s %8d  %-16s %s\n", r, s.name, len(res.rtt),
				ms(res.q(0.50)), ms(res.q(0.99)), ms(res.q(1)), res.cpu, res.slowBytes, loadavg(), res.loop)
		}
	}
	return nil
}

// result is what one measurement found.
type result struct {
	rtt       []time.Duration // the good clients' round trips, sorted
	cpu       string          // the server's CPU ms per second, or "?"
	slowBytes int64           // echoed bytes the slow connections got back
	loop      string          // the server's report of its loop
}

func (r *result) q(f float64) time.Duration {
	if len(r.rtt) == 0 {
		return 0
	}
	return r.rtt[min(len(r.rtt)-1, int(f*float64(len(r.rtt))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

// measure starts s in a child process, opens the slow connections, lets
// them trickle for one Every, then runs the good clients for dur.
func measure(s server, profile string) (*result, error) {
	cmd := exec.Command(s.bin)
	cmd.Env = append(os.Environ(), childEnv+"="+s.env)
	in, rd, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	addr, err := rd.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the server's address: %w", err)
	}
	addr = strings.TrimSpace(addr)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var slowBytes atomic.Int64
	slow := make([]net.Conn, 0, *slowN)
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for i := range *slowN {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("slow connection %d: %w", i, err)
		}
		slow = append(slow, c)
	}
	for i, c := range slow {
		wg.Add(2)
		go func() { // the echoes of the slow connections' requests
			defer wg.Done()
			n, _ := io.Copy(io.Discard, c)
			slowBytes.Add(n)
		}()
		go func() {
			defer wg.Done()
			// Spread the connections over the period.
			t := time.NewTimer(*every * time.Duration(i) / time.Duration(len(slow)))
			defer t.Stop()
			b := []byte{'s'}
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				if _, err := c.Write(b); err != nil {
					return
				}
				t.Reset(*every)
			}
		}()
	}
	time.Sleep(*every) // every slow connection has begun to trickle

	if _, err := fmt.Fprintf(in, "start %s\n", profile); err != nil {
		return nil, err
	}
	cpu0, cpuOK := procCPU(cmd.Process.Pid)
	t0 := time.Now()
	var mu sync.Mutex
	var rtt []time.Duration
	var gwg sync.WaitGroup
	errc := make(chan error, *goodN)
	deadline := t0.Add(*dur)
	for i := range *goodN {
		gwg.Add(1)
		go func() {
			defer gwg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			req := make([]byte, netcase.Size)
			for j := range req {
				req[j] = byte('a' + (i+j)%26)
			}
			got := make([]byte, netcase.Size)
			var mine []time.Duration
			next := time.Now().Add(*pace * time.Duration(i) / time.Duration(*goodN))
			for {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // pacing the load, not synchronising
				}
				if time.Now().After(deadline) {
					break
				}
				start := time.Now()
				if _, err := c.Write(req); err != nil {
					errc <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errc <- err
					return
				}
				mine = append(mine, time.Since(start))
				if string(got) != string(req) {
					errc <- errors.New("wrong reply")
					return
				}
				next = next.Add(*pace)
				if now := time.Now(); next.Before(now) {
					next = now
				}
			}
			mu.Lock()
			rtt = append(rtt, mine...)
			mu.Unlock()
		}()
	}
	gwg.Wait()
	elapsed := time.Since(t0)
	cpu1, cpuOK1 := procCPU(cmd.Process.Pid)
	if _, err := fmt.Fprintln(in, "stop"); err != nil {
		return nil, err
	}
	loopLine, err := rd.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the server's figures: %w", err)
	}
	close(stop)
	for _, c := range slow {
		c.(*net.TCPConn).CloseWrite()
	}
	res := &result{cpu: "?", loop: strings.TrimSpace(loopLine)}
	if cpuOK && cpuOK1 {
		res.cpu = fmt.Sprintf("%.0f", float64((cpu1-cpu0).Milliseconds())/elapsed.Seconds())
	}
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	for _, c := range slow {
		c.Close()
	}
	slow = nil
	wg.Wait()
	res.slowBytes = slowBytes.Load()
	slices.Sort(rtt)
	res.rtt = rtt
	return res, nil
}

// procCPU returns the user plus system CPU time of process pid so far,
// from /proc (Linux; false elsewhere).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ut+st) * tick, true
}

// loadavg returns the first three fields of /proc/loadavg, or "?".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// serve is the body of a server process (childEnv).
func serve(name string) error {
	var srv netcase.Server
	var ex *executor.Executor
	var err error
	switch name {
	case "spindle":
		ex = executor.New()
		srv, err = netcase.ServeSpindle(ex)
	case "go_net":
		srv, err = netcase.ServeGoNet()
	default:
		err = fmt.Errorf("unknown server %q (want spindle or go_net)", name)
	}
	if err != nil {
		return err
	}
	fmt.Println(srv.Addr())
	sc := bufio.NewScanner(os.Stdin)
	var st0 executor.Stats
	var t0 time.Time
	var pf *os.File
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "start":
			if f[1] != "-" {
				if pf, err = os.Create(f[1]); err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
			}
			t0 = time.Now()
			if ex != nil {
				st0 = ex.Stats()
			}
		case len(f) == 1 && f[0] == "stop":
			el := time.Since(t0)
			if pf != nil {
				pprof.StopCPUProfile()
				if err := pf.Close(); err != nil {
					return err
				}
				pf = nil
			}
			line := "-"
			if ex != nil {
				st := ex.Stats()
				busy := st.Busy - st0.Busy
				line = fmt.Sprintf("tasks/s %.0f busy %.0f%%", float64(st.TasksRun-st0.TasksRun)/el.Seconds(),
					100*float64(busy)/float64(busy+st.Idle-st0.Idle))
			}
			fmt.Println(line)
		default:
			return fmt.Errorf("unknown command %q", sc.Text())
		}
	}
	return srv.Close()
}
