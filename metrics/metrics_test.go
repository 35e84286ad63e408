package metrics_test

import (
	"encoding/json"
	"expvar"
	"fmt"
	"net"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// decode parses an expvar value as a JSON object of figures.
func decode(t *testing.T, v string) map[string]float64 {
	t.Helper()
	var m map[string]float64
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		t.Fatalf("not a JSON object of numbers: %v\n%s", err, v)
	}
	return m
}

// Var shows every figure under its Key, read afresh from Stats.
func TestVarShowsStats(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	v := metrics.Var(ex)
	keys := func(m map[string]float64) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	var want []string
	for _, f := range metrics.Figures() {
		want = append(want, f.Key)
	}
	for _, f := range metrics.ConnFigures() {
		want = append(want, f.Key)
	}
	slices.Sort(want)
	if got := keys(decode(t, v.String())); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for range 5 {
		_ = ex.Submit(func() {})
	}
	ex.Drive(func() { ex.AfterFunc(1<<40, func() {}) })
	m := decode(t, v.String())
	st := ex.Stats()
	if m["TasksRun"] != float64(st.TasksRun) || st.TasksRun < 5 {
		t.Errorf("TasksRun %v, Stats says %d (want at least 5)", m["TasksRun"], st.TasksRun)
	}
	if m["Timers"] != 1 {
		t.Errorf("Timers %v, want 1", m["Timers"])
	}
}

// publishRuns numbers the runs of TestPublishServesJSON.
var publishRuns atomic.Int32

