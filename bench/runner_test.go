package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// nop is a case function for fake cases; it is never run.
func nop(b *testing.B) {}

// TestFmtValue checks the unit suffixes and precision of times and bytes.
func TestFmtValue(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{0, "0.00ns"},
		{0.349, "0.35ns"},
		{21.034, "21.03ns"},
		{999.99, "999.99ns"},
		{1000, "1.000us"},
		{1234.5, "1.234us"},
		{999_499, "999.499us"},
		{1_500_000, "1.500ms"},
		{2_345_678_901, "2.346s"},
	} {
		if got := fmtValue("ns", tc.ns); got != tc.want {
			t.Errorf("fmtValue(ns, %v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
	for b, want := range map[float64]string{0: "0.0B", 96.8: "96.8B", 1023: "1023.0B", 1024: "1.00KiB", 4300: "4.20KiB", 3 << 20: "3.00MiB"} {
		if got := fmtValue("B", b); got != want {
			t.Errorf("fmtValue(B, %v) = %q, want %q", b, got, want)
		}
	}
}

// TestFmtRatio checks the vs-go wording.
func TestFmtRatio(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want string
	}{
		{7.3, "7.3x faster"},
		{1, "1.0x faster"},
		{1 / 1.4, "1.4x slower"},
		{0.1, "10.0x slower"},
	} {
		if got := fmtRatioOf("ns", tc.r); got != tc.want {
			t.Errorf("fmtRatioOf(ns, %v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestFmtFixed checks the allocs/tasks/inst/cycles cells and their missing markers.
func TestFmtFixed(t *testing.T) {
	if got := fmtFixed(ptr(1.23456), 3, "-"); got != "1.235" {
		t.Errorf("fmtFixed(1.23456, 3) = %q", got)
	}
	if got := fmtFixed(nil, 3, "-"); got != "-" {
		t.Errorf("fmtFixed(nil, 3, -) = %q", got)
	}
	if got := fmtFixed(nil, 1, "n/a"); got != "n/a" {
		t.Errorf("fmtFixed(nil, 1, n/a) = %q", got)
	}
	if got := fmtFixed(ptr(0), 1, "n/a"); got != "0.0" {
		t.Errorf("fmtFixed(0, 1, n/a) = %q", got)
	}
}

// TestMedianMAD checks the run statistics.
func TestMedianMAD(t *testing.T) {
	vs := []float64{5, 1, 3, 100, 2}
	if got := median(vs); got != 3 {
		t.Errorf("median(%v) = %v, want 3", vs, got)
	}
	if vs[0] != 5 {
		t.Errorf("median modified its argument: %v", vs)
	}
	// Deviations from 3: 2 2 0 97 1 -> median 2.
	if got := mad(vs); got != 2 {
		t.Errorf("mad(%v) = %v, want 2", vs, got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of even count = %v, want 2.5", got)
	}
	runs := []runFigures{{Tasks: ptr(1)}, {}, {Tasks: ptr(3)}}
	if got := medianOf(figures(runs, func(r runFigures) *float64 { return r.Inst })); got != nil {
		t.Errorf("median of a figure no run has = %v, want nil", *got)
	}
	if got := medianOf(figures(runs, func(r runFigures) *float64 { return r.Tasks })); got == nil || *got != 2 {
		t.Errorf("median of tasks 1, -, 3 = %v, want 2", got)
	}
}

// TestFiguresFromResult checks how a BenchmarkResult becomes per-unit figures, with and without a meter.
func TestFiguresFromResult(t *testing.T) {
	// Everything comes from Extra, in the case's unit.
	r := testing.BenchmarkResult{
		N: 1000, T: time.Millisecond, MemAllocs: 5000,
		Extra: map[string]float64{"ns/link": 12.5, "allocs/link": 0.25, "tasks/link": 1, "inst/link": 40, "cycles/link": 30},
	}
	f := figuresFromResult(r, "link", "ns")
	if f.N != 1000 || f.Ns != 12.5 || f.Allocs != 0.25 || f.Tasks == nil || *f.Tasks != 1 ||
		f.Inst == nil || *f.Inst != 40 || f.Cycles == nil || *f.Cycles != 30 {
		t.Errorf("metered: got %+v", f)
	}

	// Without counters: inst and cycles stay missing.
	r.Extra = map[string]float64{"ns/link": 12.5, "allocs/link": 0.25}
	f = figuresFromResult(r, "link", "ns")
	if f.Tasks != nil || f.Inst != nil || f.Cycles != nil {
		t.Errorf("metered without tasks and counters: got %+v", f)
	}

	// A case that does not report its metric (no meter) has no figure:
	// NaN, which fails the case, rather than the testing package's ns/op.
	r.Extra = nil
	if f = figuresFromResult(r, "op", "ns"); !math.IsNaN(f.Ns) {
		t.Errorf("not metered: got %+v, want NaN", f)
	}

	// Non-finite metrics are treated as missing.
	r.Extra = map[string]float64{"ns/op": 3, "tasks/op": math.NaN()}
	if f = figuresFromResult(r, "op", "ns"); f.Ns != 3 || f.Tasks != nil {
		t.Errorf("NaN tasks: got %+v", f)
	}
}

// fakeSuite returns summaries as the runner would produce them: a baseline
// and two cases compared with it in Chain, a case whose baseline was not
// selected, and a failed case in Post.
func fakeSuite() []caseSummary {
	runs := func(ns ...float64) []runFigures {
		var rs []runFigures
		for i, v := range ns {
			rs = append(rs, runFigures{N: 1000 * (i + 1), Ns: v, Allocs: 2})
		}
		return rs
	}
	withTasks := func(rs []runFigures, tasks float64) []runFigures {
		for i := range rs {
			rs[i].Tasks = ptr(tasks)
		}
		return rs
	}
	cs := []benchCase{
		{Group: "Chain", Name: "depth=8/goroutines", Unit: "link", Fn: nop},
		{Group: "Chain", Name: "depth=8/then_value", Unit: "link", Baseline: "depth=8/goroutines", Fn: nop},
		{Group: "Chain", Name: "depth=8/await_value", Unit: "link", Baseline: "depth=8/goroutines", Fn: nop},
		{Group: "Chain", Name: "depth=32/then_value", Unit: "link", Baseline: "depth=32/goroutines", Fn: nop},
		{Group: "Post", Name: "callback", Unit: "op", Baseline: "go_chan", Fn: nop},
		{Group: "Post", Name: "go_chan", Unit: "op", Fn: nop},
	}
	sums := []caseSummary{
		summarize(cs[0], runs(150, 146, 160, 149, 151), statusOK),
		summarize(cs[1], withTasks(runs(20, 21, 19, 22, 20), 1), statusOK),
		summarize(cs[2], withTasks(runs(300, 290, 310), 1), statusOK),
		summarize(cs[3], withTasks(runs(2000, 2100), 1), statusOK),
		summarize(cs[4], nil, statusFailed),
		summarize(cs[5], runs(1_250_000), statusOK),
	}
	linkBaselines(sums)
	return sums
}

// TestSummarize checks the statistics, the median run and the baseline ratios of the fake suite.
func TestSummarize(t *testing.T) {
	sums := fakeSuite()
	base, then := sums[0], sums[1]
	if base.Median != 150 || base.MAD != 1 || base.Min != 146 || base.Max != 160 {
		t.Errorf("baseline stats = median %v mad %v min %v max %v, want 150 1 146 160", base.Median, base.MAD, base.Min, base.Max)
	}
	// The median run is the one with ns 150, the first (N=1000).
	if base.N != 1000 {
		t.Errorf("baseline iterations = %d, want 1000 (b.N of the median run)", base.N)
	}
	if base.Allocs == nil || *base.Allocs != 2 || base.Tasks != nil || base.Inst != nil {
		t.Errorf("baseline allocs %v tasks %v inst %v, want 2 nil nil", base.Allocs, base.Tasks, base.Inst)
	}
	if then.VsBaseline == nil || *then.VsBaseline != 7.5 {
		t.Errorf("then_value vs baseline = %v, want 7.5", then.VsBaseline)
	}
	if sums[2].VsBaseline == nil || *sums[2].VsBaseline != 0.5 {
		t.Errorf("await_value vs baseline = %v, want 0.5", sums[2].VsBaseline)
	}
	if sums[3].VsBaseline != nil || sums[3].Median != 2050 || sums[3].N != 1000 {
		t.Errorf("depth=32 (baseline not selected): vs %v median %v N %d", sums[3].VsBaseline, sums[3].Median, sums[3].N)
	}
	if sums[4].Status != statusFailed || sums[4].VsBaseline != nil {
		t.Errorf("failed case: %+v", sums[4])
	}
	if s := summarize(sums[5].Case, nil, statusOK); s.Status != statusFailed {
		t.Errorf("a case without runs is reported %q, want %q", s.Status, statusFailed)
	}
}

// TestWriteTable checks the table printed for the fake suite without counters.
func TestWriteTable(t *testing.T) {
	env := environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", GOMAXPROCS: 2, NumCPU: 2,
		Runs: 5, PerRun: 200 * time.Millisecond, Counters: "perf_event_open(instructions): no such file or directory"}
	var buf bytes.Buffer
	writeTable(&buf, env, fakeSuite())
	out := buf.String()
	t.Logf("\n%s", out)
	lines := strings.Split(out, "\n")

	tableHas(t, out,
		"single run duration:  200ms",
		"number of runs:       5",
		"inst/cycles counters: columns left out: the kernel refuses them (perf_event_open(instructions): no such file or directory)",
		"\nChain: ns/link (median mad min max), allocs/link, tasks/link\ntest ",
		"\nPost: ns/op (median mad min max), allocs/op, tasks/op\ntest ",
		"  mad         median absolute deviation",
		"  ratio       baseline median / this median",
	)
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s", name)
		return nil
	}
	wantRow := func(name string, want ...string) {
		t.Helper()
		got := row(name)
		if strings.Join(got, " ") != strings.Join(append([]string{name}, want...), " ") {
			t.Errorf("row %s:\n got %q\nwant %q", name, got, append([]string{name}, want...))
		}
	}
	if strings.Contains(out, " inst ") || strings.Contains(out, " cycles ") {
		t.Errorf("inst and cycles columns printed without figures")
	}
	wantRow("Chain/depth=8/goroutines", "1000", "150.00ns", "1.00ns", "146.00ns", "160.00ns", "2.000", "-", "go", "-", "-")
	wantRow("Chain/depth=8/then_value", "5000", "20.00ns", "1.00ns", "19.00ns", "22.00ns", "2.000", "1.000", "spindle", "depth=8/goroutines", "7.5x", "faster")
	wantRow("Chain/depth=8/await_value", "1000", "300.00ns", "10.00ns", "290.00ns", "310.00ns", "2.000", "1.000", "spindle", "depth=8/goroutines", "2.0x", "slower")
	wantRow("Chain/depth=32/then_value", "1000", "2.050us", "50.00ns", "2.000us", "2.100us", "2.000", "1.000", "spindle", "depth=32/goroutines", "n/a")
	wantRow("Post/callback", "FAILED")
	wantRow("Post/go_chan", "1000", "1.250ms", "0.00ns", "1.250ms", "1.250ms", "2.000", "-", "go", "-", "-")

	// The summary: then_value 7.5x and await_value 0.5x against
	// goroutines, geometric mean sqrt(7.5*0.5); await_value loses.
	tableHas(t, out,
		"\nSummary: spindle against the best non-spindle case.",
		"  Chain  1.9x faster            2      depth=8/goroutines\n",
		"\nWhere spindle loses",
		"  Chain/depth=8/await_value  2.0x slower than depth=8/goroutines\n",
	)

	// Columns line up within a section (text/tabwriter): the median cell
	// of every row of the Chain section starts where its header's does.
	var hdr string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "test "):
			hdr = l
		case strings.HasPrefix(l, "Chain/") && hdr != "":
			med := row(strings.Fields(l)[0])[2]
			if i := strings.Index(hdr, "median"); !strings.HasPrefix(l[i:], med+" ") {
				t.Errorf("median cell %q not under its header in %q", med, l)
			}
		}
	}
}

// TestWriteTableCounters checks the inst and cycles cells when the counters gave figures.
func TestWriteTableCounters(t *testing.T) {
	sums := fakeSuite()[:2]
	sums[1].Inst, sums[1].Cycles = ptr(123.456), ptr(78.9)
	var buf bytes.Buffer
	writeTable(&buf, environment{Runs: 5, PerRun: time.Second}, sums)
	out := buf.String()
	if !strings.Contains(out, "inst/cycles counters: available") {
		t.Errorf("header does not say the counters are available:\n%s", out)
	}
	if !strings.Contains(out, "tasks/link, inst/link, cycles/link\n") || !strings.Contains(out, "  inst   cycles  ") {
		t.Errorf("inst and cycles columns missing:\n%s", out)
	}
	if !strings.Contains(out, "  n/a  ") {
		t.Errorf("a case without counter figures does not read n/a:\n%s", out)
	}
	if !strings.Contains(out, "  123.5  ") || !strings.Contains(out, "  78.9  ") {
		t.Errorf("inst/cycles not printed with one decimal:\n%s", out)
	}
}

// TestWriteJSON checks the -json output of the fake suite, nulls included.
func TestWriteJSON(t *testing.T) {
	env := environment{GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", GOMAXPROCS: 2, NumCPU: 2,
		Runs: 5, PerRun: 200 * time.Millisecond, Counters: "perf_event_open(instructions): no such file or directory"}
	var buf bytes.Buffer
	if err := writeJSON(&buf, env, fakeSuite()); err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, buf.String())
	}
	if rep["counters_error"] != env.Counters || rep["run_time_ns"] != 2e8 || rep["runs"] != 5.0 {
		t.Errorf("header: %v", rep)
	}
	cs := rep["cases"].([]any)
	if len(cs) != 6 {
		t.Fatalf("%d cases, want 6", len(cs))
	}
	then := cs[1].(map[string]any)
	for k, want := range map[string]any{
		"name": "Chain/depth=8/then_value", "group": "Chain", "case": "depth=8/then_value", "unit": "link",
		"metric": "ns", "kind": "spindle", "baseline": "depth=8/goroutines", "status": "ok", "iterations": 5000.0,
		"median_ns": 20.0, "mad_ns": 1.0, "min_ns": 19.0, "max_ns": 22.0, "allocs": 2.0, "tasks": 1.0, "inst": nil,
		"cycles": nil, "vs_baseline": 7.5, "best_other": "depth=8/goroutines", "vs_best_other": 7.5,
	} {
		if got, ok := then[k]; !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("then_value[%q] = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if runs := then["runs"].([]any); len(runs) != 5 || runs[0].(map[string]any)["inst"] != nil {
		t.Errorf("then_value runs = %v", runs)
	}
	failed := cs[4].(map[string]any)
	if failed["status"] != statusFailed || failed["median_ns"] != nil || len(failed["runs"].([]any)) != 0 {
		t.Errorf("failed case = %v", failed)
	}
	if base := cs[0].(map[string]any); base["tasks"] != nil || base["vs_baseline"] != nil {
		t.Errorf("baseline = %v", base)
	}

	// NaN cannot be encoded: it must become null rather than fail.
	sums := fakeSuite()
	sums[0].Tasks = ptr(math.NaN())
	if err := writeJSON(&bytes.Buffer{}, env, sums); err != nil {
		t.Errorf("NaN figure: %v", err)
	}
}

