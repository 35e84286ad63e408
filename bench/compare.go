package main

// -compare OLD.json: this run (or -in) against an earlier -json report,
// case by case: the change of the median in percent, and whether the runs
// tell the two apart (a two-sided Mann-Whitney U test over the per-run
// figures, as benchstat does; a change with p > 0.05 prints as "~").

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// alpha is the significance level below which a change is reported.
const alpha = 0.05

// writeCompare prints, for every case ok in both old and sums with the same
// metric, the old and new medians, the change and its p-value, and the
// ratio to the baseline before and after.
func writeCompare(w io.Writer, oldName string, oldEnv environment, old, sums []caseSummary) {
	byName := map[string]caseSummary{}
	for _, s := range old {
		byName[fullName(s.Case)] = s
	}
	fmt.Fprintf(w, "\nCompared with %s", oldName)
	if oldEnv.Date != "" {
		fmt.Fprintf(w, " (%s, %s)", oldEnv.Date, oldEnv.GoVersion)
	}
	fmt.Fprintf(w, ": medians before and after, the change, and the p-value of a Mann-Whitney U test\n")
	fmt.Fprintf(w, "over the runs; \"~\" where p > %.2f (the runs do not tell them apart).\n", alpha)
	rows := [][]string{{"test", "old", "new", "change", "p", "ratio old -> new", "baseline"}}
	var missing []string
	for _, s := range sums {
		o, ok := byName[fullName(s.Case)]
		if !ok || o.Status != statusOK || s.Status != statusOK || metricOf(o.Case) != metricOf(s.Case) || o.Case.Unit != s.Case.Unit {
			missing = append(missing, fullName(s.Case))
			continue
		}
		metric := metricOf(s.Case)
		p := mannWhitneyP(runValues(o), runValues(s))
		change := "~"
		if p <= alpha && o.Median > 0 {
			change = fmt.Sprintf("%+.1f%%", 100*(s.Median-o.Median)/o.Median)
		}
		ratio := "-"
		if s.Case.Baseline != "" {
			ratio = fmtOptRatio(metric, o.VsBaseline) + " -> " + fmtOptRatio(metric, s.VsBaseline)
		}
		rows = append(rows, []string{
			fullName(s.Case),
			fmtValue(metric, o.Median) + "/" + s.Case.Unit,
			fmtValue(metric, s.Median) + "/" + s.Case.Unit,
			change,
			fmt.Sprintf("%.3f", p),
			ratio,
			orDash(s.Case.Baseline),
		})
	}
	writeAligned(w, "", rows)
	if len(missing) > 0 {
		fmt.Fprintf(w, "Not in both runs (or failed, or measured differently): %d cases", len(missing))
		if len(missing) <= 10 {
			fmt.Fprintf(w, ": %v", missing)
		}
		fmt.Fprintln(w)
	}
}

// fmtOptRatio formats a ratio that may be missing.
func fmtOptRatio(metric string, r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmtRatioOf(metric, *r)
}

// runValues returns the per-run figures of s.
func runValues(s caseSummary) []float64 {
	vs := make([]float64, len(s.Runs))
	for i, r := range s.Runs {
		vs[i] = r.Ns
	}
	return vs
}

// mannWhitneyP returns the two-sided p-value of the Mann-Whitney U test of
// x against y: exact when there are no ties and the samples are small,
// else the normal approximation with tie correction. It is 1 when either
// sample is empty.
func mannWhitneyP(x, y []float64) float64 {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type obs struct {
		v    float64
		from int
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, 0})
	}
	for _, v := range y {
		all = append(all, obs{v, 1})
	}
	slices.SortFunc(all, func(a, b obs) int { return cmpFloat(a.v, b.v) })
	// Midranks, and the tie correction term sum(t^3 - t).
	rankSumX, tieTerm := 0.0, 0.0
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].from == 0 {
				rankSumX += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j
	}
	u := rankSumX - float64(n1*(n1+1))/2 // U of x: pairs (x, y) with x > y
	if !ties && n1*n2 <= 400 {
		return exactMannWhitneyP(n1, n2, u)
	}
	nn := float64(n1 + n2)
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * ((nn + 1) - tieTerm/(nn*(nn-1))))
	if sd == 0 {
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / sd // continuity correction
	if z < 0 {
		z = 0
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// exactMannWhitneyP is the exact two-sided p-value of U = u for samples of
// n1 and n2 distinct values: the share of the C(n1+n2, n1) equally likely
// rank assignments whose U is at least as far from the mean.
func exactMannWhitneyP(n1, n2 int, u float64) float64 {
	maxU := n1 * n2
	// count[i][j][k]: assignments of i x-values and j y-values with U = k,
	// built from the largest value down: it is an x (adds j to U) or a y.
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // no x-values: U = 0, one way
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := 0; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// The largest of i+j values is an x: it beats the j y-values.
				if k >= j {
					cur[j][k] += prev[j][k-j]
				}
				// Or it is a y: U unchanged.
				if j > 0 {
					cur[j][k] += cur[j-1][k]
				}
			}
		}
		prev = cur
	}
	counts := prev[n2]
	total := 0.0
	for _, c := range counts {
		total += c
	}
	mean := float64(maxU) / 2
	dist := math.Abs(u - mean)
	tail := 0.0
	for k, c := range counts {
		if math.Abs(float64(k)-mean) >= dist-1e-9 {
			tail += c
		}
	}
	return math.Min(1, tail/total)
}
