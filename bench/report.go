package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Case outcomes.
const (
	statusOK      = "ok"
	statusFailed  = "FAILED"
	statusSkipped = "SKIPPED"
)

// runFigures are one run's per-unit figures, read from the BenchmarkResult.
type runFigures struct {
	N      int      // b.N of the run
	Ns     float64  // ns/<unit>
	Allocs float64  // allocs/<unit>
	Tasks  *float64 // tasks/<unit>; nil when the case reports none
	Inst   *float64 // inst/<unit>; nil without hardware counters
	Cycles *float64 // cycles/<unit>; nil without hardware counters
}

// caseSummary is the outcome of all runs of one case.
type caseSummary struct {
	Case   Case
	Status string // statusOK, statusFailed or statusSkipped
	Runs   []runFigures

	// Statistics of Runs' Ns; meaningful when Runs is not empty.
	N                     int // b.N of the median run
	Median, MAD, Min, Max float64

	// Medians per unit over the runs that have the figure; nil if none has.
	Allocs, Tasks, Inst, Cycles *float64

	// VsBaseline is the baseline's median over this case's median (above 1:
	// this case is faster); nil without a measured baseline.
	VsBaseline *float64
}

// environment describes the machine and settings, for the table header and
// the JSON report.
type environment struct {
	GoVersion, GOOS, GOARCH string
	GOMAXPROCS, NumCPU      int
	Runs                    int
	PerRun                  time.Duration
	Counters                string // "" when inst and cycles are measured, else why not
	Alloc                   string // the executors' allocation strategy (-alloc)
}

// fullName is the case's "Group/Name", what -bench matches.
func fullName(c Case) string { return c.Group + "/" + c.Name }

// ptr returns a pointer to a copy of v.
func ptr(v float64) *float64 { return &v }

// groupRank orders groups as groupOrder does, unknown groups last.
func groupRank(g string) int {
	if i := slices.Index(groupOrder, g); i >= 0 {
		return i
	}
	return len(groupOrder)
}

// selectCases returns the cases whose "Group/Name", or the name `go test`
// gives them ("BenchmarkGroup/Name"), matches re, ordered by
// group (groupOrder, then unknown groups in registry order), then by unit
// within a group (first appearance), then in registry order, so that each
// (Group, Unit) section of the table is contiguous.
func selectCases(all []Case, re *regexp.Regexp) []Case {
	var sel []Case
	for _, c := range all {
		if re.MatchString(fullName(c)) || re.MatchString("Benchmark"+fullName(c)) {
			sel = append(sel, c)
		}
	}
	firstGroup := map[string]int{}
	firstUnit := map[string]int{}
	for i, c := range sel {
		if _, ok := firstGroup[c.Group]; !ok {
			firstGroup[c.Group] = i
		}
		if _, ok := firstUnit[c.Group+"\x00"+c.Unit]; !ok {
			firstUnit[c.Group+"\x00"+c.Unit] = i
		}
	}
	slices.SortStableFunc(sel, func(a, b Case) int {
		if d := groupRank(a.Group) - groupRank(b.Group); d != 0 {
			return d
		}
		if d := firstGroup[a.Group] - firstGroup[b.Group]; d != 0 {
			return d
		}
		return firstUnit[a.Group+"\x00"+a.Unit] - firstUnit[b.Group+"\x00"+b.Unit]
	})
	return sel
}

