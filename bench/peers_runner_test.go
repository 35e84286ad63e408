package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFiguresOfOtherMetrics checks the figures of cases ranked by another
// metric than time: bytes, and a missing metric, which fails the case.
func TestFiguresOfOtherMetrics(t *testing.T) {
	r := testing.BenchmarkResult{N: 24051, Extra: map[string]float64{"ns/op": 9578, "allocs/link": 1.031, "ns/link": 298.6}}
	if f := figuresFromResult(r, "link", "ns"); f.N != 24051 || f.Ns != 298.6 || f.Allocs != 1.031 {
		t.Errorf("figures %+v", f)
	}
	r = testing.BenchmarkResult{N: 3, Extra: map[string]float64{"ns/op": 22273399, "B/waiter": 102.5, "allocs/waiter": 0.0163}}
	if f := figuresFromResult(r, "waiter", "B"); f.Ns != 102.5 {
		t.Errorf("bytes figure %+v", f)
	}
	if f := figuresFromResult(r, "waiter", "cpu-ns"); !math.IsNaN(f.Ns) {
		t.Errorf("a missing metric must read NaN: %+v", f)
	} else if s := summarize(benchCase{Unit: "waiter", Metric: "cpu-ns"}, []runFigures{f}, statusOK); s.Status != statusFailed {
		t.Errorf("a run without its metric must fail the case: %+v", s)
	}
}

// fakePeers is a module that speaks the peers' protocol: a case table when
// asked, a case that passes, one that fails, and one that is not selected.
const fakePeers = `package fake

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("SPINDLE_PEERS_CASES") == "json" {
		fmt.Println(` + "`" + `spindle-peers-cases: {"groups":[{"name":"Work","note":"what it leaves out"}],"cases":[` +
	`{"group":"Work","name":"spindle","unit":"job","metric":"ns","baseline":"plain","kind":"spindle"},` +
	`{"group":"Work","name":"plain","unit":"job","metric":"ns","kind":"go"},` +
	`{"group":"Work","name":"broken","unit":"job","metric":"ns","baseline":"plain","kind":"peer"},` +
	`{"group":"Work","name":"other","unit":"job","metric":"ns","kind":"go"}]}` + "`" + `)
	}
	os.Exit(m.Run())
}

func BenchmarkWork(b *testing.B) {
	b.Run("spindle", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(10, "ns/job")
	})
	b.Run("plain", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(20, "ns/job")
	})
	b.Run("broken", func(b *testing.B) { b.Fatal("broken") })
}
`

// TestRunPeers runs a fake peers module through runPeers.
func TestRunPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test in a subprocess")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":       "module fake\n\ngo 1.24\n",
		"fake_test.go": fakePeers,
		"doc.go":       "package fake\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var progress bytes.Buffer
	cfg := config{peersDir: dir, runs: 2, perRun: time.Millisecond}
	sums, notes, err := runPeers(cfg, regexp.MustCompile("spindle|plain|broken"), &progress)
	t.Logf("progress:\n%s", progress.String())
	if err == nil {
		t.Errorf("a failing case did not make runPeers fail")
	}
	if notes["Peers/Work"] != "what it leaves out" {
		t.Errorf("notes %v", notes)
	}
	var got []string
	for _, s := range sums {
		got = append(got, fullName(s.Case)+":"+s.Status)
	}
	if strings.Join(got, " ") != "Peers/Work/spindle:ok Peers/Work/plain:ok Peers/Work/broken:FAILED" {
		t.Fatalf("cases %v", got)
	}
	linkBaselines(sums)
	sp := sums[0]
	if len(sp.Runs) != 2 || sp.Median != 10 || sp.VsBaseline == nil || *sp.VsBaseline != 2 || kindOf(sp.Case) != kindSpindle {
		t.Errorf("spindle: %+v", sp)
	}
	if !strings.Contains(progress.String(), "BenchmarkWork/spindle") {
		t.Errorf("no progress")
	}

	cfg.list = true
	sums, _, err = runPeers(cfg, regexp.MustCompile("."), &progress)
	if err != nil || len(sums) != 4 {
		t.Errorf("list: %v, %d cases", err, len(sums))
	}
	if _, err := nestedDir(filepath.Join(dir, "nope"), "peers"); err == nil {
		t.Errorf("nestedDir accepted a directory without go.mod")
	}
}
