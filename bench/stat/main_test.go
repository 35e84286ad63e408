package main

import (
	"bytes"
	"os"
	"path/filepath"
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
	rep, err := goTest(dir, []string{"-run", "^$", "-bench", ".", "-count", "2", "-benchtime", "1x"}, &progress)
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
	rep, err = goTest(dir, []string{"-run", "^$"}, &progress)
	if err != nil || rep.Config["table-of-cases"] != `{"a": 1}` || len(rep.Results) != 0 || rep.Error != "" {
		t.Errorf("without results: %+v, %v", rep, err)
	}
}
