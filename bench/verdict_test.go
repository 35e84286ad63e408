package main

import (
	"bytes"
	"math"
	"testing"
	"time"
)

// TestKindOf checks the kinds the names imply and an explicit Kind.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		c    benchCase
		want string
	}{
		{benchCase{Name: "depth=8/goroutines"}, kindGo},
		{benchCase{Name: "go_chan"}, kindGo},
		{benchCase{Group: "Alloc", Name: "sync_pool"}, kindGo},
		{benchCase{Name: "n=10/poll_all"}, kindVariant},
		{benchCase{Name: "addcleanup_raw"}, kindVariant},
		{benchCase{Name: "n=10/spindle"}, kindSpindle},
		{benchCase{Name: "none"}, kindSpindle},
		{benchCase{Name: "goja_nodejs", Kind: kindPeer}, kindPeer},
		{benchCase{Name: "go_chan", Kind: kindSpindle}, kindSpindle},
	} {
		if got := kindOf(tc.c); got != tc.want {
			t.Errorf("kindOf(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
	if metricOf(benchCase{}) != "ns" || metricOf(benchCase{Metric: "B"}) != "B" {
		t.Errorf("metricOf defaults wrong")
	}
}

// peerSuite is a suite with a peer group: a go baseline, a faster peer, a
// spindle case between them, a spindle case that is best, and a variant.
func peerSuite() []caseSummary {
	runs := func(ns ...float64) []runFigures {
		var rs []runFigures
		for _, v := range ns {
			rs = append(rs, runFigures{N: 100, Ns: v})
		}
		return rs
	}
	mk := func(name, base, kind string, ns ...float64) caseSummary {
		return summarize(benchCase{Group: "Peers/Chain", Name: name, Unit: "link", Baseline: base, Kind: kind}, runs(ns...), statusOK)
	}
	sums := []caseSummary{
		mk("spindle", "goroutines", kindSpindle, 300, 310, 320),
		mk("fast_peer", "goroutines", kindPeer, 200, 210, 220),
		mk("slow_peer", "goroutines", kindPeer, 900, 910, 920),
		mk("strawman", "goroutines", kindVariant, 10, 10, 10),
		mk("goroutines", "", kindGo, 600, 610, 620),
		summarize(benchCase{Group: "Peers/Memory", Name: "spindle", Unit: "waiter", Metric: "B", Baseline: "goroutines", Kind: kindSpindle}, runs(100, 100, 100), statusOK),
		summarize(benchCase{Group: "Peers/Memory", Name: "goroutines", Unit: "waiter", Metric: "B", Kind: kindGo}, runs(4000, 4100, 4200), statusOK),
	}
	linkBaselines(sums)
	return sums
}

// TestVerdicts checks the best-other links, the geometric means and the losses.
func TestVerdicts(t *testing.T) {
	sums := peerSuite()
	sp := sums[0]
	if sp.BestOther != "fast_peer" || sp.VsBest == nil || math.Abs(*sp.VsBest-210.0/310) > 1e-12 {
		t.Errorf("spindle: best other %q vs %v, want fast_peer 210/310 (the variant does not count)", sp.BestOther, sp.VsBest)
	}
	if sums[1].BestOther != "" || sums[1].VsBest != nil {
		t.Errorf("a peer got a best other: %+v", sums[1])
	}
	vs := verdicts(sums)
	if len(vs) != 2 {
		t.Fatalf("%d verdicts, want 2: %+v", len(vs), vs)
	}
	chain, mem := vs[0], vs[1]
	if chain.Group != "Peers/Chain" || math.Abs(chain.GeoMean-210.0/310) > 1e-12 || len(chain.Losses) != 1 {
		t.Errorf("chain verdict %+v", chain)
	}
	if l := chain.Losses[0]; l.Case != "Peers/Chain/spindle" || l.Other != "fast_peer" || l.WithinSpread {
		t.Errorf("chain loss %+v", l)
	}
	if math.Abs(mem.GeoMean-41) > 1e-9 || len(mem.Losses) != 0 || mem.Metric != "B" {
		t.Errorf("memory verdict %+v", mem)
	}
	if g := geoMean([]float64{2, 8}); math.Abs(g-4) > 1e-12 {
		t.Errorf("geoMean(2, 8) = %v", g)
	}

	var buf bytes.Buffer
	writeTable(&buf, environment{Runs: 3, PerRun: time.Second, Notes: map[string]string{"Peers/Chain": "what it leaves out"}}, sums)
	out := buf.String()
	t.Logf("\n%s", out)
	tableHas(t, out,
		"\nPeers/Chain: ns/link (median mad min max), allocs/link, tasks/link\n(what it leaves out)\ntest",
		"\nPeers/Memory: B/waiter (median mad min max)",
		"  100.0B   0.0B    100.0B   100.0B",
		"spindle  goroutines  41.0x smaller\n",
		"  Peers/Chain   1.5x slower            1      fast_peer\n",
		"  Peers/Memory  41.0x smaller          1      goroutines\n",
		"  Peers/Chain/spindle  1.5x slower than fast_peer\n",
	)
}

// TestJSONRoundTrip checks that -in reads back what -json wrote.
func TestJSONRoundTrip(t *testing.T) {
	env := environment{GoVersion: "go1.26", Runs: 3, PerRun: time.Second, Date: "2026-11-30T00:00:00Z",
		Notes: map[string]string{"Peers/Chain": "note"}, Counters: "refused"}
	sums := peerSuite()
	var buf bytes.Buffer
	if err := writeJSON(&buf, env, sums); err != nil {
		t.Fatal(err)
	}
	env2, sums2, err := readJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if env2.Date != env.Date || env2.Notes["Peers/Chain"] != "note" || env2.Counters != "refused" || env2.PerRun != time.Second {
		t.Errorf("environment read back %+v", env2)
	}
	if len(sums2) != len(sums) {
		t.Fatalf("%d cases read back, want %d", len(sums2), len(sums))
	}
	for i := range sums {
		a, b := sums[i], sums2[i]
		if fullName(a.Case) != fullName(b.Case) || kindOf(a.Case) != kindOf(b.Case) || metricOf(a.Case) != metricOf(b.Case) ||
			a.Median != b.Median || a.BestOther != b.BestOther || (a.VsBaseline == nil) != (b.VsBaseline == nil) {
			t.Errorf("case %d: wrote %+v, read %+v", i, a, b)
		}
	}
}
