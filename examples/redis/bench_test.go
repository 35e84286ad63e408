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
		spans := p.spans[:0]
		p, argv = newParser(DefaultMaxBulk, DefaultMaxMultibulk), argv[:0]
		p.spans = spans
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

// BenchmarkMSet sends MSETs of 10 keys over one loopback connection,
// pipelined by 1 and by 16, and reads the replies: keys all on one shard
// (one unit, no transaction), keys on both shards atomically (a
// transaction: claims shard by shard), and the same keys key by key with
// no transaction (the non-atomic routing MSET had before, kept as a
// planted bug for the simulation). cpu-ns/op is the process's CPU time
// (server and client) per MSET.
func BenchmarkMSet(b *testing.B) {
	for _, bc := range []struct {
		name  string
		one   bool // keys on one shard
		split bool
	}{
		{"one-shard", true, false},
		{"shards-atomic", false, false},
		{"shards-split", false, true},
	} {
		for _, depth := range []int{1, 16} {
			b.Run(bc.name+"/P"+strconv.Itoa(depth), func(b *testing.B) {
				if bc.split {
					plantedBugs.split = true
					b.Cleanup(func() { plantedBugs.split = false }) // after the server's Shutdown
				}
				s := start(b, Config{Shards: 2})
				c := dial(b, s)
				var keys []string
				for i := 0; len(keys) < 10; i++ {
					k := "key:" + strconv.Itoa(i)
					if !bc.one || s.owner([]byte(k)) == 0 {
						keys = append(keys, k)
					}
				}
				args := []string{"MSET"}
				for _, k := range keys {
					args = append(args, k, "xxx")
				}
				req := strings.Repeat(multibulk(args...), depth)
				got := make([]byte, depth*len("+OK\r\n"))
				cpu0 := cpuTime()
				b.ReportAllocs()
				for b.Loop() {
					c.send(req)
					if _, err := io.ReadFull(c.r, got); err != nil {
						b.Fatal(err)
					}
				}
				n := float64(b.N * depth)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/mset")
				b.ReportMetric(float64(cpuTime()-cpu0)/n, "cpu-ns/mset")
			})
		}
	}
}
