package netio_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/netio"
)

// withPriority sets the handshake priority for the rest of t.
func withPriority(t *testing.T, p netio.HandshakePriority) {
	t.Helper()
	prev := netio.SetHandshakePriority(p)
	t.Cleanup(func() { netio.SetHandshakePriority(prev) })
}

// Under each handshake priority the pool serves handshakes, concurrent
// ones too, DialTLS works, bad certificates fail, and a stalled handshake
// is closed at its timeout while others are served.
func TestTLSHandshakePriorities(t *testing.T) {
	for _, p := range []netio.HandshakePriority{netio.HandshakePriorityNormal, netio.HandshakePriorityIdle} {
		t.Run(p.String(), func(t *testing.T) {
			withPriority(t, p)
			ex := started(t)
			// The bound is the safety net: at the idle priority, on a
			// machine kept busy, a handshake waits long for the CPU.
			l := listenTLS(t, ex, serverConfig(), netio.WithHandshakeTimeout(spindletest.Safety))
			st := states(l)

			tc := mustDialTLS(t, l, clientConfig())
			echoOver(t, tc, "hello")
			if s := spindletest.Recv(t, st); s.Version != tls.VersionTLS13 {
				t.Fatalf("version %x", s.Version)
			}

			n := 8
			spindletest.Parallel(n, func(i int) {
				tc, err := dialTLS(t, l, clientConfig())
				if err != nil {
					t.Errorf("handshake %d: %v", i, err)
					return
				}
				echoOver(t, tc, fmt.Sprint("conn ", i))
				tc.Close()
			})
			for range n {
				spindletest.Recv(t, st)
			}

			c, err := spindletest.Await(t, netio.DialTLS(spindletest.Context(t), ex, "tcp", l.Addr().String(), clientConfig()))
			if err != nil {
				t.Fatalf("DialTLS: %v", err)
			}
			if s, ok := c.ConnectionState(); !ok || !s.HandshakeComplete {
				t.Fatalf("DialTLS's connection: %v %+v", ok, s)
			}
			spindletest.Recv(t, st) // before the close: one before its handshake ended would not be delivered
			c.Close()

			if _, err := dialTLS(t, l, &tls.Config{RootCAs: testCA().Pool, ServerName: "example.com"}); err == nil {
				t.Fatal("a handshake with the wrong name succeeded")
			}

			short := listenTLS(t, ex, serverConfig(), netio.WithHandshakeTimeout(100*time.Millisecond))
			sst := states(short)
			stalled := dialNet(t, short)
			stalled.Write(clientHello(t)[:20])
			var ne net.Error
			if _, err := io.ReadAll(stalled); errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("a stalled handshake was not closed: %v", err)
			}
			select {
			case <-sst:
				t.Fatal("a stalled connection was delivered")
			default:
			}
		})
	}
}

// SetHandshakePriority returns the priority it replaces and refuses one
// that is not defined.
func TestSetHandshakePriority(t *testing.T) {
	prev := netio.SetHandshakePriority(netio.HandshakePriorityIdle)
	defer netio.SetHandshakePriority(prev)
	if prev != netio.HandshakePriorityNormal {
		t.Fatalf("the default priority is %v", prev)
	}
	if got := netio.SetHandshakePriority(netio.HandshakePriorityIdle); got != netio.HandshakePriorityIdle {
		t.Fatalf("SetHandshakePriority returned %v, want idle", got)
	}
	for _, tt := range []struct {
		p    netio.HandshakePriority
		name string
	}{
		{netio.HandshakePriorityNormal, "normal"},
		{netio.HandshakePriorityIdle, "idle"},
		{7, "HandshakePriority(7)"},
	} {
		if tt.p.String() != tt.name {
			t.Errorf("%d.String() = %q, want %q", int(tt.p), tt.p.String(), tt.name)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("SetHandshakePriority(7) did not panic")
		}
	}()
	netio.SetHandshakePriority(7)
}
