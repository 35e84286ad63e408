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
// linkBaselines sets the last four: ratios are the other case's median over
// this one's (above 1: this case takes less); Overlaps says whether this
// case's and BestOther's min-max ranges overlap.
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
	Overlaps                    bool
}

// environment describes the machine and settings, for the table header and
// the JSON report (whose header it is).
type environment struct {
	GoVersion  string            `json:"go"`
	GOOS       string            `json:"goos"`
	GOARCH     string            `json:"goarch"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	NumCPU     int               `json:"num_cpu"`
	Runs       int               `json:"runs"`
	PerRun     time.Duration     `json:"run_time_ns"`              // -time
	Alloc      string            `json:"alloc"`                    // the executors' allocation strategy (-alloc)
	Counters   string            `json:"counters_error,omitempty"` // "" when inst and cycles are measured, else why not
	Date       string            `json:"date,omitempty"`           // when the run started, RFC 3339
	Notes      map[string]string `json:"notes,omitempty"`          // per group, what its comparison leaves out (peers' groups)
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
	for i := len(sel) - 1; i >= 0; i-- { // backwards: the first index stays
		firstGroup[sel[i].Group], firstUnit[sel[i].Group+"\x00"+sel[i].Unit] = i, i
	}
	slices.SortStableFunc(sel, func(a, b benchCase) int {
		rank := func(g string) int { return cmp.Or(slices.Index(groupOrder, g)+1, len(groupOrder)+1) } // unknown last
		return cmp.Or(rank(a.Group)-rank(b.Group), firstGroup[a.Group]-firstGroup[b.Group],
			firstUnit[a.Group+"\x00"+a.Unit]-firstUnit[b.Group+"\x00"+b.Unit])
	})
	return sel
}

// figuresFromResult reads one run's per-unit figures from r.Extra
// ("<metric>/<unit>", "allocs/<unit>", "tasks/<unit>", "inst/<unit>",
// "cycles/<unit>"), which the meter reports. A case that does not report
// its metric gets NaN, which summarize turns into a failure.
func figuresFromResult(r testing.BenchmarkResult, unit, metric string) runFigures {
	extra := func(kind string) *float64 {
		if v, ok := r.Extra[kind+"/"+unit]; ok {
			return finite(&v)
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
// count) and the median absolute deviation from it; vs must not be empty.
func median(vs []float64) (med, mad float64) {
	mid := func(vs []float64) float64 {
		s := slices.Sorted(slices.Values(vs))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	med = mid(vs)
	dev := make([]float64, len(vs))
	for i, v := range vs {
		dev[i] = math.Abs(v - med)
	}
	return med, mid(dev)
}

// medianOf returns the median of one figure over the runs that have it
// (get returns nil for the others), nil if none has it.
func medianOf(runs []runFigures, get func(r runFigures) *float64) *float64 {
	var vs []float64
	for _, r := range runs {
		if v := get(r); v != nil {
			vs = append(vs, *v)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	m, _ := median(vs)
	return &m
}

// summarize computes a case's statistics over its runs. A case without
// runs, or with a run that lacks its metric (NaN), has failed.
func summarize(c benchCase, runs []runFigures, status string) caseSummary {
	s := caseSummary{Case: c, Status: status, Runs: runs}
	if len(runs) == 0 || slices.ContainsFunc(runs, func(r runFigures) bool { return math.IsNaN(r.Ns) }) {
		if len(runs) > 0 || s.Status == statusOK {
			s.Status = statusFailed
		}
		s.Runs = nil
		return s
	}
	byNs := slices.SortedStableFunc(slices.Values(runs), func(a, b runFigures) int { return cmp.Compare(a.Ns, b.Ns) })
	s.N = byNs[(len(byNs)-1)/2].N
	ns := make([]float64, len(runs))
	for i, r := range runs {
		ns[i] = r.Ns
	}
	s.Median, s.MAD = median(ns)
	s.Min, s.Max = byNs[0].Ns, byNs[len(byNs)-1].Ns
	s.Allocs = medianOf(runs, func(r runFigures) *float64 { return &r.Allocs })
	s.Tasks = medianOf(runs, func(r runFigures) *float64 { return r.Tasks })
	s.Inst = medianOf(runs, func(r runFigures) *float64 { return r.Inst })
	s.Cycles = medianOf(runs, func(r runFigures) *float64 { return r.Cycles })
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
// for every spindle case: the go or peer case with the lowest median among
// those measured against the same baseline (s's baseline, or s itself when
// it has none, and every case of its group whose Baseline is that case).
func linkBaselines(sums []caseSummary) {
	byName := map[string]*caseSummary{}
	for i := range sums {
		byName[fullName(sums[i].Case)] = &sums[i]
	}
	for i := range sums {
		s := &sums[i]
		s.VsBaseline, s.BestOther, s.VsBest, s.Overlaps = nil, "", nil, false
		if s.Case.Baseline != "" {
			if base, ok := byName[s.Case.Group+"/"+s.Case.Baseline]; ok && comparable(s, base) {
				s.VsBaseline = ptr(base.Median / s.Median)
			}
		}
		if kindOf(s.Case) != kindSpindle || s.Status != statusOK {
			continue
		}
		var best *caseSummary
		key := cmp.Or(s.Case.Baseline, s.Case.Name)
		for j := range sums {
			o := &sums[j]
			inSet := o.Case.Group == s.Case.Group && (o.Case.Name == key || o.Case.Baseline == key)
			if k := kindOf(o.Case); inSet && (k == kindGo || k == kindPeer) && comparable(s, o) && (best == nil || o.Median < best.Median) {
				best = o
			}
		}
		if best != nil {
			s.BestOther, s.VsBest = best.Case.Name, ptr(best.Median/s.Median)
			s.Overlaps = s.Min <= best.Max && best.Min <= s.Max
		}
	}
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
	fmt.Fprintf(w, "go version:           %s %s/%s\nsingle run duration:  %v\nnumber of runs:       %d\nnumber of cores:      %d (GOMAXPROCS %d)\n",
		env.GoVersion, env.GOOS, env.GOARCH, env.PerRun, env.Runs, env.NumCPU, env.GOMAXPROCS)
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) // flushed at each section's end, for its own columns
	for i, s := range sums {
		if i == 0 || s.Case.Group != sums[i-1].Case.Group || s.Case.Unit != sums[i-1].Case.Unit {
			tw.Flush()
			unit := s.Case.Unit // the title names the figures of the columns
			fmt.Fprintf(w, "\n%s: %s/%s (median mad min max), allocs/%s, tasks/%s", s.Case.Group, metricOf(s.Case), unit, unit, unit)
			if counters {
				fmt.Fprintf(w, ", inst/%s, cycles/%s", unit, unit)
			}
			fmt.Fprintln(w)
			if note := env.Notes[s.Case.Group]; note != "" && (i == 0 || s.Case.Group != sums[i-1].Case.Group) {
				fmt.Fprintf(w, "(%s)\n", note)
			}
			fmt.Fprintln(tw, header)
		}
		fmt.Fprintln(tw, strings.Join(tableRow(s, counters), "\t"))
	}
	tw.Flush()
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
	if s.VsBaseline != nil {
		ratio = fmtRatioOf(metricOf(s.Case), *s.VsBaseline)
	} else if s.Case.Baseline != "" {
		ratio = "n/a" // the baseline was not measured in this run
	}
	return append(row, kindOf(s.Case), cmp.Or(s.Case.Baseline, "-"), ratio)
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
