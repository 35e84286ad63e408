package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// benchCase outcomes.
const (
	statusOK      = "ok"
	statusFailed  = "FAILED"
	statusSkipped = "SKIPPED"
)

// runFigures are one run's per-unit figures, read from the BenchmarkResult.
type runFigures struct {
	N      int      `json:"iterations"` // b.N of the run
	Ns     float64  `json:"ns"`         // the case's metric per unit: ns/<unit> for most cases (see metricOf)
	Allocs float64  `json:"allocs"`     // allocs/<unit>
	Tasks  *float64 `json:"tasks"`      // tasks/<unit>; nil when the case reports none
	Inst   *float64 `json:"inst"`       // inst/<unit>; nil without hardware counters
	Cycles *float64 `json:"cycles"`     // cycles/<unit>; nil without hardware counters
}

// caseSummary is the outcome of all runs of one case. Its statistics are
// of the runs' metric (Ns) and meaningful when Runs is not empty; the other
// figures are medians per unit over the runs that have them (nil if none).
// VsBaseline is the baseline's median over this case's median (above 1:
// this case takes less), nil without a measured baseline; BestOther is the
// go or peer case of this case's comparison set (comparisonSet) with the
// lowest median and VsBest its median over this one's (spindle cases only).
type caseSummary struct {
	Case                        benchCase
	Status                      string // statusOK, statusFailed or statusSkipped
	Runs                        []runFigures
	N                           int // b.N of the median run
	Median, MAD, Min, Max       float64
	Allocs, Tasks, Inst, Cycles *float64
	VsBaseline                  *float64
	BestOther                   string
	VsBest                      *float64
}

// environment describes the machine and settings, for the table header and
// the JSON report (whose header it is).
type environment struct {
	GoVersion  string        `json:"go"`
	GOOS       string        `json:"goos"`
	GOARCH     string        `json:"goarch"`
	GOMAXPROCS int           `json:"gomaxprocs"`
	NumCPU     int           `json:"num_cpu"`
	Runs       int           `json:"runs"`
	PerRun     time.Duration `json:"run_time_ns"`              // -time
	Alloc      string        `json:"alloc"`                    // the executors' allocation strategy (-alloc)
	Counters   string        `json:"counters_error,omitempty"` // "" when inst and cycles are measured, else why not
	Date       string        `json:"date,omitempty"`           // when the run started, RFC 3339
	// Notes says, per group, what its comparison leaves out (the peers'
	// groups carry one).
	Notes map[string]string `json:"notes,omitempty"`
}

// fullName is the case's "Group/Name", what -bench matches.
func fullName(c benchCase) string { return c.Group + "/" + c.Name }

// ptr returns a pointer to a copy of v.
func ptr(v float64) *float64 { return &v }

