package main

import "testing"

// Case is one leaf benchmark of the bundled suite.
//
// The same table drives both `go test -bench . ./bench` (bench_test.go turns
// each group into a Benchmark function with one sub-benchmark per case) and
// `go run ./bench` (the runner in main.go, which runs every case several
// times through testing.Benchmark and prints medians).
type Case struct {
	// Name is the full sub-benchmark path below the group, for example
	// "depth=32/then_value" in group "Chain".
	Name string
	// Group is the Benchmark function the case belongs to ("Chain" runs as
	// BenchmarkChain).
	Group string
	// Unit is the per-unit denominator the case reports: "link", "op" or
	// "item". The case reports "ns/<unit>" and "allocs/<unit>" (and, where it
	// runs on an executor, "tasks/<unit>") with b.ReportMetric.
	Unit string
	// Baseline names the plain-Go case (same Group, full Name) this case is
	// compared with; empty for the baselines themselves.
	Baseline string
	// Fn runs the case for b.N iterations.
	Fn func(b *testing.B)
}

// cases is the registry every group's file appends to from init.
var cases []Case

func register(cs ...Case) { cases = append(cases, cs...) }
