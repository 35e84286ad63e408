package peers

import (
	"cmp"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"testing"
)

// Kinds of case, as the runner in ../ names them.
const (
	kindSpindle = "spindle" // this library
	kindGo      = "go"      // plain Go or golang.org/x
	kindPeer    = "peer"    // another project
)

// Case is one leaf benchmark: BenchmarkGroup/Name under go test, and
// "Peers/Group/Name" in the runner's table.
type Case struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	// Unit is the per-unit denominator: the case reports "<metric>/<unit>".
	Unit string `json:"unit"`
	// Metric is what the case is ranked by: "ns" (wall time), "cpu-ns"
	// (CPU time of the whole process) or "B" (bytes). Every case also
	// reports "ns/<unit>" and "allocs/<unit>".
	Metric string `json:"metric"`
	// Baseline names the case (same group) this one is compared with;
	// empty for the baseline itself.
	Baseline string `json:"baseline,omitempty"`
	// Kind is kindSpindle, kindGo or kindPeer.
	Kind string `json:"kind"`
	// Version of the project the case exercises, for the reader.
	Version string `json:"version,omitempty"`

	Fn func(b *testing.B) `json:"-"`
}

// Group describes one Benchmark function.
type Group struct {
	Name string `json:"name"`
	// Note says what the comparison leaves out.
	Note string `json:"note"`
}

var (
	cases  []Case
	groups []Group
)

func register(g Group, cs ...Case) {
	groups = append(groups, g)
	for _, c := range cs {
		c.Group = g.Name
		if c.Metric == "" {
			c.Metric = "ns"
		}
		cases = append(cases, c)
	}
}

// Environment variables the runner (go run ./bench -peers) sets.
const (
	// envList: when "json", TestMain prints the case table as one line,
	// listPrefix followed by JSON, before running anything.
	envList = "SPINDLE_PEERS_CASES"
	// envSelect: a regexp; only the cases whose "Peers/Group/Name" or
	// "BenchmarkGroup/Name" matches it run.
	envSelect = "SPINDLE_PEERS_SELECT"
	// listPrefix starts the line that carries the case table.
	listPrefix = "spindle-peers-cases: "
)

// groupOrder is the order of the Benchmark functions in peers_test.go, the
// order go test runs them in and the runner prints them in.
var groupOrder = []string{"Submit", "Timers", "Fanout", "Chain", "Memory", "Net", "Web"}

// rank orders groups as groupOrder does, unknown groups last.
func rank(group string) int {
	if i := slices.Index(groupOrder, group); i >= 0 {
		return i
	}
	return len(groupOrder)
}

// listing is what the case-table line carries.
type listing struct {
	Groups []Group `json:"groups"`
	Cases  []Case  `json:"cases"`
}

// writeListing writes the case-table line.
func writeListing(w io.Writer) error {
	l := listing{Groups: slices.Clone(groups), Cases: slices.Clone(cases)}
	slices.SortStableFunc(l.Groups, func(a, b Group) int { return cmp.Compare(rank(a.Name), rank(b.Name)) })
	slices.SortStableFunc(l.Cases, func(a, b Case) int { return cmp.Compare(rank(a.Group), rank(b.Group)) })
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, listPrefix+string(b)+"\n")
	return err
}

// selected returns the filter of envSelect, nil when unset.
func selected() (*regexp.Regexp, error) {
	s := os.Getenv(envSelect)
	if s == "" {
		return nil, nil
	}
	return regexp.Compile(s)
}

// runGroup runs the cases of group as sub-benchmarks, in registry order.
func runGroup(b *testing.B, group string) {
	re, err := selected()
	if err != nil {
		b.Fatalf("%s: %v", envSelect, err)
	}
	ran := false
	for _, c := range cases {
		if c.Group != group {
			continue
		}
		if re != nil && !re.MatchString("Peers/"+group+"/"+c.Name) && !re.MatchString("Benchmark"+group+"/"+c.Name) {
			continue
		}
		ran = true
		b.Run(c.Name, c.Fn)
	}
	if !ran {
		b.Skip("no case selected")
	}
}
