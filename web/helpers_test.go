package web_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/web"
)

// serve starts srv on a running executor at a free loopback port and
// returns the address; both close when the test ends.
func serve(t testing.TB, srv *web.Server) (string, *executor.Executor) {
	t.Helper()
	ex := executor.New(executor.WithName(t.Name()))
	ex.Start()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ex.Close()
	})
	return l.Addr().String(), ex
}

// dial opens a client connection with a generous deadline.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// readResponses reads n responses to requests of the given methods.
func readResponse(t testing.TB, br *bufio.Reader, method string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	resp.Body.Close()
	return resp, b
}
