//go:build !race

package web_test

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

// TestAllocsPerRequest: a keep-alive GET, parsed, routed (with a
// wildcard) and answered on the loop, allocates one thing once the
// connection is warm: the copy of its head that its strings are parts of
// (so that they never change). The count is the whole process's, the
// client's included (it allocates nothing).
func TestAllocsPerRequest(t *testing.T) {
	addr, _ := serve(t, &web.Server{Handler: benchRoutes()})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /kv/key1 HTTP/1.1\r\nHost: x\r\n\r\n")
	c.Write(req)
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil || !bytes.HasSuffix(buf[:n], value64) {
		t.Fatalf("first response %q %v", buf[:n], err)
	}
	buf = buf[:n]
	round := func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(500, round); a > 1 {
		t.Fatalf("%v allocations per request, want at most 1", a)
	}
}
