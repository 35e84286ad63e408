package web_test

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

var value64 = bytes.Repeat([]byte("v"), 64)

// benchRoutes is the handler of the benchmarks: GET /kv/{key} answers a
// 64-byte value.
func benchRoutes() *web.Mux {
	mux := web.NewMux()
	mux.HandleFunc("GET /kv/{key}", func(w *web.ResponseWriter, r *web.Request) {
		if r.PathValue("key") == "" {
			web.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(value64)
	})
	return mux
}

// BenchmarkServe sends GET requests over one loopback connection, depth
// at a time, and reads the responses; allocs/op is the server's and the
// client's together (the client allocates nothing once running).
func BenchmarkServe(b *testing.B) {
	for _, depth := range []int{1, 16} {
		name := "depth=1"
		if depth == 16 {
			name = "depth=16"
		}
		b.Run(name, func(b *testing.B) {
			addr, _ := serve(b, &web.Server{Handler: benchRoutes()})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := bytes.Repeat([]byte("GET /kv/key1 HTTP/1.1\r\nHost: bench\r\n\r\n"), depth)
			// The size of one response, learnt from the first.
			c.Write(req[:len(req)/depth])
			first := make([]byte, 4096)
			n, err := c.Read(first)
			if err != nil {
				b.Fatal(err)
			}
			if !bytes.HasSuffix(first[:n], value64) {
				b.Fatalf("response %q", first[:n])
			}
			buf := make([]byte, n*depth)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
