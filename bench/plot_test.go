package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlots checks that every group gets a well-formed SVG with its cases,
// spindle's in the accent colour.
func TestPlots(t *testing.T) {
	dir := t.TempDir()
	sums := append(fakeSuite(), peerSuite()...)
	paths, err := writePlots(dir, environment{GoVersion: "go1.26", Runs: 3, PerRun: time.Second,
		Notes: map[string]string{"Peers/Chain": "a note long enough to be wrapped " + strings.Repeat("over several lines ", 12)}}, sums)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	if got := strings.Join(names, " "); got != "chain.svg post.svg peers-chain.svg peers-memory.svg" {
		t.Errorf("charts %s", got)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Errorf("%s: not well-formed: %v", p, err)
				break
			}
		}
		s := string(data)
		if !strings.HasPrefix(s, "<svg ") || !strings.Contains(s, "min-max of the runs (whisker)") {
			t.Errorf("%s: no bar panel", p)
		}
		if strings.Contains(s, "depth=8/then_value") && !strings.Contains(s, `fill="`+kindColors[kindSpindle]+`"`) {
			t.Errorf("%s: spindle not highlighted", p)
		}
	}
	mem, _ := os.ReadFile(filepath.Join(dir, "peers-memory.svg"))
	if !strings.Contains(string(mem), "B/waiter: bytes per waiter") || !strings.Contains(string(mem), "41.0x smaller") {
		t.Errorf("memory chart lacks its metric or ratio")
	}
}

// TestScales checks the axes.
func TestScales(t *testing.T) {
	sc := valueScale("ns", 40, 120_000, 0, 100)
	if !sc.log || sc.lo != 10 || sc.hi != 1e6 || sc.x(10) != 0 || sc.x(1e6) != 100 {
		t.Errorf("log scale %+v", sc)
	}
	sc = valueScale("ns", 40, 900, 0, 100)
	if sc.log || sc.lo != 0 || sc.hi != 1000 || len(sc.ticks) != 6 || sc.tickLabels[1] != "200ns" {
		t.Errorf("linear scale %+v", sc)
	}
	sc = valueScale("B", 100, 4200, 0, 100)
	if !sc.log || sc.lo != 64 || sc.hi != 16384 || sc.tickLabels[2] != "1KiB" {
		t.Errorf("bytes scale %+v", sc)
	}
	sc = ratioScale([]float64{41, 1 / 1.4}, 0, 100)
	if sc.lo != 1.0/50 || sc.hi != 50 || sc.x(1) != 50 {
		t.Errorf("ratio scale %+v", sc)
	}
	if got := plotFile("Peers/Chain"); got != "peers-chain.svg" {
		t.Errorf("plotFile = %q", got)
	}
}