// figuresFromResult reads one run's per-unit figures from r.Extra
// ("ns/<unit>", "allocs/<unit>", "tasks/<unit>", "inst/<unit>",
// "cycles/<unit>"). A case that reports no "ns/<unit>" did not use a Meter:
// its time and allocations fall back to the per-op figures (NsPerOp,
// AllocsPerOp, at float precision) and its instructions and cycles to
// instPerOp and cyclesPerOp, which the runner measured around the round.
func figuresFromResult(r testing.BenchmarkResult, unit string, instPerOp, cyclesPerOp *float64) runFigures {
	f := runFigures{N: r.N}
	extra := func(kind string) *float64 {
		if v, ok := r.Extra[kind+"/"+unit]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return ptr(v)
		}
		return nil
	}
	metered := extra("ns") != nil
	if v := extra("ns"); v != nil {
		f.Ns = *v
	} else if v, ok := r.Extra["ns/op"]; ok {
		f.Ns = v
	} else if r.N > 0 {
		f.Ns = float64(r.T.Nanoseconds()) / float64(r.N)
	}
	if v := extra("allocs"); v != nil {
		f.Allocs = *v
	} else if v, ok := r.Extra["allocs/op"]; ok {
		f.Allocs = v
	} else if r.N > 0 {
		f.Allocs = float64(r.MemAllocs) / float64(r.N)
	}
	f.Tasks = extra("tasks")
	f.Inst, f.Cycles = extra("inst"), extra("cycles")
	if !metered {
		f.Inst, f.Cycles = instPerOp, cyclesPerOp
	}
	return f
}

// median returns the median of vs (the mean of the middle two for an even
// count); vs must not be empty. It does not modify vs.
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// mad returns the median absolute deviation of vs from its median.
func mad(vs []float64) float64 {
	m := median(vs)
	dev := make([]float64, len(vs))
	for i, v := range vs {
		dev[i] = math.Abs(v - m)
	}
	return median(dev)
}

// medianOf returns the median of the non-nil values, nil if there are none.
func medianOf(vs []*float64) *float64 {
	var have []float64
	for _, v := range vs {
		if v != nil {
			have = append(have, *v)
		}
	}
	if len(have) == 0 {
		return nil
	}
	return ptr(median(have))
}

// summarize computes a case's statistics over its runs.
func summarize(c Case, runs []runFigures, status string) caseSummary {
	s := caseSummary{Case: c, Status: status, Runs: runs}
	if len(runs) == 0 {
		if s.Status == statusOK {
			s.Status = statusFailed
		}
		return s
	}
	ns := make([]float64, len(runs))
	var allocs, tasks, inst, cycles []*float64
	for i, r := range runs {
		ns[i] = r.Ns
		allocs = append(allocs, ptr(r.Allocs))
		tasks = append(tasks, r.Tasks)
		inst = append(inst, r.Inst)
		cycles = append(cycles, r.Cycles)
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(ns[a], ns[b]) })
	s.N = runs[order[(len(order)-1)/2]].N
	s.Median, s.MAD = median(ns), mad(ns)
	s.Min, s.Max = slices.Min(ns), slices.Max(ns)
	s.Allocs, s.Tasks = medianOf(allocs), medianOf(tasks)
	s.Inst, s.Cycles = medianOf(inst), medianOf(cycles)
	return s
}

// cmpFloat compares two floats for sorting.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// linkBaselines sets VsBaseline for every case whose Baseline (same group,
// same unit) was measured in the same run.
func linkBaselines(sums []caseSummary) {
	byName := map[string]*caseSummary{}
	for i := range sums {
		byName[fullName(sums[i].Case)] = &sums[i]
	}
	for i := range sums {
		s := &sums[i]
		s.VsBaseline = nil
		if s.Case.Baseline == "" || s.Status != statusOK || !(s.Median > 0) {
			continue
		}
		base, ok := byName[s.Case.Group+"/"+s.Case.Baseline]
		if !ok || base.Status != statusOK || base.Case.Unit != s.Case.Unit || !(base.Median > 0) {
			continue
		}
		s.VsBaseline = ptr(base.Median / s.Median)
	}
}

// fmtTime formats nanoseconds with a unit suffix: ns, us, ms or s.
func fmtTime(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a < 1e3:
		return fmt.Sprintf("%.2fns", ns)
	case a < 1e6:
		return fmt.Sprintf("%.3fus", ns/1e3)
	case a < 1e9:
		return fmt.Sprintf("%.3fms", ns/1e6)
	}
	return fmt.Sprintf("%.3fs", ns/1e9)
}

// fmtFixed formats v with the given decimals, or missing when v is nil.
func fmtFixed(v *float64, decimals int, missing string) string {
	if v == nil {
		return missing
	}
	return fmt.Sprintf("%.*f", decimals, *v)
}

