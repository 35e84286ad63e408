package main

// INFO: the sections Redis clients read, and a "# spindle" section with
// each shard's health.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// partInfo runs on every shard: it appends the shard's line of the
// spindle section and returns its key and expiry counts (keys<<32 |
// expires).
func partInfo(d *db, argv [][]byte, out []byte) ([]byte, int64) {
	sh := d.shard
	st := sh.ex.Stats()
	out = fmt.Appendf(out, "shard%d:utilization=%.3f,busy_ms=%d,idle_ms=%d,stalls=%d,queue_delay_p50_us=%d,queue_delay_p99_us=%d,queue_delay_max_us=%d,tasks_run=%d,queued=%d,timers=%d,keys=%d,expires=%d,connections=%d,commands=%d,remote_batches=%d,expired_keys=%d,claims=%d,claim_waits=%d,keys_claimed=%d\r\n",
		sh.index, st.Utilization(), st.Busy.Milliseconds(), st.Idle.Milliseconds(), st.Stalls,
		st.Delay.P50.Microseconds(), st.Delay.P99.Microseconds(), st.Delay.Max.Microseconds(),
		st.TasksRun, st.Queued, st.Timers, d.keys(), len(d.expires), sh.conns, sh.cmds, sh.remote, d.expired,
		sh.claims, sh.waits, len(sh.locks))
	return out, int64(d.keys())<<32 | int64(len(d.expires))
}

// infoTotals adds up the shards' lines.
type infoTotals struct {
	keys, expires, conns, cmds, expired int64
}

// appendInfo writes INFO's reply from the shards' parts.
func (p *pipeline) appendInfo(out []byte, argv [][]byte, refs []ref) []byte {
	var lines []byte
	var counts []int64
	for _, r := range refs {
		b := p.batches[r.shard]
		res := b.res[r.i]
		lines = append(lines, b.out[res.off:res.end]...)
		counts = append(counts, res.n)
	}
	return appendInfo(out, p.srv, argv, lines, counts)
}

// appendInfo writes INFO's reply from the shards' lines and counts (what
// partInfo made on each).
func appendInfo(out []byte, s *Server, argv [][]byte, lines []byte, counts []int64) []byte {
	want := map[string]bool{}
	for _, a := range argv[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var t infoTotals
	for _, n := range counts {
		t.keys += n >> 32
		t.expires += n & (1<<32 - 1)
	}
	for _, l := range bytes.Split(lines, []byte("\r\n")) {
		for _, f := range bytes.Split(l, []byte(",")) {
			k, v, ok := bytes.Cut(f, []byte("="))
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(string(v), 10, 64)
			switch string(k) {
			case "connections":
				t.conns += n
			case "commands":
				t.cmds += n
			case "expired_keys":
				t.expired += n
			}
		}
	}
	var b strings.Builder
	section := func(name string, body func()) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		body()
	}
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	section("Server", func() {
		kv("redis_version", "7.0.15")
		kv("redis_mode", "standalone")
		kv("server", "spindle")
		kv("os", runtime.GOOS)
		kv("arch_bits", strconv.IntSize)
		kv("go_version", runtime.Version())
		kv("process_id", os.Getpid())
		kv("tcp_port", s.port)
		kv("uptime_in_seconds", int64(time.Since(s.start).Seconds()))
	})
	section("Clients", func() {
		kv("connected_clients", s.live.Load())
	})
	section("Memory", func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		kv("used_memory", ms.HeapAlloc)
		kv("used_memory_human", human(ms.HeapAlloc))
		kv("used_memory_rss", rss())
		kv("used_memory_rss_human", human(rss()))
		kv("heap_sys", ms.HeapSys)
		kv("gc_cycles", ms.NumGC)
	})
	section("Stats", func() {
		kv("total_commands_processed", t.cmds)
		kv("expired_keys", t.expired)
	})
	section("Keyspace", func() {
		if t.keys > 0 {
			fmt.Fprintf(&b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", t.keys, t.expires)
		}
	})
	section("spindle", func() {
		kv("shards", s.g.Len())
		b.Write(lines)
	})
	return appendBulkString(out, b.String())
}

// rss returns the process's resident set size, 0 where /proc is missing.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