// Publish makes the figures part of expvar's page.
func TestPublishServesJSON(t *testing.T) {
	ex := executor.New(executor.WithName("published"))
	ex.Start()
	defer ex.Close()
	name := fmt.Sprintf("spindle.test.published.%d", publishRuns.Add(1)) // expvar names last for the process (-count)
	metrics.Publish(name, ex)
	// The loop publishes its figures between batches: the second Call runs
	// in a later batch than the first, so the first has been published.
	for range 2 {
		if _, err := spindletest.Await(t, future.Call(ex, func() (int, error) { return 1, nil })); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(expvar.Handler())
	defer srv.Close()
	code, body, err := spindletest.Do(srv.Client(), "GET", srv.URL, "")
	if err != nil || code != 200 {
		t.Fatalf("expvar page: %d, %v", code, err)
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatalf("expvar page: %v", err)
	}
	m := decode(t, string(page[name]))
	if m["TasksRun"] < 1 {
		t.Errorf("published TasksRun %v, want at least 1", m["TasksRun"])
	}
	srv.Client().CloseIdleConnections()
	spindletest.MustPanic(t, "metrics: ", name, func() { metrics.Publish(name, ex) })
}

// GroupVar shows the group's total and each shard's figures.
func TestGroupVar(t *testing.T) {
	g := shard.New(2, executor.WithName("grp"))
	g.Start()
	for i := range g.Len() {
		for range 3 {
			if _, err := spindletest.Await(t, shard.Call(g, i, func() (int, error) { return i, nil })); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = g.Close()
	name := fmt.Sprintf("spindle.test.group.%d", publishRuns.Add(1)) // expvar names last for the process (-count)
	metrics.PublishGroup(name, g)
	if v := expvar.Get(name); v == nil || v.String() != metrics.GroupVar(g).String() {
		t.Fatalf("published group: %v", v)
	}
	var got struct {
		Total  map[string]float64
		Shards map[string]map[string]float64
	}
	if err := json.Unmarshal([]byte(metrics.GroupVar(g).String()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Shards) != 2 || got.Shards["grp-0"] == nil || got.Shards["grp-1"] == nil {
		t.Fatalf("shards %v, want grp-0 and grp-1", got.Shards)
	}
	if sum := got.Shards["grp-0"]["TasksRun"] + got.Shards["grp-1"]["TasksRun"]; got.Total["TasksRun"] != sum || sum < 6 {
		t.Errorf("total TasksRun %v, shards add up to %v (want at least 6)", got.Total["TasksRun"], sum)
	}
}

// Every figure is named by each ecosystem's conventions, once.
func TestFigureNames(t *testing.T) {
	prom := regexp.MustCompile(`^spindle_loop_[a-z0-9_]+$`)
	otel := regexp.MustCompile(`^spindle\.loop\.[a-z0-9_]+(\.[a-z0-9_]+)*$`)
	seen := map[string]bool{}
	for _, f := range metrics.Figures() {
		for _, n := range []string{f.Key, f.Prometheus, f.OTel} {
			if seen[n] {
				t.Errorf("%s named twice", n)
			}
			seen[n] = true
		}
		if !prom.MatchString(f.Prometheus) || !otel.MatchString(f.OTel) {
			t.Errorf("%s: names %q, %q", f.Key, f.Prometheus, f.OTel)
		}
		if total := strings.HasSuffix(f.Prometheus, "_total"); total != (f.Kind == metrics.Counter) {
			t.Errorf("%s: %s is a %v: _total on counters only", f.Key, f.Prometheus, f.Kind)
		}
		if sec := f.Unit == "s"; sec != (strings.Contains(f.Prometheus, "_seconds") && strings.HasSuffix(f.Key, "Seconds")) {
			t.Errorf("%s: unit %q and names disagree", f.Key, f.Unit)
		}
		if f.Help == "" || f.Value == nil {
			t.Errorf("%s: no help or no value", f.Key)
		}
	}
}

// A fresh executor's figures, as expvar shows them.
func ExampleVar() {
	ex := executor.New(executor.WithName("api"))
	defer ex.Close()
	fmt.Println(metrics.Var(ex))
	// Output: {"TasksRun": 0, "Queued": 0, "Timers": 0, "Suspended": 0, "BusySeconds": 0, "IdleSeconds": 0, "Stalls": 0, "DelayP50Seconds": 0, "DelayP99Seconds": 0, "DelayMaxSeconds": 0, "NetOpen": 0, "NetAccepted": 0, "NetClosed": 0, "NetAcceptErrors": 0, "NetOutputLimitDisconnects": 0}
}

// WriteText escapes the label value as the text format wants.
func TestWriteTextEscapes(t *testing.T) {
	ex := executor.New(executor.WithName("a\"b\\c\nd"))
	defer ex.Close()
	var b strings.Builder
	if err := metrics.WriteText(&b, ex); err != nil {
		t.Fatal(err)
	}
	if want := `spindle_loop_tasks_total{executor="a\"b\\c\nd"} 0` + "\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("no %q in\n%s", want, b.String())
	}
	spindletest.MustPanic(t, "metrics: ", "nil executor", func() { metrics.Handler(nil) })
}

// A fresh executor's first figures in Prometheus' text format, as a
// /metrics route serves them.
func ExampleWriteText() {
	ex := executor.New(executor.WithName("api"))
	defer ex.Close()
	var b strings.Builder
	_ = metrics.WriteText(&b, ex)
	fmt.Print(strings.Join(strings.SplitAfter(b.String(), "\n")[:6], ""))
	// Output:
	// # HELP spindle_loop_tasks_total Tasks the loop has run: callbacks, continuations, timer callbacks and slices of spawned tasks.
	// # TYPE spindle_loop_tasks_total counter
	// spindle_loop_tasks_total{executor="api"} 0
	// # HELP spindle_loop_queued Tasks waiting to run, submitted ones included.
	// # TYPE spindle_loop_queued gauge
	// spindle_loop_queued{executor="api"} 0
}

// Publish makes an executor's figures an expvar variable: expvar.Handler
// (the /debug/vars page) shows it with the process's other variables.
func ExamplePublish() {
	ex := executor.New(executor.WithName("worker"))
	defer ex.Close()
	metrics.Publish("spindle.example.worker", ex)

	var figures map[string]float64
	_ = json.Unmarshal([]byte(expvar.Get("spindle.example.worker").String()), &figures)
	fmt.Println(figures["TasksRun"], figures["Queued"], len(figures))
	// Output: 0 0 15
}

// netio's connection counts reach the exporters: a connection accepted and
// closed shows in Var and in the text format.
func TestConnFiguresPublished(t *testing.T) {
	ex := executor.New(executor.WithName("conns"))
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := spindletest.Await(t, l.Accept())
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, metrics.Var(ex).String())
	if m["NetAccepted"] != 1 || m["NetOpen"] != 1 || m["NetClosed"] != 0 {
		t.Fatalf("after one accept: %v", m)
	}
	nc.Close()
	c.Close()
	// Close from off the loop reaches it through the inbox: a call to the
	// loop after it has run it.
	if _, err := future.Do(spindletest.Context(t), ex, func() (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	idle := executor.New(executor.WithName("idle")) // has served no socket
	defer idle.Close()
	var b strings.Builder
	if err := metrics.WriteText(&b, ex, idle); err != nil {
		t.Fatal(err)
	}
	backend := netio.StatsOf(ex).Backend
	if backend == "" {
		t.Fatal("Stats.Backend is empty after an accept")
	}
	for _, want := range []string{
		`spindle_netio_accepted_total{executor="conns"} 1`,
		`spindle_netio_closed_total{executor="conns"} 1`,
		`spindle_netio_open_connections{executor="conns"} 0`,
		`spindle_netio_accept_errors_total{executor="conns"} 0`,
		"# TYPE " + metrics.BackendInfo + " gauge",
		metrics.BackendInfo + `{backend="` + backend + `",executor="conns"} 1`,
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("text format lacks %q", want)
		}
	}
	if strings.Contains(b.String(), metrics.BackendInfo+`{backend="",executor="idle"}`) || strings.Count(b.String(), metrics.BackendInfo+"{") != 1 {
		t.Errorf("the backend info has a series for an executor that served no socket:\n%s", b.String())
	}
}

// Executors that have served no socket name no backend: the text format
// then has no backend family at all (a family without series is not one).
func TestBackendInfoNeedsASocket(t *testing.T) {
	ex := executor.New(executor.WithName("idle"))
	defer ex.Close()
	var b strings.Builder
	if err := metrics.WriteText(&b, ex); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), metrics.BackendInfo) {
		t.Errorf("text format names a backend for an executor that served no socket:\n%s", b.String())
	}
}
