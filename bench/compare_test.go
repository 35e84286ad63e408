package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompare checks that -compare prints what benchstat prints for the
// two reports written in the Go benchmark format: byte for byte when a
// benchstat binary is installed, else the shape of benchstat's table.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool benchstat in a subprocess")
	}
	old := peerSuite()
	cur := peerSuite()
	// spindle got twice as fast; fast_peer moved within noise.
	for i := range cur[0].Runs {
		cur[0].Runs[i].Ns /= 2
	}
	cur[1].Runs[0].Ns, cur[1].Runs[1].Ns, cur[1].Runs[2].Ns = 205, 215, 190
	for i := range cur {
		cur[i] = summarize(cur[i].Case, cur[i].Runs, statusOK)
	}
	env := environment{GOOS: "linux", GOARCH: "amd64"}
	dir := t.TempDir()
	oldJSON := filepath.Join(dir, "old.json")
	var js bytes.Buffer
	if err := writeJSON(&js, env, old); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(oldJSON, js.Bytes(), 0o644)
	var buf bytes.Buffer
	if err := compare(&buf, config{compare: oldJSON, in: "new.json"}, env, cur); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Logf("\n%s", out)
	tableHas(t, out, "Compared with old.json (benchstat):\n", "old.json", "new.json", "sec/link", "Peers/Chain/spindle", "geomean")

	bin, err := exec.LookPath("benchstat")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "benchstat")
		if _, err := os.Stat(bin); err != nil {
			t.Skip("no benchstat binary to compare with")
		}
	}
	oldFile, newFile := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	_, oldBack, _ := readJSONFile(oldJSON) // what compare read
	os.WriteFile(oldFile, []byte(benchfmtText(env, oldBack)), 0o644)
	os.WriteFile(newFile, []byte(benchfmtText(env, cur)), 0o644)
	want, err := exec.Command(bin, "old.json="+oldFile, "new.json="+newFile).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimPrefix(out, "\nCompared with old.json (benchstat):\n"); got != string(want) {
		t.Errorf("-compare differs from %s:\n%s\nwant:\n%s", bin, got, want)
	}
}
