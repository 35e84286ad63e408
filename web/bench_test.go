package web_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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

// BenchmarkChunked sends chunked POST bodies of 64 KiB to 4 MiB over one
// loopback connection, in chunks of 1 byte and of 16 KiB, and reads the
// answer; ns/B is the time per decoded byte, which stays flat as the body
// doubles: the body is decoded as it arrives, each byte looked at once.
func BenchmarkChunked(b *testing.B) {
	mux := web.NewMux()
	mux.HandleFunc("POST /sink", func(w *web.ResponseWriter, r *web.Request) {
		w.WriteString(strconv.Itoa(len(r.Body())))
	})
	for _, chunk := range []int{1, 16 << 10} {
		for size := 64 << 10; size <= 4<<20; size *= 2 {
			b.Run(fmt.Sprintf("chunk=%d/size=%dKiB", chunk, size>>10), func(b *testing.B) {
				addr, _ := serve(b, &web.Server{Handler: mux, MaxBodyBytes: 8 << 20})
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				var req bytes.Buffer
				req.WriteString("POST /sink HTTP/1.1\r\nHost: bench\r\nTransfer-Encoding: chunked\r\n\r\n")
				data := bytes.Repeat([]byte("d"), chunk)
				for n := 0; n < size; n += chunk {
					fmt.Fprintf(&req, "%x\r\n%s\r\n", chunk, data)
				}
				req.WriteString("0\r\n\r\n")
				br := bufio.NewReader(c)
				want := strconv.Itoa(size)
				b.SetBytes(int64(size))
				b.ResetTimer()
				for range b.N {
					if _, err := c.Write(req.Bytes()); err != nil {
						b.Fatal(err)
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(got) != want {
						b.Fatalf("answer %d %q %v, want %s", resp.StatusCode, got, err, want)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/B")
			})
		}
	}
}