// selectCases returns the cases whose "Group/Name", or the name `go test`
// gives them ("BenchmarkGroup/Name"), matches re, ordered by
// group (groupOrder, then unknown groups in registry order), then by unit
// within a group (first appearance), then in registry order, so that each
// (Group, Unit) section of the table is contiguous.
func selectCases(all []benchCase, re *regexp.Regexp) []benchCase {
	var sel []benchCase
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
	slices.SortStableFunc(sel, func(a, b benchCase) int {
		rank := func(g string) int { // groupOrder's, unknown groups last
			return cmp.Or(slices.Index(groupOrder, g)+1, len(groupOrder)+1)
		}
		if d := rank(a.Group) - rank(b.Group); d != 0 {
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
// ("<metric>/<unit>", "allocs/<unit>", "tasks/<unit>", "inst/<unit>",
// "cycles/<unit>"), which the meter reports. A case that does not report
// its metric gets NaN, which summarize turns into a failure.
func figuresFromResult(r testing.BenchmarkResult, unit, metric string) runFigures {
	extra := func(kind string) *float64 {
		if v, ok := r.Extra[kind+"/"+unit]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return ptr(v)
		}
		return nil
	}
	f := runFigures{N: r.N, Ns: math.NaN(), Tasks: extra("tasks"), Inst: extra("inst"), Cycles: extra("cycles")}
	if v := extra(metric); v != nil {
		f.Ns = *v
	}
	if v := extra("allocs"); v != nil {
		f.Allocs = *v
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

// figures returns the runs' values of one figure, leaving out the runs
// that lack it (get returns nil).
func figures(runs []runFigures, get func(r runFigures) *float64) []float64 {
	var vs []float64
	for _, r := range runs {
		if v := get(r); v != nil {
			vs = append(vs, *v)
		}
	}
	return vs
}

// medianOf returns the median of vs, nil if vs is empty.
func medianOf(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	return ptr(median(vs))
}

// summarize computes a case's statistics over its runs. A case without
// runs, or with a run that lacks its metric (NaN), has failed.
func summarize(c benchCase, runs []runFigures, status string) caseSummary {
	s := caseSummary{Case: c, Status: status, Runs: runs}
	for _, r := range runs {
		if math.IsNaN(r.Ns) {
			s.Status, s.Runs = statusFailed, nil
			return s
		}
	}
	if len(runs) == 0 {
		if s.Status == statusOK {
			s.Status = statusFailed
		}
		return s
	}
	byNs := slices.SortedStableFunc(slices.Values(runs), func(a, b runFigures) int { return cmp.Compare(a.Ns, b.Ns) })
	s.N = byNs[(len(byNs)-1)/2].N
	ns := figures(runs, func(r runFigures) *float64 { return &r.Ns })
	s.Median, s.MAD = median(ns), mad(ns)
	s.Min, s.Max = slices.Min(ns), slices.Max(ns)
	s.Allocs = medianOf(figures(runs, func(r runFigures) *float64 { return &r.Allocs }))
	s.Tasks = medianOf(figures(runs, func(r runFigures) *float64 { return r.Tasks }))
	s.Inst = medianOf(figures(runs, func(r runFigures) *float64 { return r.Inst }))
	s.Cycles = medianOf(figures(runs, func(r runFigures) *float64 { return r.Cycles }))
	return s
}

// comparable reports whether a and b measured the same figure: same
// group, unit and metric, both ok with a positive median.
func comparable(a, b *caseSummary) bool {
	return a.Case.Group == b.Case.Group && a.Case.Unit == b.Case.Unit && metricOf(a.Case) == metricOf(b.Case) &&
		a.Status == statusOK && b.Status == statusOK && a.Median > 0 && b.Median > 0
}

// linkBaselines sets VsBaseline for every case whose Baseline (same group,
// unit and metric) was measured in the same run, and BestOther and VsBest
// for every spindle case (see comparisonSet).
func linkBaselines(sums []caseSummary) {
	byName := map[string]*caseSummary{}
	for i := range sums {
		byName[fullName(sums[i].Case)] = &sums[i]
	}
	for i := range sums {
		s := &sums[i]
		s.VsBaseline, s.BestOther, s.VsBest = nil, "", nil
		if s.Case.Baseline != "" {
			if base, ok := byName[s.Case.Group+"/"+s.Case.Baseline]; ok && comparable(s, base) {
				s.VsBaseline = ptr(base.Median / s.Median)
			}
		}
		if kindOf(s.Case) != kindSpindle || s.Status != statusOK {
			continue
		}
		var best *caseSummary
		for _, o := range comparisonSet(sums, *s) {
			if k := kindOf(o.Case); (k == kindGo || k == kindPeer) && comparable(s, o) && (best == nil || o.Median < best.Median) {
				best = o
			}
		}
		if best != nil {
			s.BestOther, s.VsBest = best.Case.Name, ptr(best.Median/s.Median)
		}
	}
}

// comparisonSet returns the cases measured against the same baseline as s:
// s's baseline (or s itself, when it has none) and every case of its group
// whose Baseline is that case.
func comparisonSet(sums []caseSummary, s caseSummary) []*caseSummary {
	key := s.Case.Baseline
	if key == "" {
		key = s.Case.Name
	}
	var set []*caseSummary
	for i := range sums {
		c := sums[i].Case
		if c.Group == s.Case.Group && (c.Name == key || c.Baseline == key) {
			set = append(set, &sums[i])
		}
	}
	return set
}

// fmtValue formats a figure of metric with a unit suffix: ns, us, ms or s
// for times, B, KiB or MiB for bytes.
func fmtValue(metric string, v float64) string {
	scale, units, decimals := []float64{1, 1e3, 1e6, 1e9}, []string{"ns", "us", "ms", "s"}, []int{2, 3, 3, 3}
	if metric == "B" {
		scale, units, decimals = []float64{1, 1 << 10, 1 << 20}, []string{"B", "KiB", "MiB"}, []int{1, 2, 2}
	}
	i := 0
	for i+1 < len(scale) && math.Abs(v) >= scale[i+1] {
		i++
	}
	return fmt.Sprintf("%.*f%s", decimals[i], v/scale[i], units[i])
}

// fmtFixed formats v with the given decimals, or missing when v is nil.
func fmtFixed(v *float64, decimals int, missing string) string {
	if v == nil {
		return missing
	}
	return fmt.Sprintf("%.*f", decimals, *v)
}

// fmtRatioOf formats a ratio (other's figure / this figure) of metric:
// "7.3x faster" or "1.4x slower" ("smaller" and "larger" for bytes).
func fmtRatioOf(metric string, r float64) string {
	better, worse := "faster", "slower"
	if metric == "B" {
		better, worse = "smaller", "larger"
	}
	if r >= 1 {
		return fmt.Sprintf("%.1fx %s", r, better)
	}
	return fmt.Sprintf("%.1fx %s", 1/r, worse)
}

// writeTable prints the perf_tests-style table: a header describing the
// run and how to read it, one section per (Group, Unit) in the order of
// sums (see selectCases), then the summary (writeSummary).
func writeTable(w io.Writer, env environment, sums []caseSummary) {
	counters := slices.ContainsFunc(sums, func(s caseSummary) bool { return s.Inst != nil || s.Cycles != nil })
	fmt.Fprintf(w, "go version:           %s %s/%s\n", env.GoVersion, env.GOOS, env.GOARCH)
	fmt.Fprintf(w, "single run duration:  %v\n", env.PerRun)
	fmt.Fprintf(w, "number of runs:       %d\n", env.Runs)
	fmt.Fprintf(w, "number of cores:      %d (GOMAXPROCS %d)\n", env.NumCPU, env.GOMAXPROCS)
	switch {
	case counters:
		fmt.Fprintf(w, "inst/cycles counters: available\n")
	case env.Counters != "":
		fmt.Fprintf(w, "inst/cycles counters: columns left out: the kernel refuses them (%s)\n", env.Counters)
	default:
		fmt.Fprintf(w, "inst/cycles counters: columns left out: no case measured them\n")
	}
	if env.Alloc != "" {
		fmt.Fprintf(w, "future allocation:    %s\n", env.Alloc)
	}
	fmt.Fprintf(w, "\n%s\n", legend)

	header := "test\titerations\tmedian\tmad\tmin\tmax\tallocs\ttasks\t"
	if counters {
		header += "inst\tcycles\t"
	}
	header += "kind\tbaseline\tratio"
	var tw *tabwriter.Writer
	for i, s := range sums {
		if i == 0 || s.Case.Group != sums[i-1].Case.Group || s.Case.Unit != sums[i-1].Case.Unit {
			if tw != nil {
				tw.Flush()
			}
			fmt.Fprintf(w, "\n%s\n", sectionTitle(s.Case, counters))
			if note := env.Notes[s.Case.Group]; note != "" && (i == 0 || s.Case.Group != sums[i-1].Case.Group) {
				fmt.Fprintf(w, "(%s)\n", note)
			}
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, header)
		}
		fmt.Fprintln(tw, strings.Join(tableRow(s, counters), "\t"))
	}
	if tw != nil {
		tw.Flush()
	}
	writeSummary(w, sums)
}

// tableRow returns the cells of one case's row.
func tableRow(s caseSummary, counters bool) []string {
	if s.Status != statusOK {
		return []string{fullName(s.Case), s.Status}
	}
	val := func(v float64) string { return fmtValue(metricOf(s.Case), v) }
	row := []string{fullName(s.Case), fmt.Sprint(s.N), val(s.Median), val(s.MAD), val(s.Min), val(s.Max),
		fmtFixed(s.Allocs, 3, "-"), fmtFixed(s.Tasks, 3, "-")}
	if counters {
		row = append(row, fmtFixed(s.Inst, 1, "n/a"), fmtFixed(s.Cycles, 1, "n/a"))
	}
	ratio := "-"
	switch {
	case s.Case.Baseline != "" && s.VsBaseline == nil:
		ratio = "n/a" // the baseline was not measured in this run
	case s.Case.Baseline != "":
		ratio = fmtRatioOf(metricOf(s.Case), *s.VsBaseline)
	}
	return append(row, kindOf(s.Case), cmp.Or(s.Case.Baseline, "-"), ratio)
}

// sectionTitle names a (Group, Unit) section and the figures of its
// columns.
func sectionTitle(c benchCase, counters bool) string {
	metric, unit := metricOf(c), c.Unit
	t := fmt.Sprintf("%s: %s/%s (median mad min max), allocs/%s, tasks/%s", c.Group, metric, unit, unit, unit)
	if counters {
		t += fmt.Sprintf(", inst/%s, cycles/%s", unit, unit)
	}
	return t
}

// legend explains the table; writeTable prints it under the header.
const legend = `How to read it: each figure is per unit of work (the section title names it).
  median      the middle of the runs' figures, the one to compare
  mad         median absolute deviation: about half of the runs lie within median +- mad
  min, max    the best and the worst run; cases whose min-max ranges overlap are not clearly apart
  iterations  b.N of the median run; allocs: heap allocations; tasks: loop tasks (- without a loop)
  kind        spindle: this library; go: plain Go or golang.org/x; peer: another project;
              variant: a design spindle does not use, or a raw runtime cost, shown for scale
  baseline    the case of the same group this row is compared with, measured in this run
  ratio       baseline median / this median: "3.0x faster" takes a third of the baseline's time
              ("smaller" and "larger" for bytes)`
