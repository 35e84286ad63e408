package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlots runs -plot on the fake suites: every group gets a well-formed
// SVG chart (drawn by bench/plot) that names its cases.
func TestPlots(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go run in a subprocess")
	}
	dir := t.TempDir()
	sums := append(fakeSuite(), peerSuite()...)
	linkBaselines(sums)
	if err := writePlots(dir, environment{GoVersion: "go1.26", Runs: 3, PerRun: time.Second}, sums); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"chain.svg", "peers-chain.svg", "peers-memory.svg", "post.svg"}; !slices.Equal(names, want) {
		t.Errorf("charts %v, want %v", names, want)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("%s: not well-formed: %v", f, err)
				break
			}
		}
		if !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "median, whisker from min to max") {
			t.Errorf("%s: no bar panel", f)
		}
	}
	chain, _ := os.ReadFile(filepath.Join(dir, "chain.svg"))
	tableHas(t, string(chain), "depth=8/then_value", "depth=8/goroutines", "ratio to the baseline", "7.50x")
}
