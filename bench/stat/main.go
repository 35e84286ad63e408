// Command stat reads the output of `go test -bench` (the Go benchmark
// format, parsed by golang.org/x/perf/benchfmt) on its standard input and
// writes one JSON object per result line to its standard output:
//
//	{"name":"Group/Name","iters":1000,"values":{"ns/op":12.5,"allocs/op":0}}
//
// name is the benchmark's full name without "Benchmark" and the
// -GOMAXPROCS suffix; values are keyed by the units as go test printed
// them. The runner in package bench (go run ./bench -peers) reads the
// peers' results this way, and runs this module's benchstat tool
// (go tool benchstat, pinned by go.mod) for -compare: this module keeps
// golang.org/x/perf out of the library's go.mod.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// result is one output object.
type result struct {
	Name   string             `json:"name"`
	Iters  int                `json:"iters"`
	Values map[string]float64 `json:"values"`
}

func main() {
	if err := convert(); err != nil {
		fmt.Fprintln(os.Stderr, "stat:", err)
		os.Exit(1)
	}
}

// convert copies the results of standard input to standard output.
func convert() error {
	enc := json.NewEncoder(os.Stdout)
	r := benchfmt.NewReader(os.Stdin, "stdin")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // configuration lines, unit metadata, syntax errors of other lines
		}
		base, parts := res.Name.Parts()
		name := string(base)
		for _, p := range parts {
			if !strings.HasPrefix(string(p), "-") { // the -GOMAXPROCS suffix
				name += string(p)
			}
		}
		out := result{Name: name, Iters: res.Iters, Values: map[string]float64{}}
		for _, v := range res.Values {
			if v.OrigUnit != "" {
				out.Values[v.OrigUnit] = v.OrigValue
			} else {
				out.Values[v.Unit] = v.Value
			}
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return r.Err()
}
