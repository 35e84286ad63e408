package spindleotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	spindleotel "github.com/spindle-rt/spindle/contrib/otel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// point is one data point as collected: its kind, its executor and value.
type point struct {
	kind     string // "counter", "updown", "gauge"
	unit     string
	executor string
	value    float64
}

// collect reads reader and returns the data points of ScopeName by
// instrument name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != spindleotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, spindleotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			add := func(kind string, attrs attribute.Set, v float64) {
				name, _ := attrs.Value(metrics.OTelAttribute)
				out[m.Name] = append(out[m.Name], point{kind, m.Unit, name.AsString(), v})
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(sumKind(d.IsMonotonic), p.Attributes, float64(p.Value))
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					add(sumKind(d.IsMonotonic), p.Attributes, p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					add("gauge", p.Attributes, p.Value)
				}
			default:
				t.Errorf("%s: data of type %T", m.Name, m.Data)
			}
		}
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i].executor < ps[j].executor })
	}
	return out
}

func sumKind(monotonic bool) string {
	if monotonic {
		return "counter"
	}
	return "updown"
}

var kinds = map[metrics.Kind]string{metrics.Counter: "counter", metrics.UpDownCounter: "updown", metrics.Gauge: "gauge"}

// A manual reader of a real SDK collects every figure of every executor
// with its instrument kind, unit, attribute and the value of Stats; after
// Unregister, nothing.
func TestManualReader(t *testing.T) {
	api := executor.New(executor.WithName("api"))
	defer api.Close()
	jobs := executor.New(executor.WithName("jobs"))
	defer jobs.Close()
	for range 7 {
		_ = api.Submit(func() {})
	}
	api.RunUntilIdle()
	api.Drive(func() { api.AfterFunc(1<<40, func() {}) })

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg, err := spindleotel.Register(mp, api, jobs)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	st := api.Stats() // api is idle: its figures stand still
	for _, f := range metrics.Figures() {
		ps := got[f.OTel]
		if len(ps) != 2 || ps[0].executor != "api" || ps[1].executor != "jobs" {
			t.Errorf("%s: points %+v, want one for api and one for jobs", f.OTel, ps)
			continue
		}
		if ps[0].kind != kinds[f.Kind] || ps[0].unit != f.Unit {
			t.Errorf("%s: a %s in %q, want a %s in %q", f.OTel, ps[0].kind, ps[0].unit, kinds[f.Kind], f.Unit)
		}
		if want := f.Value(st); ps[0].value != want {
			t.Errorf("%s{api} = %v, Stats says %v", f.OTel, ps[0].value, want)
		}
	}
	if len(got) != len(metrics.Figures()) {
		t.Errorf("%d instruments collected, want %d", len(got), len(metrics.Figures()))
	}
	if v := got["spindle.loop.timers"]; len(v) == 0 || v[0].value != 1 || st.TasksRun < 7 {
		t.Errorf("api's figures %+v, timers %+v", st, v)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	for name, ps := range collect(t, reader) {
		if len(ps) > 0 {
			t.Errorf("%s still observed after Unregister: %+v", name, ps)
		}
	}
}

// RegisterGroup observes every shard under its name.
func TestRegisterGroup(t *testing.T) {
	g := shard.New(2, executor.WithName("kv"))
	g.Start()
	defer g.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	if _, err := spindleotel.RegisterGroup(mp, g); err != nil {
		t.Fatal(err)
	}
	for name, ps := range collect(t, reader) {
		var exs []string
		for _, p := range ps {
			exs = append(exs, p.executor)
		}
		if got := strings.Join(exs, ","); got != "kv-0,kv-1" {
			t.Errorf("%s: executors %s", name, got)
		}
	}
}

func TestMisuse(t *testing.T) {
	mp := sdkmetric.NewMeterProvider()
	defer mp.Shutdown(context.Background())
	spindletest.MustPanic(t, "spindleotel: ", "nil MeterProvider", func() { _, _ = spindleotel.Register(nil) })
	spindletest.MustPanic(t, "spindleotel: ", "nil executor", func() { _, _ = spindleotel.Register(mp, nil) })
	spindletest.MustPanic(t, "spindleotel: ", "nil group", func() { _, _ = spindleotel.RegisterGroup(mp, nil) })
}

// An executor's figures collected by a manual reader, as an exporter
// would read them.
func ExampleRegister() {
	ex := executor.New(executor.WithName("api"))
	defer ex.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	reg, err := spindleotel.Register(mp, ex)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics[:3] {
		fmt.Println(m.Name, m.Unit)
	}
	// Output:
	// spindle.loop.tasks {task}
	// spindle.loop.queued {task}
	// spindle.loop.timers {timer}
}
