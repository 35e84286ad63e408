// Package wscase runs the WebSocket cases of the bundled benchmarks
// (BenchmarkWeb's ws_echo and ws_idle): a server process answers
// WebSocket echo on GET /ws/echo, and this process drives it with plain
// clients on package net.
//
// Both servers run in processes of their own, so that each is measured
// the same way, from its own runtime's figures: spindle's (this same
// executable started with ServerEnv set: package web and web/websocket on
// one loop) and gorilla/websocket's (bench/wspeer, a nested module so
// that the library's go.mod never names gorilla, built with go build).
// Each prints its address, then answers "stats" with its allocations so
// far and its live heap and stacks after collecting.
package wscase

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/child"
	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/wsclient"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
	"github.com/spindle-rt/spindle/web/websocket"
)

// Conns is how many connections ws_echo uses, each with one message in
// flight.
const Conns = 50

// IdleConns is how many WebSockets ws_idle holds.
const IdleConns = 10_000

// Message is the binary message every client sends (and gets back).
var Message = bytes.Repeat([]byte("m"), 64)

// ServerEnv makes a process the spindle server (value "1").
const ServerEnv = "SPINDLE_WSCASE_SERVER"

func init() {
	if os.Getenv(ServerEnv) == "1" {
		os.Exit(serverMain())
	}
}

// serverMain serves WebSocket echo with package web on one loop.
func serverMain() int {
	netcase.RaiseFileLimit()
	ex := executor.New(executor.WithName("wscase"))
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	mux := web.NewMux()
	mux.HandleFunc("GET /ws/echo", func(w *web.ResponseWriter, r *web.Request) {
		c, err := websocket.Upgrade(w, r)
		if err != nil {
			return
		}
		c.Serve(func(c *websocket.Conn, m websocket.Message) { c.WriteMessage(m.Type, m.Data) }, nil)
	})
	srv := &web.Server{Handler: mux}
	srv.Serve(l)
	defer srv.Close()
	Answer(l.Addr().String(), os.Stdin, os.Stdout)
	return 0
}

// Answer is a server process's side of the protocol the cases speak to
// it: it prints "addr ADDR" to out, then answers each "stats" line read
// from in with Stats and each "heap PATH" by writing a heap profile to
// PATH, until in ends. Servers in other modules (the peers
// in bench/peers) use it with Start.
func Answer(addr string, in io.Reader, out io.Writer) {
	fmt.Fprintln(out, "addr", addr)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "stats":
			fmt.Fprintln(out, Stats())
		case strings.HasPrefix(line, "heap "):
			if err := writeHeapProfile(strings.TrimPrefix(line, "heap ")); err != nil {
				fmt.Fprintln(out, "err", err)
			} else {
				fmt.Fprintln(out, "ok")
			}
		default:
			fmt.Fprintln(out, "err unknown command")
		}
	}
}

// Stats is the answer to "stats": "ok MALLOCS LIVE".
func Stats() string {
	var ms runtimeMemStats
	readMemStats(&ms)
	mallocs := ms.Mallocs
	gc()
	readMemStats(&ms)
	return fmt.Sprintf("ok %d %d", mallocs, ms.HeapAlloc+ms.StackInuse)
}

// Server is a server process.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

// StartSpindle starts the spindle server.
func StartSpindle(b testing.TB) (*Server, error) {
	return withCleanup(b, SpindleProcess)
}

// SpindleProcess starts the spindle server (this executable, with
// ServerEnv set) outside a test; the caller closes it.
func SpindleProcess() (*Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ServerEnv+"=1")
	return startProcess(cmd)
}

func withCleanup(b testing.TB, start func() (*Server, error)) (*Server, error) {
	s, err := start()
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { s.Close() })
	return s, nil
}

var (
	gorillaOnce sync.Once
	gorillaExe  string
	gorillaErr  error
)

// StartGorilla builds bench/wspeer (once per process) and starts it; it
// fails when the nested module cannot be found or built (no go tool, no
// module cache and no proxy).
func StartGorilla(b testing.TB) (*Server, error) {
	return withCleanup(b, GorillaProcess)
}

// GorillaProcess builds and starts bench/wspeer, as StartGorilla does,
// outside a test; the caller closes it.
func GorillaProcess() (*Server, error) {
	gorillaOnce.Do(func() {
		dir, err := wspeerDir()
		if err != nil {
			gorillaErr = err
			return
		}
		tmp, err := os.MkdirTemp("", "wspeer")
		if err != nil {
			gorillaErr = err
			return
		}
		exe := filepath.Join(tmp, "wspeer")
		cmd := exec.Command("go", "build", "-o", exe, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			gorillaErr = fmt.Errorf("go build in %s: %v\n%s", dir, err, out)
			return
		}
		gorillaExe = exe
	})
	if gorillaErr != nil {
		return nil, gorillaErr
	}
	return startProcess(exec.Command(gorillaExe))
}

// wspeerDir finds bench/wspeer under the root of the main module.
func wspeerDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("wscase: not inside spindle's module: run from the repository")
	}
	dir := filepath.Join(filepath.Dir(gomod), "bench", "wspeer")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", err
	}
	return dir, nil
}

// Start starts cmd, a server process that speaks as Answer does, and
// returns once it has said its address; b's cleanup ends it.
func Start(b testing.TB, cmd *exec.Cmd) (*Server, error) {
	return withCleanup(b, func() (*Server, error) { return startProcess(cmd) })
}

func startProcess(cmd *exec.Cmd) (*Server, error) {
	in, out, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, in: in, out: out}
	line, err := s.out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 2 || f[0] != "addr" {
		s.Close()
		return nil, fmt.Errorf("wscase: server said %q: %v", line, err)
	}
	s.Addr = f[1]
	return s, nil
}

