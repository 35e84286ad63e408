package web

import "testing"

// BenchmarkParse parses a request head: the benchmarks' GET, and a
// browser's (about 500 bytes, 10 fields). allocs/op is the copy of the
// head that the request's strings are parts of.
func BenchmarkParse(b *testing.B) {
	heads := []struct{ name, raw string }{
		{"get", "GET /kv/key1 HTTP/1.1\r\nHost: bench\r\n\r\n"},
		{"browser", "GET /static/app.js?v=3 HTTP/1.1\r\nHost: www.example.com\r\n" +
			"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
			"Accept: */*\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n" +
			"Referer: https://www.example.com/\r\nConnection: keep-alive\r\n" +
			"Cookie: session=4f6a1c2b9e8d7f6a5b4c3d2e1f0a9b8c; theme=dark\r\n" +
			"Sec-Fetch-Dest: script\r\nSec-Fetch-Mode: no-cors\r\nSec-Fetch-Site: same-origin\r\n\r\n"},
	}
	lim := limits{head: 64 << 10, headers: 100, body: 4 << 20}
	for _, h := range heads {
		b.Run(h.name, func(b *testing.B) {
			raw := []byte(h.raw)
			var p parser
			r := &Request{}
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				p.reset()
				r.reset()
				if st, n, _ := p.parse(raw, r, &lim); st != parseDone || n != len(raw) {
					b.Fatalf("parse: %v %d", st, n)
				}
			}
		})
	}
}
