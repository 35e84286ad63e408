package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestMannWhitney checks the p-values against hand-computed ones.
func TestMannWhitney(t *testing.T) {
	apart := mannWhitneyP([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if math.Abs(apart-2.0/252) > 1e-12 {
		t.Errorf("separated samples of 5: p = %v, want 2/252", apart)
	}
	if p := mannWhitneyP([]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}); math.Abs(p-apart) > 1e-12 {
		t.Errorf("p is not symmetric: %v vs %v", p, apart)
	}
	// One swap from separated: U = 1 (or 24): P(U <= 1) = 2/252 both sides.
	if p := mannWhitneyP([]float64{1, 2, 3, 4, 6}, []float64{5, 7, 8, 9, 10}); math.Abs(p-4.0/252) > 1e-12 {
		t.Errorf("one swap: p = %v, want 4/252", p)
	}
	if p := mannWhitneyP([]float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}); p != 1 {
		t.Errorf("interleaved samples: p = %v, want 1", p)
	}
	if p := mannWhitneyP([]float64{1, 1, 1}, []float64{1, 1, 1}); p != 1 {
		t.Errorf("identical samples: p = %v, want 1", p)
	}
	if p := mannWhitneyP([]float64{1, 1, 2, 2, 3}, []float64{7, 7, 8, 8, 9}); p > 0.02 {
		t.Errorf("separated samples with ties: p = %v, want small", p)
	}
	if p := mannWhitneyP(nil, []float64{1}); p != 1 {
		t.Errorf("empty sample: p = %v", p)
	}
}

// TestCompare checks the before/after table.
func TestCompare(t *testing.T) {
	old := peerSuite()
	cur := peerSuite()
	// spindle got twice as fast, clearly; fast_peer moved within noise.
	for i := range cur[0].Runs {
		cur[0].Runs[i].Ns /= 2
	}
	cur[1].Runs[0].Ns, cur[1].Runs[1].Ns, cur[1].Runs[2].Ns = 205, 215, 190
	for i := range cur {
		cur[i] = summarize(cur[i].Case, cur[i].Runs, statusOK)
	}
	linkBaselines(cur)
	var buf bytes.Buffer
	writeCompare(&buf, "old.json", environment{Date: "2026-11-29T00:00:00Z", GoVersion: "go1.26"}, old, cur)
	out := buf.String()
	t.Logf("\n%s", out)
	line := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		t.Fatalf("no line for %s", name)
		return ""
	}
	// With 3 runs each, full separation has p = 2/20 = 0.1: not enough.
	if l := strings.Join(strings.Fields(line("Peers/Chain/spindle")), " "); l != "Peers/Chain/spindle 310.00ns/link 155.00ns/link ~ 0.100 2.0x faster -> 3.9x faster goroutines" {
		t.Errorf("spindle line: %q", l)
	}
	if !strings.Contains(out, "Compared with old.json (2026-11-29T00:00:00Z, go1.26)") {
		t.Errorf("no heading")
	}
	// Five runs each tell a halving apart.
	five := func(scale float64) []caseSummary {
		c := Case{Group: "G", Name: "x", Unit: "op"}
		var rs []runFigures
		for _, v := range []float64{100, 101, 102, 103, 104} {
			rs = append(rs, runFigures{N: 1, Ns: v * scale})
		}
		return []caseSummary{summarize(c, rs, statusOK)}
	}
	buf.Reset()
	writeCompare(&buf, "old.json", environment{}, five(1), five(0.5))
	if !strings.Contains(strings.Join(strings.Fields(buf.String()), " "), "G/x 102.00ns/op 51.00ns/op -50.0% 0.008 - -") {
		t.Errorf("five runs:\n%s", buf.String())
	}
}
