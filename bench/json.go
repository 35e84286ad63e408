package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// jsonReport is the -json output, and what -in and -compare read back.
type jsonReport struct {
	environment
	Cases   []jsonCase    `json:"cases"`
	Summary []jsonVerdict `json:"summary"`
}

// jsonCase is one case in the -json output: the case's fields (benchCase's
// tags name them), then its figures. Per-unit figures are in the case's
// unit; median_ns, mad_ns, min_ns, max_ns and each run's ns are in the
// case's metric (nanoseconds unless metric says "B", bytes); missing
// figures are null.
type jsonCase struct {
	FullName string `json:"name"` // "Group/Name"
	benchCase
	Status     string       `json:"status"` // "ok", "FAILED", "SKIPPED"
	Iterations int          `json:"iterations"`
	MedianNs   *float64     `json:"median_ns"`
	MADNs      *float64     `json:"mad_ns"`
	MinNs      *float64     `json:"min_ns"`
	MaxNs      *float64     `json:"max_ns"`
	Allocs     *float64     `json:"allocs"`
	Tasks      *float64     `json:"tasks"`
	Inst       *float64     `json:"inst"`
	Cycles     *float64     `json:"cycles"`
	VsBaseline *float64     `json:"vs_baseline"`             // baseline's median / median
	BestOther  string       `json:"best_other,omitempty"`    // spindle cases: the best go or peer case beside it
	VsBest     *float64     `json:"vs_best_other,omitempty"` // best_other's median / median
	Runs       []runFigures `json:"runs"`
}

// jsonVerdict is one group of the closing summary.
type jsonVerdict struct {
	Group   string   `json:"group"`
	GeoMean *float64 `json:"geomean_vs_best_other"` // null when no spindle case has a best other
	Cases   int      `json:"cases"`                 // spindle cases with a best other
	Losses  []loss   `json:"losses"`
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
	rep := jsonReport{environment: env, Cases: []jsonCase{}, Summary: []jsonVerdict{}}
	for _, s := range sums {
		c := s.Case
		c.Kind, c.Metric = kindOf(c), metricOf(c)
		jc := jsonCase{FullName: fullName(c), benchCase: c, Status: s.Status, Runs: append([]runFigures{}, s.Runs...)}
		if len(s.Runs) > 0 {
			jc.Iterations = s.N
			jc.MedianNs, jc.MADNs = finite(&s.Median), finite(&s.MAD)
			jc.MinNs, jc.MaxNs = finite(&s.Min), finite(&s.Max)
			jc.Allocs, jc.Tasks = finite(s.Allocs), finite(s.Tasks)
			jc.Inst, jc.Cycles = finite(s.Inst), finite(s.Cycles)
			jc.VsBaseline = finite(s.VsBaseline)
			jc.BestOther, jc.VsBest = s.BestOther, finite(s.VsBest)
		}
		rep.Cases = append(rep.Cases, jc)
	}
	for _, v := range verdicts(sums) {
		rep.Summary = append(rep.Summary, jsonVerdict{v.Group, finite(&v.GeoMean), len(v.Ratios), append([]loss{}, v.Losses...)})
	}
	return rep
}

// writeJSON encodes the report for tools.
func writeJSON(w io.Writer, env environment, sums []caseSummary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReportOf(env, sums))
}

// writeJSONFile writes the JSON report to path, "-" meaning stdout.
func writeJSONFile(path string, env environment, sums []caseSummary) error {
	if path == "-" {
		return writeJSON(os.Stdout, env, sums)
	}
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(writeJSON(f, env, sums), f.Close())
	}
	return err
}

// readJSON reads a -json report back: the environment and the cases,
// summarized again from their runs (so the statistics and ratios are
// recomputed, and reports of older runners, without kind or metric, read
// with the defaults).
func readJSON(r io.Reader) (environment, []caseSummary, error) {
	var rep jsonReport
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return environment{}, nil, err
	}
	var sums []caseSummary
	for _, jc := range rep.Cases {
		status := jc.Status
		if status == "" {
			status = statusOK
		}
		sums = append(sums, summarize(jc.benchCase, jc.Runs, status))
	}
	linkBaselines(sums)
	return rep.environment, sums, nil
}

// readJSONFile reads the -json report at path.
func readJSONFile(path string) (environment, []caseSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return environment{}, nil, err
	}
	defer f.Close()
	env, sums, err := readJSON(f)
	if err != nil {
		err = fmt.Errorf("reading %s: %w", path, err)
	}
	return env, sums, err
}
