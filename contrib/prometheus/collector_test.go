package spindleprom_test

import (
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	spindleprom "github.com/spindle-rt/spindle/contrib/prometheus"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape serves reg with promhttp on loopback and returns the text a
// Prometheus server would read.
func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	code, body, err := spindletest.Do(srv.Client(), "GET", srv.URL, "")
	if err != nil || code != 200 {
		t.Fatalf("scrape: %d, %v\n%s", code, err, body)
	}
	return body
}

// idle returns executors of the given names, closed when the test ends;
// the first has run tasks tasks and holds one pending timer. None runs, so
// their figures stand still.
func idle(t *testing.T, tasks int, names ...string) []*executor.Executor {
	t.Helper()
	exs := make([]*executor.Executor, len(names))
	for i, name := range names {
		exs[i] = executor.New(executor.WithName(name))
		t.Cleanup(func() { _ = exs[i].Close() })
	}
	for range tasks {
		_ = exs[0].Submit(func() {})
	}
	exs[0].Drive(func() { exs[0].AfterFunc(1<<40, func() {}) })
	return exs
}

// A scrape of a real registry shows every figure of every executor, with
// its type and the executor's name, and the values of Stats.
func TestScrape(t *testing.T) {
	exs := idle(t, 7, "api", "jobs")
	api := exs[0]
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(spindleprom.NewCollector(exs...))

	text := scrape(t, reg)
	st := api.Stats() // api is idle: its figures stand still
	for _, f := range metrics.Figures() {
		typ := "gauge"
		if f.Kind == metrics.Counter {
			typ = "counter"
		}
		for _, want := range []string{
			"# HELP " + f.Prometheus + " " + f.Help + "\n",
			"# TYPE " + f.Prometheus + " " + typ + "\n",
			fmt.Sprintf("%s{executor=\"api\"} %v\n", f.Prometheus, f.Value(st)),
			f.Prometheus + "{executor=\"jobs\"} ",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("scrape lacks %q", want)
			}
		}
	}
	if !strings.Contains(text, "spindle_loop_timers{executor=\"api\"} 1\n") || st.TasksRun < 7 {
		t.Errorf("api's figures: %+v\n%s", st, text)
	}
}

// The metrics pass Prometheus' own lint (names, units, help, types).
func TestLint(t *testing.T) {
	ex := executor.New(executor.WithName("lint"))
	defer ex.Close()
	problems, err := testutil.CollectAndLint(spindleprom.NewCollector(ex))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// AddGroup adds every shard, each under its name; a registry's Gather
// sees them all.
func TestGroup(t *testing.T) {
	g := shard.New(3, executor.WithName("kv"))
	g.Start()
	defer g.Close()
	c := spindleprom.NewCollector()
	c.AddGroup(g)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(metrics.Figures()) + len(metrics.ConnFigures()); len(fams) != want {
		t.Fatalf("%d metric families, want %d", len(fams), want)
	}
	for _, fam := range fams {
		var names []string
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName()+"="+l.GetValue())
			}
		}
		if got := strings.Join(names, ","); got != "executor=kv-0,executor=kv-1,executor=kv-2" {
			t.Errorf("%s: series %s", fam.GetName(), got)
		}
	}
}

// Two executors with one name make the scrape fail, not lie.
func TestDuplicateNames(t *testing.T) {
	a, b := executor.New(), executor.New()
	defer a.Close()
	defer b.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(spindleprom.NewCollector(a, b))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "spindle") {
		t.Fatalf("Gather of two executors named alike: %v", err)
	}
}

// One collector per registry: a second one is refused, not merged.
func TestOneCollectorPerRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(spindleprom.NewCollector()); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(spindleprom.NewCollector()); !errors.As(err, &are) {
		t.Fatalf("second collector: %v, want AlreadyRegisteredError", err)
	}
}

func TestMisuse(t *testing.T) {
	spindletest.MustPanic(t, "spindleprom: ", "nil executor", func() { spindleprom.NewCollector(nil) })
	spindletest.MustPanic(t, "spindleprom: ", "nil group", func() { spindleprom.NewCollector().AddGroup(nil) })
}

// The collector in a registry, scraped as Prometheus would.
func ExampleNewCollector() {
	ex := executor.New(executor.WithName("api"))
	defer ex.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(spindleprom.NewCollector(ex))
	n, _ := testutil.GatherAndCount(reg, "spindle_loop_tasks_total", "spindle_loop_busy_seconds_total")
	fmt.Println(n, "series")
	// Output: 2 series
}

// sameFamilies returns what metrics.WriteText writes for exs and what a
// registry with a collector of exs scrapes, after checking that the text
// parser of Prometheus reads both as the same families: all of them, or
// those named in only (the figures of a running executor move between the
// two reads). exs are named in order (a scrape sorts the series).
func sameFamilies(t *testing.T, only []string, exs ...*executor.Executor) (written, scraped string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(spindleprom.NewCollector(exs...))
	var text strings.Builder
	if err := metrics.WriteText(&text, exs...); err != nil {
		t.Fatal(err)
	}
	written, scraped = text.String(), scrape(t, reg)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fromText, err := p.TextToMetricFamilies(strings.NewReader(written))
	if err != nil {
		t.Fatalf("WriteText's output does not parse: %v\n%s", err, written)
	}
	fromScrape, err := p.TextToMetricFamilies(strings.NewReader(scraped))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromText) != len(fromScrape) {
		t.Fatalf("%d families written, %d scraped", len(fromText), len(fromScrape))
	}
	for name, fam := range fromScrape {
		if only != nil && !slices.Contains(only, name) {
			continue
		}
		if got, want := fromText[name].String(), fam.String(); got != want {
			t.Errorf("%s:\nwritten %s\nscraped %s", name, got, want)
		}
	}
	return written, scraped
}

// metrics.WriteText, the dependency-free /metrics of the library, writes
// what the collector scrapes: the text parser of Prometheus reads both as
// the same families.
func TestWriteTextMatchesCollector(t *testing.T) {
	written, _ := sameFamilies(t, nil, idle(t, 3, "a", "b")...)
	if got, want := strings.Count(written, "# TYPE "), len(metrics.Figures())+len(metrics.ConnFigures()); got != want {
		t.Fatalf("%d families written, want %d", got, want)
	}
}

// The backend that serves an executor's sockets is an info metric, with
// the same series in the collector's scrape and in metrics.WriteText, once
// the executor has served a socket; one that has not has no series.
func TestBackendInfo(t *testing.T) {
	ex := executor.New(executor.WithName("a-served"))
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
	defer nc.Close()
	c, err := spindletest.Await(t, l.Accept())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	backend := netio.StatsOf(ex).Backend
	if backend == "" {
		t.Fatal("Stats.Backend is empty after an accept")
	}
	_, scraped := sameFamilies(t, []string{metrics.BackendInfo}, append([]*executor.Executor{ex}, idle(t, 0, "b-idle")...)...)
	want := metrics.BackendInfo + `{backend="` + backend + `",executor="a-served"} 1` + "\n"
	if !strings.Contains(scraped, want) || strings.Count(scraped, metrics.BackendInfo+"{") != 1 {
		t.Errorf("scrape lacks %q, or has more series of %s:\n%s", want, metrics.BackendInfo, scraped)
	}
	problems, err := testutil.CollectAndLint(spindleprom.NewCollector(ex), metrics.BackendInfo)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
