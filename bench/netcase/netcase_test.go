package netcase

import (
	"io"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// servers are the servers of this package, each started fresh.
var servers = []struct {
	name  string
	start func() (Server, error)
}{
	{"go_net", func() (Server, error) { return ServeGoNet() }},
	{"spindle", func() (Server, error) { return ServeSpindle(executor.New()) }},
}

// The child's clients load each server: single requests and pipelined
// ones, every reply checked byte for byte by the child.
func TestServers(t *testing.T) {
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			srv, err := s.start()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cl := StartClients(t)
			if _, err := cl.Run(1, 1); err == nil {
				t.Error("Run without connections succeeded")
			}
			if err := cl.Dial(srv.Addr(), Conns); err != nil {
				t.Fatal(err)
			}
			for _, depth := range []int{1, Depth} {
				n, err := cl.Run(1000, depth)
				if err != nil || n < 1000 || n%depth != 0 {
					t.Errorf("Run(1000, %d) = %d, %v", depth, n, err)
				}
			}
			if err := cl.Close(); err != nil {
				t.Error(err)
			}
			if err := cl.Dial(srv.Addr(), 1); err == nil {
				t.Error("Dial after Close succeeded")
			}
		})
	}
}

// A server that answers with other bytes, or hangs up, fails the clients'
// command with a message that says so.
func TestBadServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		want  string
	}{
		{"wrong bytes", func(c net.Conn) {
			buf := make([]byte, Size)
			io.ReadFull(c, buf)
			buf[3] ^= 1
			c.Write(buf)
		}, "differ"},
		{"hang up", func(c net.Conn) { io.ReadFull(c, make([]byte, Size)) }, "closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan struct{})
			go func() {
				defer close(served)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tc.serve(c)
				c.Close()
			}()
			cl := StartClients(t)
			err = cl.Dial(ln.Addr().String(), 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial: %v, want an error that says %q", err, tc.want)
			}
			if _, err2 := cl.Run(1, 1); err2 == nil {
				t.Error("a command after a failure succeeded")
			}
			cl.Close()
			ln.Close()
			<-served
		})
	}
}

// The plain-beside-TLS server answers a latency probe on its plain
// listener while a TLS client handshakes with its TLS listener; the
// clients' commands report what they did, and misuse fails.
func TestBeside(t *testing.T) {
	srv, err := ServeSpindleBeside(executor.New())
	if err != nil {
		t.Fatal(err)
	}
	plain := StartClients(t)
	hs := StartTLSClients(t)
	if err := hs.StartHandshakeLoad(srv.TLSAddr(), 100, 4); err != nil {
		t.Fatal(err)
	}
	lat, err := plain.Latency(srv.Addr(), 500)
	if err != nil {
		t.Fatal(err)
	}
	if lat.P50 <= 0 || lat.P99 < lat.P50 || lat.P999 < lat.P99 || lat.Max < lat.P999 {
		t.Errorf("latency quantiles out of order: %+v", lat)
	}
	made, failed, elapsed, err := hs.StopHandshakeLoad()
	if err != nil || made < 1 || failed != 0 || elapsed <= 0 {
		t.Errorf("StopHandshakeLoad = %d made, %d failed, %v, %v; want at least the first made", made, failed, elapsed, err)
	}
	if _, _, _, err := hs.StopHandshakeLoad(); err == nil || !strings.Contains(err.Error(), "no load") {
		t.Errorf("a second StopHandshakeLoad: %v", err)
	}
	if err := plain.StartHandshakeLoad(srv.TLSAddr(), 100, 4); err == nil {
		t.Error("a plain client started a handshake load")
	}
	for _, c := range []*Clients{plain, hs} {
		c.Close()
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}
