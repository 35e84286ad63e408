// Package webcase runs the HTTP server cases of the bundled benchmarks
// (BenchmarkWeb): a server in this process answers GET /kv/{key} with a
// 64-byte value, and a load generator in a child process (this same
// executable, started with ChildEnv set) drives keep-alive connections,
// so that this process's time and allocations are the server's.
//
// The child has one goroutine per connection on package net, each making
// its round trips one after another (depth requests written at once, then
// the depth responses read), and it times each round trip for the p99.
// It learns the size of a response from the first one on each connection
// (http.ReadResponse) and reads the later ones whole by that size,
// checking that each ends with the value.
package webcase

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/bench/netcase"
)

// Conns is how many keep-alive connections the request cases use.
const Conns = 50

// Depth is how many requests the pipelined cases have in flight.
const Depth = 16

// IdleConns is how many connections the idle cases hold.
const IdleConns = 10_000

// ChildEnv makes a process the load generator (value "1").
const ChildEnv = "SPINDLE_WEBCASE_CLIENT"

// Value is the body of every response.
var Value = bytes.Repeat([]byte("v"), 64)

// Request is the request the clients send.
const Request = "GET /kv/key1 HTTP/1.1\r\nHost: bench\r\n\r\n"

func init() {
	if os.Getenv(ChildEnv) == "1" {
		os.Exit(childMain(os.Stdin, os.Stdout))
	}
}

// Server is a server under test, in this process.
type Server interface {
	Addr() string
	Close() error
}

// Clients is the parent's handle on the load generator.
type Clients struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// StartClients starts the load generator; it is closed by b's cleanup.
func StartClients(b testing.TB) *Clients {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &Clients{cmd: cmd, in: in, out: bufio.NewReader(out)}
	b.Cleanup(func() { c.Close() })
	return c
}

// do sends a command and returns the words of its "ok" answer.
func (c *Clients) do(format string, args ...any) ([]string, error) {
	if c.in == nil {
		return nil, errors.New("webcase: clients closed")
	}
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		return nil, err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("webcase: clients: %w (the process ended?)", err)
	}
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "ok" {
		return nil, fmt.Errorf("webcase: clients: %s", strings.TrimSpace(line))
	}
	return f[1:], nil
}

// Dial opens n connections to addr, each making one round trip.
func (c *Clients) Dial(addr string, n int) error {
	_, err := c.do("dial %s %d", addr, n)
	return err
}

// Run makes at least requests requests, depth at a time on each
// connection, and returns how many it made and the 99th percentile of a
// round trip.
func (c *Clients) Run(requests, depth int) (int, time.Duration, error) {
	rounds := (requests + depth - 1) / depth
	f, err := c.do("run %d %d", rounds, depth)
	if err != nil {
		return 0, 0, err
	}
	p99, _ := strconv.ParseInt(f[0], 10, 64)
	return rounds * depth, time.Duration(p99), nil
}

// Close ends the process, which closes its connections.
func (c *Clients) Close() error {
	if c.in == nil {
		return nil
	}
	c.in.Close()
	c.in = nil
	return c.cmd.Wait()
}

// Requests runs a request case on the server start makes: Conns
// connections, warmed up, then at least b.N requests depth at a time.
// begin and end bracket the measured requests (for the caller's meter);
// it reports p99-ns/req, the 99th percentile of a round trip.
func Requests(b *testing.B, start func() (Server, error), depth int, begin func(), end func(requests int)) {
	srv, err := start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cl := StartClients(b)
	if err := cl.Dial(srv.Addr(), Conns); err != nil {
		b.Fatal(err)
	}
	if _, _, err := cl.Run(Conns*depth*8, depth); err != nil {
		b.Fatal(err)
	}
	begin()
	n, p99, err := cl.Run(b.N, depth)
	end(n)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns/req")
	cl.Close()
}

// childMain is the load generator's command loop.
func childMain(in io.Reader, out io.Writer) int {
	netcase.RaiseFileLimit()
	var conns []*clientConn
	defer func() {
		for _, c := range conns {
			c.c.Close()
		}
	}()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var err error
		var answer string
		switch {
		case len(f) == 3 && f[0] == "dial":
			var n int
			n, err = strconv.Atoi(f[2])
			for i := 0; i < n && err == nil; i++ {
				var c *clientConn
				c, err = dialOne(f[1])
				if err == nil {
					conns = append(conns, c)
				}
			}
		case len(f) == 3 && f[0] == "run":
			rounds, _ := strconv.Atoi(f[1])
			depth, _ := strconv.Atoi(f[2])
			var p99 time.Duration
			p99, err = runAll(conns, rounds, depth)
			answer = " " + strconv.FormatInt(p99.Nanoseconds(), 10)
		default:
			err = fmt.Errorf("bad command %q", sc.Text())
		}
		if err != nil {
			fmt.Fprintf(out, "err %v\n", err)
			return 1
		}
		fmt.Fprintf(out, "ok%s\n", answer)
	}
	return 0
}

type clientConn struct {
	c    net.Conn
	size int // of one response
	req  []byte
	buf  []byte
	lat  []time.Duration
}

// dialOne opens a connection and makes one round trip, learning the size
// of a response.
func dialOne(addr string) (*clientConn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cr := &countReader{r: nc}
	if _, err := io.WriteString(nc, Request); err != nil {
		nc.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(cr, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		nc.Close()
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(body, Value) || br.Buffered() != 0 {
		nc.Close()
		return nil, fmt.Errorf("first response: %q %v", body, err)
	}
	return &clientConn{c: nc, size: cr.n}, nil
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// runAll makes rounds round trips of depth requests over the connections,
// one goroutine each, and returns the p99 of a round trip.
func runAll(conns []*clientConn, rounds, depth int) (time.Duration, error) {
	if len(conns) == 0 {
		return 0, errors.New("no connection")
	}
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		n := rounds / len(conns)
		if i < rounds%len(conns) {
			n++
		}
		c.req = bytes.Repeat([]byte(Request), depth)
		if len(c.buf) != c.size*depth {
			c.buf = make([]byte, c.size*depth)
		}
		c.lat = c.lat[:0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.rounds(n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	var all []time.Duration
	for _, c := range conns {
		all = append(all, c.lat...)
	}
	if len(all) == 0 {
		return 0, nil
	}
	slices.Sort(all)
	return all[(len(all)-1)*99/100], nil
}

func (c *clientConn) rounds(n int) error {
	c.c.SetDeadline(time.Now().Add(5 * time.Minute))
	for range n {
		t0 := time.Now()
		if _, err := c.c.Write(c.req); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.c, c.buf); err != nil {
			return err
		}
		c.lat = append(c.lat, time.Since(t0))
		if !bytes.HasSuffix(c.buf, Value) {
			return fmt.Errorf("response does not end with the value: %q", c.buf[len(c.buf)-min(len(c.buf), 80):])
		}
	}
	return nil
}
