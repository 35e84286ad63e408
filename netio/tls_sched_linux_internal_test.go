//go:build linux

package netio

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/testcert"
)

// policy returns the scheduling policy of the calling thread.
func policy(t *testing.T) uint32 {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a.Policy
}

// lower sets the thread to SCHED_IDLE and raise gives it its policy back;
// a thread that cannot be raised stays locked (its goroutine then ends).
func TestLoweredThread(t *testing.T) {
	type result struct {
		before, low, after uint32
		lowered, raised    bool
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		var l lowered
		r.before = policy(t)
		if r.lowered = l.lower(); r.lowered {
			r.low = policy(t)
			r.raised = l.raise()
			r.after = policy(t)
		}
		ch <- r
		// If it was not raised the goroutine is still locked: it ends
		// locked, and its thread ends with it.
	}()
	r := <-ch
	if !r.lowered {
		t.Skip("this system does not let a thread take SCHED_IDLE")
	}
	if r.low != unix.SCHED_IDLE {
		t.Fatalf("lowered thread's policy %d, want SCHED_IDLE", r.low)
	}
	if !r.raised {
		t.Skip("the process may not leave SCHED_IDLE (unprivileged, RLIMIT_NICE below 20)")
	}
	if r.after != r.before {
		t.Fatalf("raised thread's policy %d, want %d", r.after, r.before)
	}
}

// Where a lowered thread cannot be raised, the handshake still completes,
// its worker ends with the thread, and later handshakes compute at the
// normal priority; goleak (TestMain) checks no worker is left.
func TestUnraisableThreadEndsItsWorker(t *testing.T) {
	var l lowered
	done := make(chan bool, 1)
	go func() {
		ok := l.lower()
		if ok {
			l.raise()
		}
		done <- ok
	}()
	if !<-done {
		t.Skip("this system does not let a thread take SCHED_IDLE")
	}
	schedSetAttr = func(pid int, attr *unix.SchedAttr, flags uint) error {
		if attr.Policy != unix.SCHED_IDLE {
			return unix.EPERM // as for an unprivileged process
		}
		return unix.SchedSetAttr(pid, attr, flags)
	}
	prev := SetHandshakePriority(HandshakePriorityIdle)
	defer func() {
		SetHandshakePriority(prev)
		schedSetAttr = unix.SchedSetAttr
		handshakeCPU.noRaise.Store(false)
	}()

	ca := testcert.MustNew("netio test CA")
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	ln, err := ListenTLS(ex, "tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.MustServer("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		accepted := ln.Accept() // the listener handshakes once accepting
		d := &tls.Dialer{Config: &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}}
		nc, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("handshake %d: %v", i, err)
		}
		c, err := accepted.Await(ctx)
		if err != nil {
			t.Fatalf("accept %d: %v", i, err)
		}
		if _, ok := c.ConnectionState(); !ok {
			t.Fatalf("connection %d has no TLS state", i)
		}
		c.Close()
		nc.Close()
		if !handshakeCPU.noRaise.Load() {
			t.Fatalf("after handshake %d, the pool still lowers threads it cannot raise", i)
		}
	}
}
