package netcase

// The parent's side of the load generator (Clients) and the child's
// command loop. The protocol between them, one line each way:
//
//	dial ADDR N        open N more connections to ADDR and make one
//	                   round trip on each; answer "ok"
//	run ROUNDS DEPTH   make ROUNDS round trips of DEPTH requests spread over
//	                   every open connection; answer "ok"
//	latency ADDR N     open one more connection to ADDR, make N round trips
//	                   of one request on it, one at a time, timing each,
//	                   and close it; answer "ok P50 P99 P999 MAX" (ns)
//	timed ROUNDS 1     as run with depth 1, timing every round trip from
//	                   its write to its reply's last byte; answer
//	                   "ok P50 P99 P999 MAX" (ns) over all of them
//	(end of input)     close every connection and exit 0
//
// A TLS child (ChildTLSEnv) speaks TLS on its connections, and also takes
//
//	handshake ADDR N,PAR   make N full handshakes with ADDR, PAR at a time,
//	                       each on a new connection; answer "ok"
//	hsload ADDR RATE,PAR   start handshakes with ADDR at RATE a second, at
//	                       most PAR in flight, in the background; answer "ok"
//	hsstop                 stop them, wait for those in flight; answer
//	                       "ok MADE FAILED ELAPSED" (ELAPSED in ns)
//
// An error is answered "err MESSAGE", and the child exits 1.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/internal/child"
	"github.com/spindle-rt/spindle/executor"
)

// Size is the size of a request and of its reply.
const Size = 64

// Conns is how many client connections the request cases load a server
// with.
const Conns = 64

// Depth is how many requests the pipeline cases write at a time.
const Depth = 16

// ChildEnv is the environment variable that makes a process the load
// generator (value "1").
const ChildEnv = "SPINDLE_NETCASE_CLIENT"

// ServerEnv is the environment variable that makes a process serve alone
// (value "spindle" or "go_net"), for counting the server's system calls
// apart from the clients' (syscalls.sh): it prints the server's address,
// serves until its input ends, and exits.
const ServerEnv = "SPINDLE_NETCASE_SERVER"

func init() {
	if os.Getenv(ChildEnv) == "1" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
	if name := os.Getenv(ServerEnv); name != "" {
		os.Exit(serverMain(name, os.Stdin, os.Stdout))
	}
}

// serverMain serves the server named name until in ends; it returns the
// exit status.
func serverMain(name string, in io.Reader, out io.Writer) int {
	var srv Server
	var err error
	switch name {
	case "spindle":
		srv, err = ServeSpindle(executor.New())
	case "go_net":
		srv, err = ServeGoNet()
	default:
		err = fmt.Errorf("unknown server %q (want spindle or go_net)", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netcase:", err)
		return 2
	}
	fmt.Fprintln(out, srv.Addr())
	io.Copy(io.Discard, in)
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "netcase:", err)
		return 1
	}
	return 0
}

// pattern returns depth requests, back to back: the bytes a round writes,
// and the bytes its replies must read.
func pattern(depth int) []byte {
	p := make([]byte, depth*Size)
	for i := range p {
		p[i] = 'a' + byte(i%Size%26)
	}
	return p
}

// driver is the child's client: driverLinux or driverNet.
type driver interface {
	// dial opens n more connections to addr and makes one round trip of
	// one request on each.
	dial(addr string, n int) error
	// run makes rounds round trips of depth requests over every open
	// connection.
	run(rounds, depth int) error
	// close closes every connection.
	close()
}

// childMain is the child's command loop over in and out; it returns the
// exit status.
func childMain(in io.Reader, out io.Writer) int {
	RaiseFileLimit()
	d := newDriver()
	if os.Getenv(ChildTLSEnv) == "1" {
		d = &driverTLS{}
		if v := os.Getenv(TLSNiceEnv); v != "" {
			n, err := strconv.Atoi(v)
			if err == nil {
				err = setNice(n)
			}
			if err != nil {
				fmt.Fprintf(out, "err %s=%q: %v\n", TLSNiceEnv, v, err)
				return 1
			}
		}
	}
	defer d.close()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		res, err := command(d, strings.Fields(sc.Text()))
		if err != nil {
			fmt.Fprintf(out, "err %v\n", err)
			return 1
		}
		if res != "" {
			fmt.Fprintln(out, "ok", res)
		} else {
			fmt.Fprintln(out, "ok")
		}
	}
	return 0
}