// fmtRatio formats a baseline ratio (baseline time / case time) as
// "7.3x faster" or "1.4x slower".
func fmtRatio(r float64) string {
	if r >= 1 {
		return fmt.Sprintf("%.1fx faster", r)
	}
	return fmt.Sprintf("%.1fx slower", 1/r)
}

// vsGo is the vs-go cell: "-" for a case without a baseline, "n/a" when the
// baseline was not measured in this run.
func vsGo(s caseSummary) string {
	switch {
	case s.Case.Baseline == "":
		return "-"
	case s.VsBaseline == nil:
		return "n/a"
	}
	return fmtRatio(*s.VsBaseline)
}

// tableColumns are the table's columns; all but the first and last are
// right-aligned.
var tableColumns = []string{"test", "iterations", "median", "mad", "min", "max", "allocs", "tasks", "inst", "cycles", "vs-go"}

// tableRow returns the cells of one case's row.
func tableRow(s caseSummary) []string {
	if s.Status != statusOK {
		row := make([]string, len(tableColumns))
		row[0], row[1] = fullName(s.Case), s.Status
		return row
	}
	return []string{
		fullName(s.Case),
		fmt.Sprint(s.N),
		fmtTime(s.Median),
		fmtTime(s.MAD),
		fmtTime(s.Min),
		fmtTime(s.Max),
		fmtFixed(s.Allocs, 3, "-"),
		fmtFixed(s.Tasks, 3, "-"),
		fmtFixed(s.Inst, 1, "n/a"),
		fmtFixed(s.Cycles, 1, "n/a"),
		vsGo(s),
	}
}

// sectionTitle names a (Group, Unit) section and the unit of its figures.
func sectionTitle(group, unit string) string {
	return fmt.Sprintf("%s: ns/%s (median mad min max), allocs/%s, tasks/%s, inst/%s, cycles/%s",
		group, unit, unit, unit, unit, unit)
}

