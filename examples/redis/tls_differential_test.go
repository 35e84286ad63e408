package main

// The differential over TLS: the cases of the plain differential, and
// redis-cli --tls, against this server's TLS listener and redis-server
// --tls-port, byte for byte. Certificates are made at test time. The
// tests skip when redis-server is absent or built without TLS.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/internal/testkit/testcert"
)

// writeTestCA writes to dir a CA (ca.pem) and a certificate for 127.0.0.1 and
// localhost it signed (cert.pem, key.pem), all made now, and returns a
// pool that trusts the CA.
func writeTestCA(t testing.TB, dir string) *x509.CertPool {
	t.Helper()
	ca, err := testcert.New("redis test CA")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteFiles(dir, "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	return ca.Pool
}

// tlsPair is this server and redis-server, each with a TLS address.
type tlsPair struct {
	dir       string
	pool      *x509.CertPool
	ref, ours string // TLS addresses
}

// dialer returns a dial of addr over TLS (handshake done) trusting the
// test CA.
func (p *tlsPair) dialer(addr string) func() (net.Conn, error) {
	return func() (net.Conn, error) {
		d := &tls.Dialer{Config: &tls.Config{RootCAs: p.pool, ServerName: "localhost"}}
		ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
		defer cancel()
		return d.DialContext(ctx, "tcp", addr)
	}
}

// startTLSPair runs redis-server with --tls-port and this server with its
// TLS listener (as -tls-addr and the files do), or skips.
func startTLSPair(t *testing.T) *tlsPair {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server): no reference to compare with")
	}
	dir := t.TempDir()
	p := &tlsPair{dir: dir, pool: writeTestCA(t, dir)}
	// A free port for redis-server: bound here, released, then given to it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p.ref = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithCancel(context.Background())
	logf := filepath.Join(dir, "redis.log")
	cmd := exec.CommandContext(ctx, bin, "--port", "0", "--bind", "127.0.0.1", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "cert.pem"), "--tls-key-file", filepath.Join(dir, "key.pem"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logf)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	deadline := time.Now().Add(spindletest.Safety)
	for {
		if r, err := exchange(p.dialer(p.ref), "PING\r\n"); err == nil && string(r) == "+PONG\r\n" {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf)
			if bytes.Contains(log, []byte("TLS")) && !bytes.Contains(log, []byte("tls-port")) || bytes.Contains(log, []byte("not supported")) {
				t.Skipf("redis-server lacks TLS support: %s", log)
			}
			t.Fatalf("redis-server exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf)
			t.Fatalf("redis-server did not answer over TLS on %s: %s", p.ref, log)
		}
		time.Sleep(10 * time.Millisecond) // polling a process that is starting, not synchronising the test
	}
	s := start(t, Config{})
	a, err := listenTLS(s, "127.0.0.1:0", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p.ours = a.String()
	return p
}

// TestDifferentialTLS: every case of the plain differential (malformed
// input, pipelines, a chunk per write) over TLS, byte for byte; and the
// same bytes cut into 1-byte writes, so records split commands anywhere.
func TestDifferentialTLS(t *testing.T) {
	p := startTLSPair(t)
	ref, ours := p.dialer(p.ref), p.dialer(p.ours)
	type tcase struct {
		name   string
		chunks []string
	}
	cases := make([]tcase, 0, len(diffCases)+2)
	for _, tc := range append(diffCases, multiCases...) {
		cases = append(cases, tcase{tc.name, tc.chunks})
	}
	var pipeline strings.Builder
	for i := range 200 {
		k := fmt.Sprintf("k%d", i%17)
		pipeline.WriteString(multibulk("SET", k, strings.Repeat("v", i)) + multibulk("GET", k) + "INCR n\r\nRPUSH l" + k + " x\r\n")
	}
	cases = append(cases,
		tcase{"pipeline 800", []string{pipeline.String(), "DBSIZE\r\n"}},
		tcase{"one byte per record", strings.Split("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nGET k\r\n*2\r\n$4\r\nECHO\r\n$x\r\n", "")})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, dial := range []func() (net.Conn, error){ref, ours} {
				if r, err := exchange(dial, "FLUSHALL\r\n"); err != nil || string(r) != "+OK\r\n" {
					t.Fatalf("FLUSHALL: %q %v", r, err)
				}
			}
			want, err := exchange(ref, tc.chunks...)
			if err != nil {
				t.Fatalf("redis-server: %v", err)
			}
			got, err := exchange(ours, tc.chunks...)
			if err != nil {
				t.Fatalf("examples/redis: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("replies differ (%d bytes, want %d):\n got %.300q\nwant %.300q", len(got), len(want), got, want)
			}
		})
	}
}

// TestRedisCLITLS: redis-cli --tls --cacert prints the same for both
// servers, command by command and with --pipe (skipped without
// redis-cli).
func TestRedisCLITLS(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	p := startTLSPair(t)
	run := func(addr, stdin string, args ...string) string {
		t.Helper()
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), spindletest.Safety)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append([]string{"--tls", "--cacert", filepath.Join(p.dir, "ca.pem"),
			"-h", host, "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var pipe strings.Builder
	for i := range 1000 {
		pipe.WriteString(multibulk("SET", fmt.Sprintf("p%d", i), strconv.Itoa(i)))
	}
	steps := []struct {
		stdin string
		args  []string
	}{
		{"", []string{"FLUSHALL"}},
		{"", []string{"PING"}},
		{"", []string{"SET", "greeting", "hello over tls"}},
		{"", []string{"GET", "greeting"}},
		{"", []string{"INCR", "greeting"}},
		{"", []string{"RPUSH", "l", "a", "b", "c"}},
		{"", []string{"LRANGE", "l", "0", "-1"}},
		{"", []string{"HSET", "h", "f", "1", "g", "2"}},
		{"", []string{"HGET", "h", "g"}},
		{"", []string{"HLEN", "h"}},
		{"", []string{"NOSUCH", "x"}},
		{"", []string{"--no-raw", "GET", "missing"}},
		{"SET a 1\nINCR a\nGET a\nMGET a b greeting\n", nil},
		{pipe.String(), []string{"--pipe"}},
		{"", []string{"DBSIZE"}},
		{"", []string{"GET", "p999"}},
	}
	for _, st := range steps {
		want := run(p.ref, st.stdin, st.args...)
		got := run(p.ours, st.stdin, st.args...)
		if got != want {
			t.Errorf("redis-cli %s:\n got %q\nwant %q", strings.Join(st.args, " "), got, want)
		}
	}
}
