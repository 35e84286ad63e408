// Command wshold is a load test of idle WebSockets: it starts a WebSocket
// echo server as a process of its own (spindle's package web and
// web/websocket on one loop, bench/wscase's server; or, with -server
// gorilla, net/http with gorilla/websocket, bench/wspeer), has client
// processes open -idle WebSockets to it from several source addresses
// (127.0.0.2, 127.0.0.3, ...: one per client process, so that no source
// runs out of ephemeral ports), and reports
//
//   - the server's resident set growth per idle WebSocket, read from
//     /proc/PID/status (VmRSS) before and after they are opened, both as
//     it stands and after the server has collected (runtime.GC), with the
//     live heap and stacks the server's runtime counts;
//   - the round-trip latency (p50, p99) of -active echo clients, each with
//     one 64-byte message in flight, and the server's CPU time per
//     message (/proc/PID/stat), with no idle WebSocket, while they are
//     all held, and again once they are closed.
//
// Run it from the repository (the gorilla server is built from
// bench/wspeer with go build):
//
//	go run ./bench/wshold -idle 19000 -procs 4
//	go run ./bench/wshold -server gorilla -idle 19000 -procs 4
//
// -heap PATH has the spindle server write a heap profile while the idle
// WebSockets are held. Every process needs -idle/-procs descriptors and the
// server -idle plus a few; wshold raises RLIMIT_NOFILE to its hard limit
// and says so when that is too low. It exits non-zero on any error.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/child"
	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/bench/wscase"
	"github.com/spindle-rt/spindle/internal/wsclient"
)

// clientEnv makes a process an idle-client process (value "1").
const clientEnv = "SPINDLE_WSHOLD_CLIENT"

func init() {
	if os.Getenv(clientEnv) == "1" {
		os.Exit(clientMain(os.Stdin, os.Stdout))
	}
}

func main() {
	cfg := config{}
	flag.StringVar(&cfg.server, "server", "spindle", "the server: spindle (package web) or gorilla (net/http and gorilla/websocket)")
	flag.IntVar(&cfg.idle, "idle", 19000, "idle WebSockets to hold")
	flag.IntVar(&cfg.procs, "procs", 4, "client processes holding them, each from a source address of its own (127.0.0.2, ...)")
	flag.IntVar(&cfg.active, "active", 50, "active echo clients")
	flag.IntVar(&cfg.rounds, "rounds", 2000, "round trips each active client makes per phase")
	flag.StringVar(&cfg.heap, "heap", "", "write the spindle server's heap profile here while the idle WebSockets are held")
	flag.Parse()
	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wshold:", err)
		os.Exit(1)
	}
}

type config struct {
	server         string
	idle, procs    int
	active, rounds int
	heap           string
}

// phase is what one run of the active clients measured.
type phase struct {
	p50, p99 time.Duration
	cpu      time.Duration // the server's user and system time
	msgs     int
}

func (p phase) String() string {
	return fmt.Sprintf("p50 %v  p99 %v  server CPU %.1f µs/msg", p.p50, p.p99, float64(p.cpu.Nanoseconds())/1e3/float64(p.msgs))
}

// memory is the server's memory at one point.
type memory struct {
	rss     int64 // VmRSS, bytes, as it stands
	rssGC   int64 // VmRSS after the server has collected
	live    int64 // live heap and stacks, after collecting
	threads int
}

func run(cfg config, out io.Writer) error {
	if cfg.idle < 0 || cfg.procs < 1 || cfg.active < 1 || cfg.rounds < 1 || cfg.procs > 250 {
		return errors.New("-idle >= 0, 1 <= -procs <= 250, -active >= 1 and -rounds >= 1, please")
	}
	if cfg.heap != "" && cfg.server != "spindle" {
		return errors.New("-heap is for the spindle server")
	}
	need := uint64(cfg.idle/cfg.procs + cfg.active + 64)
	if lim := netcase.RaiseFileLimit(); lim < max(need, uint64(cfg.idle+64)) {
		return fmt.Errorf("RLIMIT_NOFILE allows %d open files; the server needs %d", lim, cfg.idle+64)
	}
	var s *wscase.Server
	var err error
	switch cfg.server {
	case "spindle":
		s, err = wscase.SpindleProcess()
	case "gorilla":
		s, err = wscase.GorillaProcess()
	default:
		return fmt.Errorf("-server %q: spindle or gorilla", cfg.server)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(out, "server %s (pid %d) on %s; %d idle WebSockets from %d client processes; %d active clients, %d round trips each per phase\n",
		cfg.server, s.Pid(), s.Addr, cfg.idle, cfg.procs, cfg.active, cfg.rounds)

	act, err := wscase.DialAll(nil, s.Addr, cfg.active, 10)
	if err != nil {
		return fmt.Errorf("active clients: %w", err)
	}
	defer wscase.CloseAll(act)
	if _, err := echo(s, act, max(1, cfg.rounds/10)); err != nil { // warm up
		return err
	}
	before, err := echo(s, act, cfg.rounds)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "no idle:        %v\n", before)
	m0, err := measure(s)
	if err != nil {
		return err
	}

	t0 := time.Now()
	holders, err := hold(s.Addr, cfg.idle, cfg.procs)
	defer func() {
		for _, h := range holders {
			h.close()
		}
	}()
	if err != nil {
		return err
	}
	opened := time.Since(t0)
	m1, err := measure(s)
	if err != nil {
		return err
	}
	if cfg.heap != "" {
		if err := s.HeapProfile(cfg.heap); err != nil {
			return err
		}
	}
	during, err := echo(s, act, cfg.rounds)
	if err != nil {
		return err
	}
	per := func(a, b int64) string {
		if cfg.idle == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f B/conn", float64(b-a)/float64(cfg.idle))
	}
	fmt.Fprintf(out, "opened %d idle WebSockets in %v\n", cfg.idle, opened.Round(time.Millisecond))
	fmt.Fprintf(out, "server RSS:     %.1f MB -> %.1f MB (+%.1f MB, %s)\n", mb(m0.rss), mb(m1.rss), mb(m1.rss-m0.rss), per(m0.rss, m1.rss))
	fmt.Fprintf(out, "RSS after GC:   %.1f MB -> %.1f MB (+%.1f MB, %s)\n", mb(m0.rssGC), mb(m1.rssGC), mb(m1.rssGC-m0.rssGC), per(m0.rssGC, m1.rssGC))
	fmt.Fprintf(out, "live heap+stack %.1f MB -> %.1f MB (+%.1f MB, %s); threads %d -> %d\n", mb(m0.live), mb(m1.live), mb(m1.live-m0.live), per(m0.live, m1.live), m0.threads, m1.threads)
	fmt.Fprintf(out, "with %d idle:  %v\n", cfg.idle, during)
	for _, h := range holders {
		if err := h.close(); err != nil {
			return err
		}
	}
	holders = nil
	after, err := echo(s, act, cfg.rounds)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "idle closed:    %v\n", after)
	fmt.Fprintf(out, "p99 with idle / p99 without: %.2f (before), %.2f (after)\n",
		float64(during.p99)/float64(before.p99), float64(during.p99)/float64(after.p99))
	return nil
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// measure reads the server's VmRSS, has it collect (its "stats"), and
// reads VmRSS again.
func measure(s *wscase.Server) (memory, error) {
	var m memory
	var err error
	if m.rss, _, err = procStatus(s.Pid()); err != nil {
		return m, err
	}
	_, live, err := s.Stats()
	if err != nil {
		return m, err
	}
	m.live = int64(live)
	m.rssGC, m.threads, err = procStatus(s.Pid())
	return m, err
}