// writeTable prints the perf_tests-style table: a header describing the
// run, then one section per (Group, Unit) in the order of sums (see
// selectCases), columns aligned across sections.
func writeTable(w io.Writer, env environment, sums []caseSummary) {
	counters := "available"
	if env.Counters != "" {
		counters = "n/a (" + env.Counters + ")"
	}
	fmt.Fprintf(w, "go version:           %s %s/%s\n", env.GoVersion, env.GOOS, env.GOARCH)
	fmt.Fprintf(w, "single run duration:  %v\n", env.PerRun)
	fmt.Fprintf(w, "number of runs:       %d\n", env.Runs)
	fmt.Fprintf(w, "number of cores:      %d (GOMAXPROCS %d)\n", env.NumCPU, env.GOMAXPROCS)
	fmt.Fprintf(w, "inst/cycles counters: %s\n", counters)
	if env.Alloc != "" {
		fmt.Fprintf(w, "future allocation:    %s\n", env.Alloc)
	}

	rows := make([][]string, len(sums))
	widths := make([]int, len(tableColumns))
	for i, c := range tableColumns {
		widths[i] = len(c)
	}
	for i, s := range sums {
		rows[i] = tableRow(s)
		for j, cell := range rows[i] {
			widths[j] = max(widths[j], len(cell))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for j, cell := range cells {
			pad := strings.Repeat(" ", widths[j]-len(cell))
			switch {
			case j == 0:
				b.WriteString(cell + pad)
			case j == len(cells)-1:
				b.WriteString("  " + cell)
			default:
				b.WriteString("  " + pad + cell)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	for i, s := range sums {
		if i == 0 || s.Case.Group != sums[i-1].Case.Group || s.Case.Unit != sums[i-1].Case.Unit {
			fmt.Fprintf(w, "\n%s\n", sectionTitle(s.Case.Group, s.Case.Unit))
			line(tableColumns)
		}
		line(rows[i])
	}
}

// jsonReport is the -json output.
type jsonReport struct {
	Go          string     `json:"go"`
	GOOS        string     `json:"goos"`
	GOARCH      string     `json:"goarch"`
	GOMAXPROCS  int        `json:"gomaxprocs"`
	NumCPU      int        `json:"num_cpu"`
	Runs        int        `json:"runs"`
	RunTimeNs   int64      `json:"run_time_ns"`    // -time
	Alloc       string     `json:"alloc"`          // -alloc
	CountersErr *string    `json:"counters_error"` // why inst and cycles are null; null when measured
	Cases       []jsonCase `json:"cases"`
}

// jsonCase is one case in the -json output. Per-unit figures are in the
// case's unit; missing figures are null.
type jsonCase struct {
	Name       string    `json:"name"` // "Group/Name"
	Group      string    `json:"group"`
	Case       string    `json:"case"`
	Unit       string    `json:"unit"`
	Baseline   string    `json:"baseline,omitempty"`
	Status     string    `json:"status"` // "ok", "FAILED", "SKIPPED"
	Iterations int       `json:"iterations"`
	MedianNs   *float64  `json:"median_ns"`
	MADNs      *float64  `json:"mad_ns"`
	MinNs      *float64  `json:"min_ns"`
	MaxNs      *float64  `json:"max_ns"`
	Allocs     *float64  `json:"allocs"`
	Tasks      *float64  `json:"tasks"`
	Inst       *float64  `json:"inst"`
	Cycles     *float64  `json:"cycles"`
	VsBaseline *float64  `json:"vs_baseline"` // baseline median / median
	Runs       []jsonRun `json:"runs"`
}

// jsonRun is one run in the -json output.
type jsonRun struct {
	Iterations int      `json:"iterations"`
	Ns         *float64 `json:"ns"`
	Allocs     *float64 `json:"allocs"`
	Tasks      *float64 `json:"tasks"`
	Inst       *float64 `json:"inst"`
	Cycles     *float64 `json:"cycles"`
}

// finite returns v as a JSON number, or nil (null) when v is nil, NaN or
// infinite, which JSON cannot represent.
func finite(v *float64) *float64 {
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return nil
	}
	return ptr(*v)
}

// jsonReportOf builds the -json output.
func jsonReportOf(env environment, sums []caseSummary) jsonReport {
	rep := jsonReport{
		Go:         env.GoVersion,
		GOOS:       env.GOOS,
		GOARCH:     env.GOARCH,
		GOMAXPROCS: env.GOMAXPROCS,
		NumCPU:     env.NumCPU,
		Runs:       env.Runs,
		RunTimeNs:  env.PerRun.Nanoseconds(),
		Alloc:      env.Alloc,
		Cases:      []jsonCase{},
	}
	if env.Counters != "" {
		rep.CountersErr = &env.Counters
	}
	for _, s := range sums {
		jc := jsonCase{
			Name:     fullName(s.Case),
			Group:    s.Case.Group,
			Case:     s.Case.Name,
			Unit:     s.Case.Unit,
			Baseline: s.Case.Baseline,
			Status:   s.Status,
			Runs:     []jsonRun{},
		}
		for _, r := range s.Runs {
			jc.Runs = append(jc.Runs, jsonRun{
				Iterations: r.N,
				Ns:         finite(&r.Ns),
				Allocs:     finite(&r.Allocs),
				Tasks:      finite(r.Tasks),
				Inst:       finite(r.Inst),
				Cycles:     finite(r.Cycles),
			})
		}
		if len(s.Runs) > 0 {
			jc.Iterations = s.N
			jc.MedianNs, jc.MADNs = finite(&s.Median), finite(&s.MAD)
			jc.MinNs, jc.MaxNs = finite(&s.Min), finite(&s.Max)
			jc.Allocs, jc.Tasks = finite(s.Allocs), finite(s.Tasks)
			jc.Inst, jc.Cycles = finite(s.Inst), finite(s.Cycles)
			jc.VsBaseline = finite(s.VsBaseline)
		}
		rep.Cases = append(rep.Cases, jc)
	}
	return rep
}
