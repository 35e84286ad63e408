package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/spindle-rt/spindle/web"
)

// BenchmarkStatic gets a file of 4 KiB and one of 1 MiB over one
// keep-alive loopback connection, from web's FileServer and from
// net/http's, over the same directory; allocs/op is the whole process's
// (the client's reads allocate nothing once warm).
func BenchmarkStatic(b *testing.B) {
	dir := b.TempDir()
	for _, size := range []int{4 << 10, 1 << 20} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(size)), make([]byte, size), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, size := range []int{4 << 10, 1 << 20} {
		for _, server := range []string{"web", "net/http"} {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, server), func(b *testing.B) {
				var addr string
				if server == "web" {
					addr, _ = serve(b, &web.Server{Handler: web.FileServer(http.Dir(dir))})
				} else {
					addr = serveStd(b, http.FileServer(http.Dir(dir)))
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				req := []byte(fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: bench\r\n\r\n", size))
				br := bufio.NewReaderSize(c, 64<<10)
				get := func() {
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
					if n := readStaticResponse(b, br); n != int64(size) {
						b.Fatalf("Content-Length %d, want %d", n, size)
					}
				}
				for range 50 {
					get()
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					get()
				}
			})
		}
	}
}

// readStaticResponse reads a response's head and its body (framed by
// Content-Length) and returns the Content-Length.
func readStaticResponse(tb testing.TB, br *bufio.Reader) int64 {
	n := int64(0)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if len(line) == 2 {
			break
		}
		if len(line) > 16 && string(line[:16]) == "Content-Length: " {
			n = 0
			for _, d := range line[16 : len(line)-2] {
				n = n*10 + int64(d-'0')
			}
		}
	}
	if _, err := br.Discard(int(n)); err != nil {
		tb.Fatal(err)
	}
	return n
}
