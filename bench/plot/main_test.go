package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWriteCharts draws a small report: one chart per group, a panel per
// unit, failed cases left out, and an error for a report that is not JSON.
func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "report.json")
	os.WriteFile(in, []byte(`{"go":"go1.26","num_cpu":2,"gomaxprocs":2,"date":"2026-12-01T00:00:00Z","cases":[
{"group":"Net","case":"echo/spindle","unit":"req","metric":"ns","kind":"spindle","baseline":"echo/go_net","status":"ok","median_ns":10,"min_ns":9,"max_ns":12,"vs_baseline":2},
{"group":"Net","case":"echo/go_net","unit":"req","metric":"ns","kind":"go","status":"ok","median_ns":20,"min_ns":19,"max_ns":25},
{"group":"Net","case":"idle/spindle","unit":"conn","metric":"B","kind":"spindle","status":"ok","median_ns":100,"min_ns":100,"max_ns":100},
{"group":"Net","case":"broken","unit":"req","metric":"ns","kind":"peer","status":"FAILED"},
{"group":"Peers/Chain","case":"x","unit":"link","kind":"peer","status":"ok","median_ns":1,"min_ns":1,"max_ns":1}]}`), 0o644)
	n, err := writeCharts(in, filepath.Join(dir, "out"))
	if err != nil || n != 2 {
		t.Fatalf("writeCharts = %d, %v; want 2 charts", n, err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "out", "net.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"echo/spindle vs echo/go_net", "2.00x", "ns/req: median", "B/conn: median", "Net — go1.26, 2 cores"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("net.svg lacks %q", want)
		}
	}
	if strings.Contains(string(svg), "broken") {
		t.Error("a failed case is drawn")
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "peers-chain.svg")); err != nil {
		t.Error(err)
	}
	os.WriteFile(in, []byte("not json"), 0o644)
	if _, err := writeCharts(in, dir); err == nil {
		t.Error("a report that is not JSON was accepted")
	}
}
