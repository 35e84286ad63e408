package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a case leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runGroup runs every registered case of group as a sub-benchmark, in
// registry order, and skips when the group has none yet.
func runGroup(b *testing.B, group string) {
	ran := false
	for _, c := range cases {
		if c.Group != group {
			continue
		}
		ran = true
		b.Run(c.Name, c.Fn)
	}
	if !ran {
		b.Skip("no cases registered yet")
	}
}

// BenchmarkChain runs the Chain cases: chains of continuations, per link.
func BenchmarkChain(b *testing.B) { runGroup(b, "Chain") }

// BenchmarkPost runs the Post cases: scheduling one unit of work, per op.
func BenchmarkPost(b *testing.B) { runGroup(b, "Post") }

// BenchmarkParallel runs the Parallel cases: gathered send+recv, per op.
func BenchmarkParallel(b *testing.B) { runGroup(b, "Parallel") }

// BenchmarkImmediate runs the Immediate cases: send then recv on a
// capacity-1 channel, per op.
func BenchmarkImmediate(b *testing.B) { runGroup(b, "Immediate") }

// BenchmarkChannel runs the Channel cases: writer and reader over a
// rendezvous channel, per op.
func BenchmarkChannel(b *testing.B) { runGroup(b, "Channel") }

// BenchmarkMerge runs the Merge cases: merging N streams, per item.
func BenchmarkMerge(b *testing.B) { runGroup(b, "Merge") }

// BenchmarkHooks runs the Hooks cases: hook and async-local storage
// overhead, per op.
func BenchmarkHooks(b *testing.B) { runGroup(b, "Hooks") }

// BenchmarkAlloc runs the Alloc cases: allocation strategies, per op.
func BenchmarkAlloc(b *testing.B) { runGroup(b, "Alloc") }

// BenchmarkService runs the Service cases: 64 handler goroutines updating
// shared state, per request.
func BenchmarkService(b *testing.B) { runGroup(b, "Service") }

// BenchmarkHTTP runs the HTTP cases: the httpserver example's handlers
// under 64 keep-alive clients, per request.
func BenchmarkHTTP(b *testing.B) { runGroup(b, "HTTP") }

// BenchmarkWeb runs the Web cases: package web's HTTP/1.1 server and
// net/http, per request (keepalive, pipelined) and per idle connection.
func BenchmarkWeb(b *testing.B) { runGroup(b, "Web") }

// BenchmarkGroup runs the Group cases: 1,000 small tasks in a task group, per task.
func BenchmarkGroup(b *testing.B) { runGroup(b, "Group") }

// BenchmarkSemaphore runs the Semaphore cases: 8 workers contending for 2 units, per op.
func BenchmarkSemaphore(b *testing.B) { runGroup(b, "Semaphore") }

// BenchmarkShard runs the Shard cases: more than one loop, per op.
func BenchmarkShard(b *testing.B) { runGroup(b, "Shard") }

// TestRegistry checks the case table: every case belongs to one of the
// groups of groupOrder (each has a Benchmark function: TestGroupOrder), has a unit and a function, has a
// unique Group/Name and a known kind and metric, and names as Baseline a
// registered case of its group, with its unit and metric, that is not
// itself compared with a baseline.
func TestRegistry(t *testing.T) {
	checkRegistry(t, cases)
}

// checkRegistry reports every problem of cs on t.
func checkRegistry(t testing.TB, cs []benchCase) {
	t.Helper()
	seen := map[string]benchCase{}
	for _, c := range cs {
		name := fullName(c)
		if !slices.Contains(groupOrder, c.Group) {
			t.Errorf("%s: group %q is not in groupOrder (main.go): %v", name, c.Group, groupOrder)
		}
		if c.Name == "" {
			t.Errorf("case in group %q has no Name", c.Group)
		}
		if c.Unit == "" {
			t.Errorf("%s: no Unit", name)
		}
		if c.Fn == nil {
			t.Errorf("%s: no Fn", name)
		}
		if _, dup := seen[name]; dup {
			t.Errorf("%s: registered twice", name)
		}
		if k := c.Kind; k != "" && k != kindSpindle && k != kindGo && k != kindPeer && k != kindVariant {
			t.Errorf("%s: unknown kind %q", name, k)
		}
		if m := metricOf(c); m != "ns" && m != "cpu-ns" && m != "B" {
			t.Errorf("%s: unknown metric %q", name, m)
		}
		seen[name] = c
	}
	for _, c := range cs {
		if c.Baseline == "" {
			continue
		}
		base, ok := seen[c.Group+"/"+c.Baseline]
		switch {
		case !ok:
			t.Errorf("%s: baseline %q is not a registered case of group %s", fullName(c), c.Baseline, c.Group)
		case base.Baseline != "":
			t.Errorf("%s: baseline %s itself has a baseline (%q)", fullName(c), fullName(base), base.Baseline)
		case base.Unit != c.Unit:
			t.Errorf("%s: unit %q, but its baseline %s has unit %q", fullName(c), c.Unit, fullName(base), base.Unit)
		case metricOf(base) != metricOf(c):
			t.Errorf("%s: metric %q, but its baseline %s has metric %q", fullName(c), metricOf(c), fullName(base), metricOf(base))
		}
	}
}

// TestGroupOrder keeps the one list of groups (groupOrder, main.go) in
// step with the Benchmark functions of the package's test files: each
// group has a BenchmarkGroup that calls runGroup(b, "Group"), and each such
// function's group is listed.
func TestGroupOrder(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Benchmark") || len(fn.Body.List) != 1 {
				continue
			}
			call, ok := fn.Body.List[0].(*ast.ExprStmt)
			if !ok {
				continue
			}
			if c, ok := call.X.(*ast.CallExpr); ok && len(c.Args) == 2 {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "runGroup" {
					group := strings.TrimPrefix(fn.Name.Name, "Benchmark")
					if lit, ok := c.Args[1].(*ast.BasicLit); !ok || lit.Value != strconv.Quote(group) {
						t.Errorf("%s runs group %s", fn.Name.Name, types.ExprString(c.Args[1]))
					}
					found = append(found, group)
				}
			}
		}
	}
	slices.Sort(found)
	want := slices.Sorted(slices.Values(groupOrder))
	if !slices.Equal(found, want) {
		t.Errorf("Benchmark functions for groups %v; groupOrder (main.go) lists %v", found, want)
	}
}
