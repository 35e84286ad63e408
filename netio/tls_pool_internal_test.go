package netio

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/testkit/testcert"
)

// poolOf returns ex's handshake pool as its loop sees it (nil: none yet).
func poolOf(t *testing.T, ex *executor.Executor) *handshakePool {
	t.Helper()
	p, err := future.Do(context.Background(), ex, func() (*handshakePool, error) {
		p, _ := (*loop.Loop)(ex).Local(handshakeKey{}).(*handshakePool)
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each executor owns its handshake pool: made on its first handshake,
// none before, another executor's is another pool, and closing the
// executor closes its pool (nothing more is queued) and ends its workers,
// those of a handshake stalled mid-way included.
func TestHandshakePoolOwnedByExecutor(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ca := testcert.MustNew("netio test CA")
	hello := make(chan struct{}, 4)
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.MustServer("127.0.0.1")}}
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		hello <- struct{}{} // on the handshake goroutine
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, b := executor.New(), executor.New()
	a.Start()
	b.Start()
	defer b.Close()
	ln, err := ListenTLS(a, "tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := poolOf(t, a); p != nil {
		t.Fatal("an executor has a handshake pool before its first handshake")
	}
	accepted := ln.Accept()
	d := &tls.Dialer{Config: &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}}
	nc, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := accepted.Await(ctx); err != nil {
		t.Fatal(err)
	}
	pa := poolOf(t, a)
	if pa == nil {
		t.Fatal("no handshake pool after a handshake")
	}
	if pb := poolOf(t, b); pb != nil {
		t.Fatal("another executor has a handshake pool without a handshake")
	}

	<-hello

	// A handshake that waits for its peer (it sent its ClientHello, and
	// nothing after the server's reply) holds a worker; the executor's
	// close ends it (goleak, deferred above).
	stalled, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	ln.Accept()
	if _, err := stalled.Write(clientHelloOf(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hello: // the worker runs the handshake
	case <-ctx.Done():
		t.Fatal("the stalled connection's handshake did not start")
	}
	a.Close()
	pa.mu.Lock()
	closed, queued := pa.closed, len(pa.q)
	pa.mu.Unlock()
	if !closed || queued != 0 {
		t.Fatalf("after the executor's close: pool closed %v, %d queued", closed, queued)
	}
	pa.queue(&tlsState{}) // as a late caller would: refused
	pa.mu.Lock()
	queued = len(pa.q)
	pa.mu.Unlock()
	if queued != 0 {
		t.Fatalf("a closed pool queued a handshake (%d queued)", queued)
	}
}

// clientHelloOf returns the first flight of a TLS client: its ClientHello.
func clientHelloOf(t *testing.T) []byte {
	c1, c2 := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Client(c1, &tls.Config{InsecureSkipVerify: true}).Handshake()
	}()
	buf := make([]byte, 4096)
	n, err := c2.Read(buf)
	c2.Close()
	c1.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}
