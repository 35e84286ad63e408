// Command slowreaders measures what clients that never read cost a
// Redis-compatible server: it sets a key to a large value, opens clients
// that each send about 500 GETs of it in one write and never read, and
// reports the growth of the server's resident memory (from /proc, so the
// server must run on this machine) and how long another client's PING
// takes meanwhile.
//
//	go run ./examples/redis/slowreaders -addr 127.0.0.1:6380 -pid $(pgrep -n redis) -clients 10
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "the server's address")
	pid := flag.Int("pid", 0, "the server's process id (for its RSS)")
	clients := flag.Int("clients", 3, "clients that never read")
	size := flag.Int("value", 1<<20, "the value's size in bytes")
	wait := flag.Duration("wait", 3*time.Second, "how long the clients stay before the measurement")
	flag.Parse()
	if *pid == 0 {
		log.Fatal("slowreaders: -pid is needed")
	}

	ctl, err := net.Dial("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	r := bufio.NewReader(ctl)
	do := func(args ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(ctl, b.String()); err != nil {
			log.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			log.Fatal(err)
		}
		return line
	}
	do("SET", "k", strings.Repeat("x", *size))
	before := rss(*pid)

	get := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	req := strings.Repeat(get, 16<<10/len(get)) // 16 KiB: 819 GETs
	var conns []net.Conn
	for range *clients {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		if _, err := io.WriteString(c, req); err != nil {
			log.Fatal(err)
		}
		conns = append(conns, c)
	}
	peak := before
	for end := time.Now().Add(*wait); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		peak = max(peak, rss(*pid))
	}
	var worst time.Duration
	for range 20 {
		t0 := time.Now()
		_ = ctl.SetDeadline(t0.Add(10 * time.Second))
		if line := do("PING"); line != "+PONG\r\n" {
			log.Fatalf("PING: %q", line)
		}
		worst = max(worst, time.Since(t0))
	}
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			open++
		}
		c.Close()
	}
	fmt.Printf("clients=%d value=%d GETs/client=%d rss_before=%dMB rss_peak=%dMB growth=%dMB ping_worst=%v still_open=%d\n",
		*clients, *size, len(req)/len(get), before>>20, peak>>20, (peak-before)>>20, worst.Round(time.Microsecond), open)
}

// rss returns the resident set size of process pid, in bytes.
func rss(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
