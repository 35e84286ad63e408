package main

import (
	"io"
	"strconv"
	"strings"
	"testing"
)

// setGetPipeline returns n SET and n GET requests on random-looking keys, the
// way redis-benchmark -P n -r sends them.
func setGetPipeline(n, seed int) (string, int) {
	var b strings.Builder
	replies := 0
	for i := range n {
		k := "key:" + strconv.Itoa((seed*7919+i*104729)%1000000)
		b.WriteString(multibulk("SET", k, "xxx"))
		b.WriteString(multibulk("GET", k))
		replies += len("+OK\r\n") + len("$3\r\nxxx\r\n")
	}
	return b.String(), replies
}

// BenchmarkParse parses a pipeline of 16 SET and 16 GET requests.
func BenchmarkParse(b *testing.B) {
	req, _ := setGetPipeline(16, 1)
	buf := []byte(req)
	p := newParser(DefaultMaxBulk, DefaultMaxMultibulk)
	var argv [][]byte
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		p.pos, argv = 0, argv[:0]
		for {
			var ok bool
			var perr protoError
			argv, ok, perr = p.next(buf, argv)
			if perr != "" {
				b.Fatal(perr)
			}
			if !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/req")
}

// BenchmarkPipeline sends pipelines of 16 SET and 16 GET requests on keys
// of every shard over one loopback connection and reads the replies.
func BenchmarkPipeline(b *testing.B) {
	s := start(b, Config{Shards: 2})
	c := dial(b, s)
	reqs := make([]string, 64)
	var size int
	for i := range reqs {
		reqs[i], size = setGetPipeline(16, i)
	}
	got := make([]byte, size)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.send(reqs[i%len(reqs)])
		if _, err := io.ReadFull(c.r, got); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/req")
}