// TestSelectCases checks the -bench filter and the run and print order.
func TestSelectCases(t *testing.T) {
	all := []benchCase{
		{Group: "Alloc", Name: "heap", Unit: "op"},
		{Group: "Merge", Name: "n=10/spindle", Unit: "item"},
		{Group: "Zeta", Name: "x", Unit: "op"},
		{Group: "Chain", Name: "depth=8/then_value", Unit: "link"},
		{Group: "Merge", Name: "n=10/setup", Unit: "op"},
		{Group: "Chain", Name: "depth=8/goroutines", Unit: "link"},
		{Group: "Merge", Name: "n=100/spindle", Unit: "item"},
	}
	names := func(cs []benchCase) string {
		var s []string
		for _, c := range cs {
			s = append(s, fullName(c))
		}
		return strings.Join(s, " ")
	}
	got := names(selectCases(all, regexp.MustCompile(".")))
	want := "Chain/depth=8/then_value Chain/depth=8/goroutines Merge/n=10/spindle Merge/n=100/spindle Merge/n=10/setup Alloc/heap Zeta/x"
	if got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
	if got := names(selectCases(all, regexp.MustCompile("n=10/|^Alloc/"))); got != "Merge/n=10/spindle Merge/n=10/setup Alloc/heap" {
		t.Errorf("filter: got %s", got)
	}
	if got := names(selectCases(all, regexp.MustCompile("^BenchmarkChain/depth=8/go"))); got != "Chain/depth=8/goroutines" {
		t.Errorf("go test name: got %s", got)
	}
	if got := selectCases(all, regexp.MustCompile("nothing")); len(got) != 0 {
		t.Errorf("no match: got %s", names(got))
	}
}

