package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGoTest runs a module whose benchmarks pass, fail and print a
// configuration line, and checks what goTest reports.
func TestGoTest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fake\n\ngo 1.24\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "fake_test.go"), []byte(`package fake

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("table-of-cases: {\"a\": 1}")
	os.Exit(m.Run())
}

func BenchmarkWork(b *testing.B) {
	b.Run("ok", func(b *testing.B) { b.ReportMetric(3, "ns/job") })
	b.Run("bad", func(b *testing.B) { b.Fatal("broken") })
}
`), 0o644)
	var progress bytes.Buffer
	goTestIn := func(args ...string) *exec.Cmd {
		cmd := exec.Command("go", append([]string{"test"}, args...)...)
		cmd.Dir = dir
		return cmd
	}
	rep, err := goTest(goTestIn("-run", "^$", "-bench", ".", "-count", "2", "-benchtime", "1x"), &progress)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config["table-of-cases"] != `{"a": 1}` || rep.Config["goos"] == "" {
		t.Errorf("config %v", rep.Config)
	}
	if len(rep.Results) != 2 || rep.Results[0].Name != "Work/ok" || rep.Results[0].Iters != 1 || rep.Results[0].Values["ns/job"] != 3 {
		t.Errorf("results %+v", rep.Results)
	}
	if rep.Failed["Work/bad"] != "FAIL" || rep.Error == "" {
		t.Errorf("failed %v, error %q", rep.Failed, rep.Error)
	}
	if !strings.Contains(progress.String(), "BenchmarkWork/ok") || !strings.Contains(progress.String(), "broken") {
		t.Errorf("progress lacks go test's output:\n%s", progress.String())
	}

	// No result at all: the configuration still comes out.
	rep, err = goTest(goTestIn("-run", "^$"), &progress)
	if err != nil || rep.Config["table-of-cases"] != `{"a": 1}` || len(rep.Results) != 0 || rep.Error != "" {
		t.Errorf("without results: %+v, %v", rep, err)
	}
}

// reportOf keeps the selected cases of the table, leaves out the warm-up
// runs, and marks the cases that failed or lack their metric.
func TestReportOf(t *testing.T) {
	run := &goTestRun{
		Config: map[string]string{caseTableKey: `{"groups":[{"name":"Work","note":"a note"}],"cases":[` +
			`{"group":"Work","name":"fast","unit":"job","kind":"spindle","baseline":"slow"},` +
			`{"group":"Work","name":"slow","unit":"job","metric":"ns","kind":"go"},` +
			`{"group":"Work","name":"broken","unit":"job","kind":"peer"},` +
			`{"group":"Work","name":"bytes","unit":"job","metric":"B","kind":"peer"},` +
			`{"group":"Other","name":"x","unit":"op","kind":"go"}]}`},
		Results: []result{
			{"Work/fast", 10, map[string]float64{"ns/job": 99}}, // warm-up
			{"Work/fast", 10, map[string]float64{"ns/job": 5, "allocs/job": 1, "tasks/job": 2}},
			{"Work/slow", 10, map[string]float64{"ns/job": 99}},
			{"Work/slow", 20, map[string]float64{"ns/job": 9}},
			{"Work/bytes", 1, map[string]float64{"ns/job": 1}},
			{"Work/bytes", 1, map[string]float64{"ns/job": 1}}, // no B/job
		},
		Failed: map[string]string{"Work/broken": "FAIL"},
		Error:  "exit status 1",
	}
	rep, err := reportOf(run, regexp.MustCompile("^Peers/Work/"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Notes["Peers/Work"] != "a note" || len(rep.Cases) != 4 {
		t.Fatalf("report %+v", rep)
	}
	fast, slow, broken, bytes := rep.Cases[0], rep.Cases[1], rep.Cases[2], rep.Cases[3]
	if fast.Group != "Peers/Work" || fast.Metric != "ns" || fast.Status != "ok" || len(fast.Runs) != 1 ||
		fast.Runs[0].Ns != 5 || fast.Runs[0].Allocs != 1 || *fast.Runs[0].Tasks != 2 || fast.Baseline != "slow" {
		t.Errorf("fast: %+v", fast)
	}
	if slow.Status != "ok" || len(slow.Runs) != 1 || slow.Runs[0].Iterations != 20 || slow.Runs[0].Tasks != nil {
		t.Errorf("slow: %+v", slow)
	}
	if broken.Status != "FAILED" || len(broken.Runs) != 0 {
		t.Errorf("broken: %+v", broken)
	}
	if bytes.Status != "FAILED" || len(bytes.Runs) != 0 {
		t.Errorf("a case whose runs lack its metric: %+v", bytes)
	}
	if _, err := reportOf(&goTestRun{Error: "exit status 2"}, regexp.MustCompile("."), 0); err == nil {
		t.Error("a run without a case table was accepted")
	}
}
