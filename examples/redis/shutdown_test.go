package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// SIGTERM while 50 clients pipeline: the server (this package's main, in
// a process of its own) stops accepting, answers every request it has
// read, and each client receives whole replies, in order, then the end of
// the stream: no cut reply, no reset.
func TestSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*spindletest.Safety)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runMainEnv+"=-addr 127.0.0.1:0 -shards 2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		if m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("the server did not say where it listens")
	}
	var logs strings.Builder
	logged := make(chan struct{})
	go func() {
		for lines.Scan() {
			logs.WriteString(lines.Text() + "\n")
		}
		close(logged)
	}()

	big := strings.Repeat("v", 1<<10)
	setup, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(setup, multibulk("SET", "big", big))
	if r, _ := bufio.NewReader(setup).ReadString('\n'); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	setup.Close()

	// Every client connects, then all pipeline at once; SIGTERM comes with
	// the first reply, while most requests are in flight.
	const clients = 50
	cs := make([]net.Conn, clients)
	for i := range cs {
		if cs[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the server has accepted them all: a connection still in
	// the listener's backlog when it closes is reset by the kernel.
	for {
		info := infoClients(t, addr)
		if info >= clients+1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the server accepted %d of %d clients", info-1, clients)
		}
	}
	var first sync.Once
	replied := make(chan struct{})
	var done sync.WaitGroup
	errs := make(chan error, clients)
	counts := make([]int, clients)
	for i := range clients {
		done.Add(1)
		go func() {
			defer done.Done()
			errs <- pipeliner(cs[i], i, big, func() { first.Do(func() { close(replied) }) }, &counts[i])
		}()
	}
	<-replied
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server exited with %v", err)
	}
	<-logged
	if t.Failed() {
		t.Logf("server log:\n%s", logs.String())
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	t.Logf("%d clients, %d whole replies of %d requests sent before the end of their streams", clients, total, clients*400)
}

// pipeliner sends INCR and GET requests in batches of 40, without waiting
// for their replies, and reads until the server ends the stream, and checks every reply: ":1", the value, ":2", the value...
// It reports a cut reply, a reset or a wrong reply.
func pipeliner(conn net.Conn, id int, big string, replied func(), count *int) error {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(spindletest.Safety))
	key := "counter:" + strconv.Itoa(id)
	var batch strings.Builder
	for range 20 {
		batch.WriteString(multibulk("INCR", key))
		batch.WriteString(multibulk("GET", "big"))
	}
	stop := make(chan struct{})
	go func() {
		for range 10 { // 400 requests in all, so a slow machine drains them in time
			select {
			case <-stop:
				return
			default:
			}
			if _, err := io.WriteString(conn, batch.String()); err != nil {
				return
			}
		}
	}()
	defer close(stop)
	r := bufio.NewReaderSize(conn, 128<<10)
	want := "$" + strconv.Itoa(len(big)) + "\r\n"
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			return nil // the end of the stream, between replies
		}
		if err != nil {
			return fmt.Errorf("client %d, reply %d: %q, then %v", id, 2*n-1, line, cut(err))
		}
		if line != ":"+strconv.Itoa(n)+"\r\n" {
			return fmt.Errorf("client %d, reply %d: %q, want :%d", id, 2*n-1, line, n)
		}
		line, err = r.ReadString('\n')
		if err == nil && line == want {
			buf := make([]byte, len(big)+2)
			if _, err = io.ReadFull(r, buf); err == nil && string(buf) != big+"\r\n" {
				return fmt.Errorf("client %d, reply %d: another value", id, 2*n)
			}
		}
		if err != nil {
			return fmt.Errorf("client %d, reply %d: %v", id, 2*n, cut(err))
		}
		if line != want {
			return fmt.Errorf("client %d, reply %d: %q", id, 2*n, line)
		}
		*count += 2
		replied()
	}
}

func cut(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the stream ended inside a reply")
	}
	return err
}

// infoClients asks the server at addr for its connected_clients, its own
// connection included.
func infoClients(t *testing.T, addr string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(spindletest.Safety))
	_, _ = io.WriteString(c, multibulk("INFO", "clients"))
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || len(head) < 4 {
		t.Fatalf("INFO: %q %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	_, v, _ := strings.Cut(string(body), "connected_clients:")
	v, _, _ = strings.Cut(v, "\r\n")
	got, _ := strconv.Atoi(v)
	return got
}

// QUIT after a large reply, with more requests behind it: the client
// receives the whole reply and +OK, then the end of the stream, not a
// reset (the server shuts its write side, then drops the rest).
func TestQuitWithUnreadInput(t *testing.T) {
	s := start(t, Config{Shards: 2})
	c := dial(t, s)
	v := strings.Repeat("q", 4<<20)
	c.do("SET", "big", v)
	c.send(multibulk("GET", "big") + multibulk("QUIT"))
	want := "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n+OK\r\n"
	head, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	// Bytes the server will not read arrive while the reply is on its way.
	_, _ = io.WriteString(c.conn, strings.Repeat("PING\r\n", 1000))
	rest, err := io.ReadAll(c.r)
	got := head + string(rest)
	if err != nil {
		t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
	}
	if got != want {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
}