// command runs one command line, split in words, and returns what its
// answer carries after "ok".
func command(d driver, f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	if f[0] == "hsstop" && len(f) == 1 {
		dt, ok := d.(*driverTLS)
		if !ok {
			return "", errors.New("hsstop: not a TLS client")
		}
		return dt.stopLoad()
	}
	if len(f) != 3 {
		return "", fmt.Errorf("bad command %q", f)
	}
	switch f[0] {
	case "dial":
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad count %q", f[2])
		}
		return "", d.dial(f[1], n)
	case "run":
		rounds, err1 := strconv.Atoi(f[1])
		depth, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || rounds < 0 || depth < 1 {
			return "", fmt.Errorf("bad run %q", f)
		}
		return "", d.run(rounds, depth)
	case "latency":
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 1 {
			return "", fmt.Errorf("bad count %q", f[2])
		}
		lat, err := probe(f[1], n)
		if err != nil {
			return "", err
		}
		return quantiles(lat), nil
	case "timed":
		rounds, err := strconv.Atoi(f[1])
		td, ok := d.(timedDriver)
		if err != nil || rounds < 1 || f[2] != "1" || !ok {
			return "", fmt.Errorf("bad timed %q (or a client that does not time)", f)
		}
		lat, err := td.timed(rounds)
		if err != nil {
			return "", err
		}
		return quantiles(lat), nil
	case "handshake", "hsload":
		var n, par int
		dt, ok := d.(*driverTLS)
		if _, err := fmt.Sscanf(f[2], "%d,%d", &n, &par); err != nil || !ok || n < 1 || par < 1 {
			return "", fmt.Errorf("bad %s %q (or not a TLS client)", f[0], f)
		}
		if f[0] == "hsload" {
			return "", dt.startLoad(f[1], n, par)
		}
		return "", dt.handshakes(f[1], n, par)
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

// timedDriver is a driver that can time every round trip of a run.
type timedDriver interface {
	// timed makes rounds round trips of one request over every open
	// connection, as run does, and returns the time of each.
	timed(rounds int) ([]time.Duration, error)
}

// quantiles sorts lat (not empty) and answers its P50 P99 P999 MAX in ns.
func quantiles(lat []time.Duration) string {
	slices.Sort(lat)
	q := func(p float64) int64 { return lat[min(len(lat)-1, int(float64(len(lat))*p))].Nanoseconds() }
	return fmt.Sprintf("%d %d %d %d", q(0.5), q(0.99), q(0.999), lat[len(lat)-1].Nanoseconds())
}

// Clients is the parent's handle on one load generator process.
type Clients struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	mu   sync.Mutex // serializes commands
	open int        // connections opened
	err  error      // the first failure; every later command returns it
}

// StartClients starts a load generator process with no connections yet.
// Close it when done (it is closed by b's cleanup too).
func StartClients(b testing.TB) *Clients {
	b.Helper()
	c, err := startClients()
	if err != nil {
		b.Fatalf("netcase: starting the clients: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func startClients() (*Clients, error) { return startClientsEnv(false) }

// startClientsEnv starts a load generator, speaking TLS if tlsClient.
func startClientsEnv(tlsClient bool) (*Clients, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	if tlsClient {
		cmd.Env = append(cmd.Env, ChildTLSEnv+"=1")
	}
	in, out, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	return &Clients{cmd: cmd, in: in, out: out}, nil
}

// do sends one command and reads its answer.
func (c *Clients) do(format string, args ...any) error {
	_, err := c.ask(format, args...)
	return err
}

// ask sends one command and returns the words of its answer after "ok".
func (c *Clients) ask(format string, args ...any) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if c.in == nil {
		return nil, errors.New("netcase: clients: used after Close")
	}
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		c.err = fmt.Errorf("netcase: clients: %w", err)
		return nil, c.err
	}
	line, err := c.out.ReadString('\n')
	f := strings.Fields(line)
	switch {
	case err != nil:
		c.err = fmt.Errorf("netcase: clients: %w (the process ended?)", err)
	case len(f) == 0 || f[0] != "ok":
		c.err = fmt.Errorf("netcase: clients: %s", strings.TrimSpace(strings.TrimPrefix(line, "err ")))
	default:
		return f[1:], nil
	}
	return nil, c.err
}

// Dial opens n more connections to addr (a TCP address) and makes one
// round trip of one request on each, so that each has been accepted and
// served once.
func (c *Clients) Dial(addr string, n int) error {
	if err := c.do("dial %s %d", addr, n); err != nil {
		return err
	}
	c.open += n
	return nil
}

// Run makes ceil(requests/depth) round trips of depth requests each,
// spread over every open connection, and returns the number of requests
// made (a multiple of depth, at least requests).
func (c *Clients) Run(requests, depth int) (int, error) {
	if c.open == 0 {
		return 0, errors.New("netcase: Run with no connection open")
	}
	rounds := (requests + depth - 1) / depth
	return rounds * depth, c.do("run %d %d", rounds, depth)
}

// Timed makes at least requests round trips of one request, spread over
// every open connection as Run does, timing each from its write to the
// last byte of its reply, and returns their quantiles and the number made.
func (c *Clients) Timed(requests int) (Latency, int, error) {
	if c.open == 0 {
		return Latency{}, 0, errors.New("netcase: Timed with no connection open")
	}
	requests = max(requests, 1)
	f, err := c.ask("timed %d 1", requests)
	if err != nil {
		return Latency{}, 0, err
	}
	v, err := durations(f, 4)
	if err != nil {
		return Latency{}, 0, err
	}
	return Latency{P50: v[0], P99: v[1], P999: v[2], Max: v[3]}, requests, nil
}

// Close ends the process, which closes its connections, and waits for it.
// It is idempotent.
func (c *Clients) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.in == nil {
		return nil
	}
	c.in.Close()
	c.in = nil
	err := c.cmd.Wait()
	if c.err == nil && err != nil {
		c.err = fmt.Errorf("netcase: clients: %w", err)
	}
	return err
}
