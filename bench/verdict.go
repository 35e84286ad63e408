package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// groupVerdict is the closing summary's line for one group: the VsBest
// of its spindle cases that have one (Ratios) and their geometric mean, the
// metric of its first spindle case (for wording), how many spindle cases
// ran, the distinct BestOther names in order, and the cases that lose.
type groupVerdict struct {
	Group   string
	Ratios  []float64
	GeoMean float64 // NaN without ratios
	Metric  string
	Spindle int
	Others  []string
	Losses  []loss
}

// loss is a spindle case that did worse than the best other case.
type loss struct {
	Case   string  `json:"case"`  // "Group/Name"
	Other  string  `json:"other"` // the other case's Name (same group)
	Ratio  float64 `json:"ratio"` // VsBest, below 1
	Metric string  `json:"-"`
	// WithinSpread: the two cases' min-max ranges overlap, so the runs do
	// not clearly tell them apart.
	WithinSpread bool `json:"within_spread"`
}

// verdicts returns one groupVerdict per group that has a spindle case, in
// the order of sums. linkBaselines must have run.
func verdicts(sums []caseSummary) []groupVerdict {
	var out []groupVerdict
	index := map[string]int{}
	byName := map[string]*caseSummary{}
	for i := range sums {
		byName[fullName(sums[i].Case)] = &sums[i]
	}
	for _, s := range sums {
		if kindOf(s.Case) != kindSpindle || s.Status != statusOK {
			continue
		}
		i, ok := index[s.Case.Group]
		if !ok {
			i = len(out)
			index[s.Case.Group] = i
			out = append(out, groupVerdict{Group: s.Case.Group, Metric: metricOf(s.Case)})
		}
		v := &out[i]
		v.Spindle++
		if s.VsBest == nil {
			continue
		}
		v.Ratios = append(v.Ratios, *s.VsBest)
		if !slices.Contains(v.Others, s.BestOther) {
			v.Others = append(v.Others, s.BestOther)
		}
		if *s.VsBest < 1 {
			o := byName[s.Case.Group+"/"+s.BestOther]
			v.Losses = append(v.Losses, loss{
				Case:         fullName(s.Case),
				Other:        s.BestOther,
				Ratio:        *s.VsBest,
				Metric:       metricOf(s.Case),
				WithinSpread: o != nil && s.Min <= o.Max && o.Min <= s.Max,
			})
		}
	}
	for i := range out {
		out[i].GeoMean = geoMean(out[i].Ratios)
	}
	return out
}

// geoMean returns the geometric mean of vs, NaN when vs is empty.
func geoMean(vs []float64) float64 {
	sum := 0.0
	for _, v := range vs {
		sum += math.Log(v)
	}
	return math.Exp(sum / float64(len(vs))) // 0/0 when empty
}

// writeSummary prints the closing summary: per group, the geometric mean of
// spindle's ratio to the best non-spindle case, then every case where
// spindle loses.
func writeSummary(w io.Writer, sums []caseSummary) {
	vs := verdicts(sums)
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSummary: spindle against the best non-spindle case.\n")
	fmt.Fprintf(w, "For each spindle case, the lowest median among the go and peer cases compared with the same\n")
	fmt.Fprintf(w, "baseline, over the spindle case's median; per group, the geometric mean of those ratios.\n")
	rows := [][]string{{"group", "spindle vs best other", "cases", "best other"}}
	for _, v := range vs {
		if len(v.Ratios) == 0 {
			rows = append(rows, []string{v.Group, "-", fmt.Sprint(v.Spindle), "none: no go or peer case is compared with these cases"})
			continue
		}
		rows = append(rows, []string{v.Group, fmtRatioOf(v.Metric, v.GeoMean), fmt.Sprint(len(v.Ratios)), strings.Join(v.Others, ", ")})
	}
	writeAligned(w, rows)

	var losses []loss
	for _, v := range vs {
		losses = append(losses, v.Losses...)
	}
	if len(losses) == 0 {
		fmt.Fprintf(w, "\nSpindle loses to no go or peer case in this run.\n")
		return
	}
	fmt.Fprintf(w, "\nWhere spindle loses (it does worse than the best go or peer case beside it):\n")
	rows = rows[:0]
	for _, l := range losses {
		what := fmtRatioOf(l.Metric, l.Ratio) + " than " + l.Other
		if l.WithinSpread {
			what += " (within the runs' spread)"
		}
		rows = append(rows, []string{l.Case, what})
	}
	writeAligned(w, rows)
}

// writeAligned prints rows indented by two spaces, in left-aligned columns
// two spaces apart.
func writeAligned(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	tw.Flush()
}
