package peers

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

// TestMain prints the case table first when the runner asks for it
// (SPINDLE_PEERS_CASES=json), and fails the run if a case leaves a
// goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(envList) == "json" {
		if err := writeListing(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "peers:", err)
			os.Exit(2)
		}
	}
	goleak.VerifyTestMain(m,
		// ants, which chebyrash/promise and gnet import, starts the workers
		// of its default pool when its package is initialized; no case uses
		// it.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		// nbhttp/websocket builds its DefaultEngine, with the goroutine pools
		// of its executors, when its package is initialized; the cases'
		// engines run their handlers inline and start no pool.
		goleak.IgnoreTopFunction("github.com/lesismal/nbio/taskpool.New.func3"),
		// fasthttp refreshes its Date header on a goroutine that runs for the
		// life of the process once a server has started, and its worker
		// pool's cleaner sleeps MaxIdleWorkerDuration (10s) between rounds,
		// so it notices Stop up to 10s after the server has shut down.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}

// BenchmarkSubmit runs the Submit cases: closures handed to a loop, per closure.
func BenchmarkSubmit(b *testing.B) { runGroup(b, "Submit") }

// BenchmarkTimers runs the Timers cases: 10,000 timers, per timer.
func BenchmarkTimers(b *testing.B) { runGroup(b, "Timers") }

// BenchmarkFanout runs the Fanout cases: 1,000 jobs summed, per job.
func BenchmarkFanout(b *testing.B) { runGroup(b, "Fanout") }

// BenchmarkChain runs the Chain cases: 32 Then links, per link.
func BenchmarkChain(b *testing.B) { runGroup(b, "Chain") }

// BenchmarkMemory runs the Memory cases: 10,000 waiters, bytes per waiter.
func BenchmarkMemory(b *testing.B) { runGroup(b, "Memory") }

// BenchmarkNet runs the Net cases: TCP servers on loopback under 64 echo or
// pipelining clients, per request, and 10,000 idle connections, bytes per
// connection.
func BenchmarkNet(b *testing.B) { runGroup(b, "Net") }

// BenchmarkWeb runs the Web cases: HTTP/1.1 servers on loopback under 50
// keep-alive clients (one request in flight on each, or 16 pipelined), per
// request; 10,000 idle keep-alive connections, bytes per connection; and
// WebSocket echo and idle WebSockets.
func BenchmarkWeb(b *testing.B) { runGroup(b, "Web") }

// TestRegistry checks the case table the runner reads.
func TestRegistry(t *testing.T) {
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
		if g.Note == "" {
			t.Errorf("group %s has no Note", g.Name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(groupOrder))
	if !slices.Equal(names, want) {
		t.Errorf("groups %v, want %v (one Benchmark function each)", names, want)
	}
	seen := map[string]Case{}
	for _, c := range cases {
		name := c.Group + "/" + c.Name
		if _, dup := seen[name]; dup {
			t.Errorf("%s registered twice", name)
		}
		seen[name] = c
		if c.Unit == "" || c.Fn == nil {
			t.Errorf("%s: no unit or no function", name)
		}
		if !slices.Contains([]string{kindSpindle, kindGo, kindPeer}, c.Kind) {
			t.Errorf("%s: kind %q", name, c.Kind)
		}
		if !slices.Contains([]string{"ns", "cpu-ns", "B"}, c.Metric) {
			t.Errorf("%s: metric %q", name, c.Metric)
		}
		if c.Kind == kindPeer && c.Version == "" {
			t.Errorf("%s: a peer without its version", name)
		}
	}
	for _, c := range cases {
		if c.Baseline == "" {
			continue
		}
		base, ok := seen[c.Group+"/"+c.Baseline]
		switch {
		case !ok:
			t.Errorf("%s/%s: baseline %q is not a case of its group", c.Group, c.Name, c.Baseline)
		case base.Baseline != "" || base.Unit != c.Unit || base.Metric != c.Metric:
			t.Errorf("%s/%s: baseline %s has a baseline, or another unit or metric", c.Group, c.Name, base.Name)
		}
	}
}
