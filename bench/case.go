package main

import (
	"cmp"
	"path"
	"slices"
	"testing"
)

// benchCase is one leaf benchmark of the bundled suite.
//
// The same table drives both `go test -bench . ./bench` (bench_test.go turns
// each group into a Benchmark function with one sub-benchmark per case) and
// `go run ./bench` (the runner in main.go, which runs every case several
// times through testing.Benchmark and prints medians).
type benchCase struct {
	// Name is the full sub-benchmark path below the group, for example
	// "depth=32/then_value" in group "Chain".
	Name string `json:"case"`
	// Group is the Benchmark function the case belongs to ("Chain" runs as
	// BenchmarkChain).
	Group string `json:"group"`
	// Unit is the per-unit denominator the case reports "<metric>/<unit>",
	// "allocs/<unit>" and, on an executor, "tasks/<unit>" in: "link", "op",
	// "item" (see meter).
	Unit string `json:"unit"`
	// Baseline names the case (same Group, full Name) this case is compared
	// with, usually the plain-Go way of doing the same job; empty for the
	// baselines themselves.
	Baseline string `json:"baseline,omitempty"`
	// Kind says who does the work: kindSpindle, kindGo, kindPeer or
	// kindVariant; empty: kindOf decides from the name.
	Kind string `json:"kind"`
	// Metric is the figure the case is ranked by: "ns" (wall time, the
	// default when empty), "cpu-ns" (CPU time of the process) or "B" (bytes).
	Metric string `json:"metric"`
	// Fn runs the case for b.N iterations.
	Fn func(b *testing.B) `json:"-"`
}

// cases is the registry every group's file appends to from init.
var cases []benchCase

func register(cs ...benchCase) { cases = append(cases, cs...) }

// Kinds of case. The closing summary compares every spindle case with the
// fastest go or peer case measured beside it; variants are left out of it.
const (
	kindSpindle = "spindle" // spindle does the job
	kindGo      = "go"      // plain Go or golang.org/x: what a user would write without spindle
	kindPeer    = "peer"    // another project (bench/peers)
	kindVariant = "variant" // a design spindle does not use, or a raw runtime cost, shown for scale
)

// goCaseNames are the last path elements of the cases that are plain Go
// (or golang.org/x/sync) ways of doing a job, as docs/design.md lists them:
// a case without a Kind whose name ends in one of them is of kind go.
var goCaseNames = []string{
	"goroutines", "go_chan", "gosched", "reflect_select", "goroutine_fanin",
	"mutex", "chan_actor", "errgroup", "errgroup_limit8", "xsync",
	"counter_mutex", "counter_syncmap",
	"heap", "sync_pool", // Alloc: the Go heap and sync.Pool
}

// variantCaseNames are, likewise, the cases of kind variant: poll_all is the
// O(N) merge that perfect waking replaces; addcleanup_raw is the raw cost of
// runtime.AddCleanup, the floor of destroy tracking.
var variantCaseNames = []string{"poll_all", "addcleanup_raw"}

// kindOf returns c's kind: c.Kind, or else the kind its name implies
// (goCaseNames, variantCaseNames), or else kindSpindle.
func kindOf(c benchCase) string {
	if c.Kind != "" {
		return c.Kind
	}
	leaf := path.Base(c.Name)
	switch {
	case slices.Contains(goCaseNames, leaf):
		return kindGo
	case slices.Contains(variantCaseNames, leaf):
		return kindVariant
	}
	return kindSpindle
}

// metricOf returns the metric c is ranked by: c.Metric or "ns".
func metricOf(c benchCase) string { return cmp.Or(c.Metric, "ns") }