// Stats returns the server's allocations so far and its live bytes.
func (s *Server) Stats() (mallocs, live uint64, err error) {
	if _, err := io.WriteString(s.in, "stats\n"); err != nil {
		return 0, 0, err
	}
	line, err := s.out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "ok" {
		return 0, 0, fmt.Errorf("wscase: stats: %q %v", line, err)
	}
	mallocs, _ = strconv.ParseUint(f[1], 10, 64)
	live, _ = strconv.ParseUint(f[2], 10, 64)
	return mallocs, live, nil
}

// Pid is the server process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// HeapProfile has the server write a heap profile (runtime/pprof's "heap")
// to path; a server that does not know the command (bench/wspeer) fails.
func (s *Server) HeapProfile(path string) error {
	if _, err := fmt.Fprintf(s.in, "heap %s\n", path); err != nil {
		return err
	}
	line, err := s.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ok" {
		return fmt.Errorf("wscase: heap: %q %v", line, err)
	}
	return nil
}

// Close ends the server process.
func (s *Server) Close() error {
	if s.in == nil {
		return nil
	}
	s.in.Close()
	s.in = nil
	return s.cmd.Wait()
}

// RoundTrip sends Message as one binary message on c and reads its echo.
func RoundTrip(c *wsclient.Client) error {
	if err := c.Binary(Message); err != nil {
		return err
	}
	op, p, err := c.ReadMessage()
	if err != nil {
		return err
	}
	if op != wsclient.OpBinary || !bytes.Equal(p, Message) {
		return fmt.Errorf("wscase: echo %d %q", op, p)
	}
	return nil
}

// DialAll opens n WebSockets to addr's /ws/echo from laddr (nil: any
// local address), par at a time, each making one round trip. On an error
// it closes those it opened.
func DialAll(laddr net.Addr, addr string, n, par int) ([]*wsclient.Client, error) {
	cs := make([]*wsclient.Client, n)
	errs := make([]error, par)
	var wg sync.WaitGroup
	d := net.Dialer{LocalAddr: laddr, Timeout: 30 * time.Second}
	for g := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += par {
				nc, err := d.Dial("tcp", addr)
				if err != nil {
					errs[g] = err
					return
				}
				nc.SetDeadline(time.Now().Add(60 * time.Second))
				c, err := wsclient.Handshake(nc, addr, "/ws/echo")
				if err == nil {
					err = RoundTrip(c)
				}
				nc.SetDeadline(time.Time{})
				if err != nil {
					nc.Close()
					errs[g] = err
					return
				}
				cs[i] = c
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		CloseAll(cs)
		return nil, err
	}
	return cs, nil
}

// CloseAll closes every client of cs that is not nil.
func CloseAll(cs []*wsclient.Client) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}

// Echo runs ws_echo on the server start makes: Conns WebSockets, each
// with one 64-byte binary message in flight, at least b.N messages in
// all. It reports ns/req (wall time per message over all connections),
// allocs/req (the server's) and p99-ns/req (of a round trip).
func Echo(b *testing.B, start func(testing.TB) (*Server, error)) {
	s, err := start(b)
	if err != nil {
		b.Skipf("wscase: %v", err)
	}
	cs, err := DialAll(nil, s.Addr, Conns, 10)
	if err != nil {
		b.Fatal(err)
	}
	defer CloseAll(cs)
	per := max(1, (b.N+Conns-1)/Conns)
	run := func(rounds int) ([]time.Duration, error) {
		lat := make([][]time.Duration, len(cs))
		errs := make([]error, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.C.SetDeadline(time.Now().Add(5 * time.Minute))
				l := make([]time.Duration, 0, rounds)
				for range rounds {
					t0 := time.Now()
					if err := RoundTrip(c); err != nil {
						errs[i] = err
						return
					}
					l = append(l, time.Since(t0))
				}
				lat[i] = l
			}()
		}
		wg.Wait()
		return slices.Concat(lat...), errors.Join(errs...)
	}
	if _, err := run(20); err != nil { // warm up
		b.Fatal(err)
	}
	m0, _, err := s.Stats()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	t0 := time.Now()
	lat, err := run(per)
	elapsed := time.Since(t0)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	m1, _, err := s.Stats()
	if err != nil {
		b.Fatal(err)
	}
	n := float64(per * Conns)
	slices.Sort(lat)
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/req")
	b.ReportMetric(float64(m1-m0)/n, "allocs/req")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns/req")
}

// Idle runs ws_idle: each of b.N iterations starts a server, opens
// IdleConns WebSockets to it (each makes one round trip, then stays
// open), and reports B/conn, the live heap and stacks the server's
// process holds per WebSocket.
func Idle(b *testing.B, start func(testing.TB) (*Server, error)) {
	if lim := netcase.RaiseFileLimit(); lim < IdleConns+256 {
		b.Skipf("wscase: %d WebSockets need %d open files, RLIMIT_NOFILE allows %d", IdleConns, IdleConns+256, lim)
	}
	var live float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s, err := start(b)
		if err != nil {
			b.Skipf("wscase: %v", err)
		}
		_, l0, err := s.Stats()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cs, err := DialAll(nil, s.Addr, IdleConns, 8)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		_, l1, err := s.Stats()
		if err != nil {
			b.Fatal(err)
		}
		live += float64(int64(l1) - int64(l0))
		CloseAll(cs)
		s.Close()
	}
	b.ReportMetric(live/float64(b.N*IdleConns), "B/conn")
}