// procStatus reads VmRSS (in bytes) and Threads from /proc/PID/status.
func procStatus(pid int) (rss int64, threads int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "VmRSS:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb * 1024
			found++
		case len(f) >= 2 && f[0] == "Threads:":
			threads, _ = strconv.Atoi(f[1])
			found++
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or Threads", pid)
	}
	return rss, threads, nil
}

// procCPU is the process's user plus system time, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// clockTicks is sysconf(_SC_CLK_TCK), 100 on every Linux port Go runs on.
const clockTicks = 100

// echo has each client make rounds round trips at once and returns the
// latency percentiles and the server's CPU time.
func echo(s *wscase.Server, cs []*wsclient.Client, rounds int) (phase, error) {
	c0, err := procCPU(s.Pid())
	if err != nil {
		return phase{}, err
	}
	lat := make([][]time.Duration, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.C.SetDeadline(time.Now().Add(5 * time.Minute))
			defer c.C.SetDeadline(time.Time{})
			l := make([]time.Duration, 0, rounds)
			for range rounds {
				t0 := time.Now()
				if err := wscase.RoundTrip(c); err != nil {
					errs[i] = err
					return
				}
				l = append(l, time.Since(t0))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return phase{}, err
	}
	c1, err := procCPU(s.Pid())
	if err != nil {
		return phase{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return phase{p50: all[(len(all)-1)/2], p99: all[(len(all)-1)*99/100], cpu: c1 - c0, msgs: len(all)}, nil
}

// holder is a client process holding idle WebSockets.
type holder struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// hold starts procs client processes that open n WebSockets to addr
// between them, process i from 127.0.0.(i+2), and returns once all are
// open.
func hold(addr string, n, procs int) ([]*holder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var hs []*holder
	for i := range procs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), clientEnv+"=1")
		in, out, err := child.Start(cmd)
		if err != nil {
			return hs, err
		}
		h := &holder{cmd: cmd, in: in, out: out}
		hs = append(hs, h)
		share := n / procs
		if i < n%procs {
			share++
		}
		if _, err := fmt.Fprintf(in, "dial 127.0.0.%d %s %d\n", i+2, addr, share); err != nil {
			return hs, err
		}
	}
	var errs []error
	for i, h := range hs {
		line, err := h.out.ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ok" {
			err = errors.New(strings.TrimSpace(line))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client process %d: %w", i, err))
		}
	}
	return hs, errors.Join(errs...)
}

// close ends the client process, which closes its WebSockets.
func (h *holder) close() error {
	if h.in == nil {
		return nil
	}
	h.in.Close()
	h.in = nil
	return h.cmd.Wait()
}

// clientMain is a client process: it answers "dial SRCIP ADDR N" by
// opening N WebSockets to ADDR from SRCIP (each making one round trip),
// holds them, and closes them when its input ends.
func clientMain(in io.Reader, out io.Writer) int {
	netcase.RaiseFileLimit()
	var held []*wsclient.Client
	defer func() { wscase.CloseAll(held) }()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var err error
		if len(f) == 4 && f[0] == "dial" {
			var n int
			n, err = strconv.Atoi(f[3])
			if err == nil {
				var cs []*wsclient.Client
				cs, err = wscase.DialAll(&net.TCPAddr{IP: net.ParseIP(f[1])}, f[2], n, 8)
				held = append(held, cs...)
			}
		} else {
			err = fmt.Errorf("bad command %q", sc.Text())
		}
		if err != nil {
			fmt.Fprintln(out, "err", err)
			return 1
		}
		fmt.Fprintln(out, "ok")
	}
	return 0
}