// recordingTB collects the errors checkRegistry reports.
type recordingTB struct {
	testing.TB
	errs []string
}

// Helper does nothing: there is no call stack to trim.
func (r *recordingTB) Helper() {}

// Errorf records the error instead of failing the test.
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckRegistryFindsProblems checks that the registry test catches each kind of mistake.
func TestCheckRegistryFindsProblems(t *testing.T) {
	bad := []benchCase{
		{Group: "Chain", Name: "depth=8/goroutines", Unit: "link", Fn: nop},
		{Group: "Chain", Name: "depth=8/goroutines", Unit: "link", Fn: nop},                           // duplicate
		{Group: "Chain", Name: "depth=8/then_value", Unit: "link", Baseline: "depth=8/nope", Fn: nop}, // unknown baseline
		{Group: "Post", Name: "callback", Unit: "op", Baseline: "depth=8/goroutines", Fn: nop},        // baseline in another group
		{Group: "Chain", Name: "depth=8/await", Unit: "op", Baseline: "depth=8/goroutines", Fn: nop},  // unit differs
		{Group: "Chain", Name: "depth=8/x", Unit: "link", Baseline: "depth=8/then_value", Fn: nop},    // baseline has a baseline
		{Group: "Bogus", Name: "y", Fn: nop},                                                          // unknown group, no unit
		{Group: "Alloc", Name: "heap", Unit: "op"},                                                    // no Fn
		{Group: "Post", Name: "k", Unit: "op", Kind: "rust", Metric: "furlongs", Fn: nop},             // unknown kind and metric
		{Group: "Post", Name: "m", Unit: "op", Metric: "B", Fn: nop},
		{Group: "Post", Name: "n", Unit: "op", Baseline: "m", Fn: nop}, // metric differs
	}
	rec := &recordingTB{TB: t}
	checkRegistry(rec, bad)
	for _, want := range []string{
		"Chain/depth=8/goroutines: registered twice",
		`Chain/depth=8/then_value: baseline "depth=8/nope" is not a registered case`,
		`Post/callback: baseline "depth=8/goroutines" is not a registered case of group Post`,
		`Chain/depth=8/await: unit "op", but its baseline`,
		"Chain/depth=8/x: baseline Chain/depth=8/then_value itself has a baseline",
		`Bogus/y: group "Bogus" is not in groupOrder`,
		"Bogus/y: no Unit",
		"Alloc/heap: no Fn",
		`Post/k: unknown kind "rust"`,
		`Post/k: unknown metric "furlongs"`,
		`Post/n: metric "ns", but its baseline Post/m has metric "B"`,
	} {
		found := false
		for _, e := range rec.errs {
			found = found || strings.Contains(e, want)
		}
		if !found {
			t.Errorf("no error containing %q; got:\n%s", want, strings.Join(rec.errs, "\n"))
		}
	}
	if len(rec.errs) != 11 {
		t.Errorf("%d errors, want 11:\n%s", len(rec.errs), strings.Join(rec.errs, "\n"))
	}
}

// tableHas fails t for each of wants that the printed table out lacks.
func tableHas(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
