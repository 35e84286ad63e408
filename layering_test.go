package spindle_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layering written in docs/architecture.md ("Who imports whom": a table
// of every package of the module, its layer and the packages of the module
// it imports, with the exceptions and their reasons) is the code's, arrow by
// arrow and both ways: an import the table does not name fails, and so does
// an arrow the table names that the code no longer has. The code's arrows
// are read from the source files themselves (every build: all GOOS suffixes
// and build tags), so that the check is the same on every machine.
func TestLayeringIsTheCode(t *testing.T) {
	imports := moduleImports(t)
	for _, p := range []string{"executor", "netio", "internal/loop"} {
		if _, ok := imports[p]; !ok {
			t.Fatalf("the walk found no package %s: not this module's tree (found %d packages)", p, len(imports))
		}
	}
	for _, m := range checkLayering(read(t, "docs/architecture.md"), imports) {
		t.Error(m)
	}
}

// The check itself finds each kind of drift.
func TestCheckLayeringFindsDrift(t *testing.T) {
	doc := "# x\n\n```\nweb/   protocols\nnetio/  sockets\ninternal/loop/ machinery\n```\n\n" +
		"## Who imports whom\n\n" +
		"| layer | package | imports |\n|---|---|---|\n" +
		"| protocols | `web` | `netio`, `internal/loop` |\n" +
		"| I/O | `netio` | `internal/loop` |\n" +
		"| machinery | `internal/loop` | none |\n\n" +
		"Exceptions:\n\n" +
		"- `web` -> `internal/loop`: it needs the loop's frame.\n\n## Next\n"
	good := map[string][]string{
		"web":           {"netio", "internal/loop"},
		"netio":         {"internal/loop"},
		"internal/loop": nil,
	}
	if got := checkLayering(doc, good); len(got) != 0 {
		t.Fatalf("the true layering reported: %q", got)
	}
	cases := []struct {
		name    string
		doc     string
		imports map[string][]string
		want    string
	}{
		{"an import the table does not name", doc,
			map[string][]string{"web": {"netio", "internal/loop"}, "netio": {"internal/loop", "web"}, "internal/loop": nil},
			"netio imports web, which its row does not name"},
		{"an arrow the code no longer has", doc,
			map[string][]string{"web": {"internal/loop"}, "netio": {"internal/loop"}, "internal/loop": nil},
			"web's row names netio, which web no longer imports"},
		{"an arrow up the table", strings.Replace(doc, "| `internal/loop` | none |", "| `internal/loop` | `netio` |", 1),
			map[string][]string{"web": {"netio", "internal/loop"}, "netio": {"internal/loop"}, "internal/loop": {"netio"}},
			"internal/loop -> netio points up the table"},
		{"an internal package used by a protocol without an exception", strings.Replace(doc, "- `web` -> `internal/loop`: it needs the loop's frame.\n", "", 1), good,
			"web -> internal/loop: protocols import nothing under internal/"},
		{"an exception without a reason", strings.Replace(doc, ": it needs the loop's frame.", ":", 1), good,
			"gives no reason"},
		{"an exception whose arrow is gone", doc,
			map[string][]string{"web": {"netio"}, "netio": {"internal/loop"}, "internal/loop": nil},
			"the exception web -> internal/loop names an arrow the code does not have"},
		{"a package without a row", doc,
			map[string][]string{"web": {"netio", "internal/loop"}, "netio": {"internal/loop"}, "internal/loop": nil, "shard": nil},
			"package shard has no row"},
		{"a row for no package", doc,
			map[string][]string{"web": {"netio", "internal/loop"}, "netio": {"internal/loop"}},
			"the row internal/loop names no package"},
		{"an arrow up the diagram", strings.Replace(doc, "web/   protocols\nnetio/  sockets\n", "netio/  sockets\nweb/   protocols\n", 1), good,
			"web -> netio runs up the diagram"},
		{"a layer split in two", strings.Replace(doc, "| machinery | `internal/loop`", "| protocols | `internal/loop`", 1), good,
			"layer protocols appears again"},
		{"no table", "# x\n", good, "no table"},
		{"an exception that breaks no rule", strings.Replace(doc, "Exceptions:\n\n", "Exceptions:\n\n- `netio` -> `internal/loop`: not needed.\n", 1), good,
			"the exception netio -> internal/loop breaks no rule"},
		{"a package with two rows", strings.Replace(doc, "| I/O | `netio` | `internal/loop` |\n", "| I/O | `netio` | `internal/loop` |\n| | `netio` | `internal/loop` |\n", 1), good,
			"netio has two rows"},
		{"an empty imports cell", strings.Replace(doc, "| `internal/loop` | none |", "| `internal/loop` | |", 1), good,
			"the row of internal/loop names no import: write none"},
	}
	for _, c := range cases {
		got := strings.Join(checkLayering(c.doc, c.imports), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: want a message containing %q, got:\n%s", c.name, c.want, got)
		}
	}
}

// docs/design.md's layering (a table of layers, each with its packages,
// "x/..." for x and everything under it) places every package in the layer
// docs/architecture.md's table gives it, so the summary cannot drift from
// the arrows.
func TestDesignLayersAreTheTables(t *testing.T) {
	l, errs := parseLayering(read(t, "docs/architecture.md"))
	if l == nil || len(errs) > 0 {
		t.Fatalf("docs/architecture.md: %q", errs)
	}
	for _, m := range layerDrift(read(t, "docs/design.md"), l.rows) {
		t.Error(m)
	}
}

// The check itself finds a package in another layer, and one not placed.
func TestLayerDriftFindsDifferences(t *testing.T) {
	design := "## Layering\n\n| layer | packages | role |\n|---|---|---|\n" +
		"| programs | `examples/...`, `bench` | x |\n| I/O | `netio` | y |\n\n## Next\n"
	rows := []row{{layer: "programs", pkg: "examples/kv"}, {layer: "programs", pkg: "bench"}, {layer: "I/O", pkg: "netio"}}
	if got := layerDrift(design, rows); len(got) != 0 {
		t.Errorf("a true summary reported: %q", got)
	}
	rows = append(rows, row{layer: "I/O", pkg: "bench/netcase"}, row{layer: "leaves", pkg: "alloc"})
	got := strings.Join(layerDrift(strings.Replace(design, "| I/O | `netio` |", "| leaves | `netio` |", 1), rows), "\n")
	for _, want := range []string{"places netio in layer leaves, architecture.md in I/O", "does not place bench/netcase", "does not place alloc"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// layerDrift returns a message for every package of rows (the module's
// doc aside) that the layering table of design (the first table headed
// | layer | packages | role | under "## Layering") places in another
// layer, or does not place.
func layerDrift(design string, rows []row) []string {
	start := strings.Index(design, "## Layering\n")
	if start < 0 {
		return []string{"docs/design.md has no section \"## Layering\""}
	}
	name := regexp.MustCompile("`([^`]+)`")
	layerOf := map[string]string{} // a package, or a prefix ending in "/"
	for _, line := range strings.Split(design[start:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		cells := tableCells(line)
		if len(cells) != 3 || strings.TrimSpace(cells[0]) == "layer" || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			layerOf[strings.TrimSuffix(m[1], "...")] = strings.TrimSpace(cells[0])
		}
	}
	var out []string
	for _, r := range rows {
		if r.pkg == "." {
			continue
		}
		layer, ok := layerOf[r.pkg]
		if !ok { // the longest "x/..." that holds the package
			for p := r.pkg; !ok && p != ""; {
				layer, ok = layerOf[p+"/"]
				if i := strings.LastIndex(p, "/"); i >= 0 {
					p = p[:i]
				} else {
					p = ""
				}
			}
		}
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("docs/design.md: the layering does not place %s (architecture.md: layer %s)", r.pkg, r.layer))
		case layer != r.layer:
			out = append(out, fmt.Sprintf("docs/design.md places %s in layer %s, architecture.md in %s", r.pkg, layer, r.layer))
		}
	}
	return out
}

// publicAPIOnly are the layers whose packages import nothing under the
// module's internal/ directory (its machinery and its test kits) unless an
// exception says why.
var publicAPIOnly = []string{"programs", "exporters", "protocols"}

// layering is the table of "Who imports whom" and its exceptions.
type layering struct {
	rows       []row
	exceptions map[[2]string]string // arrow -> reason
}

type row struct {
	layer, pkg string
	imports    []string
}

// checkLayering compares the layering written in doc (docs/architecture.md)
// with imports (package -> the packages of the module its non-test files
// import, both relative to the module's root, "." for the root) and returns
// a message for every difference.
func checkLayering(doc string, imports map[string][]string) []string {
	l, out := parseLayering(doc)
	if l == nil {
		return out
	}
	index := map[string]int{}
	layerOf := map[string]string{}
	seenLayers := map[string]bool{}
	for i, r := range l.rows {
		if _, dup := index[r.pkg]; dup {
			out = append(out, fmt.Sprintf("docs/architecture.md: %s has two rows", r.pkg))
		}
		index[r.pkg], layerOf[r.pkg] = i, r.layer
		if i > 0 && l.rows[i-1].layer != r.layer && seenLayers[r.layer] {
			out = append(out, fmt.Sprintf("docs/architecture.md: layer %s appears again at %s: a layer's rows are kept together", r.layer, r.pkg))
		}
		seenLayers[r.layer] = true
		if _, ok := imports[r.pkg]; !ok {
			out = append(out, fmt.Sprintf("docs/architecture.md: the row %s names no package of the module: remove it", r.pkg))
		}
	}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		if _, ok := index[p]; !ok {
			out = append(out, fmt.Sprintf("docs/architecture.md: package %s has no row: add one in its layer, above every package it imports and below every package that imports it", p))
		}
	}

	// Both ways: the code's arrows are the table's.
	for _, r := range l.rows {
		code, ok := imports[r.pkg]
		if !ok {
			continue
		}
		for _, q := range code {
			if !slices.Contains(r.imports, q) {
				out = append(out, fmt.Sprintf("%s imports %s, which its row does not name: add it to the row (docs/architecture.md) if the arrow points down, or remove the import", r.pkg, q))
			}
		}
		for _, q := range r.imports {
			if !slices.Contains(code, q) {
				out = append(out, fmt.Sprintf("docs/architecture.md: %s's row names %s, which %s no longer imports: remove it from the row", r.pkg, q, r.pkg))
			}
		}
	}

	// The rules, each arrow that breaks one named as an exception.
	diagram := diagramLines(doc)
	used := map[[2]string]bool{}
	for _, p := range pkgs {
		i, ok := index[p]
		if !ok {
			continue
		}
		for _, q := range imports[p] {
			j, ok := index[q]
			if !ok {
				continue
			}
			arrow := [2]string{p, q}
			var broken []string
			if j <= i {
				broken = append(broken, fmt.Sprintf("%s -> %s points up the table (%s's row is above %s's)", p, q, q, p))
			}
			if slices.Contains(publicAPIOnly, layerOf[p]) && strings.HasPrefix(q, "internal/") {
				broken = append(broken, fmt.Sprintf("%s -> %s: %s import nothing under internal/", p, q, layerOf[p]))
			}
			if len(broken) == 0 {
				continue
			}
			if _, ok := l.exceptions[arrow]; ok {
				used[arrow] = true
				continue
			}
			for _, b := range broken {
				out = append(out, b+": remove the arrow, or name it under the table's exceptions with its reason")
			}
		}
		// The diagram's lines run down the same way (an exception aside).
		for _, q := range imports[p] {
			lp, okp := placeIn(diagram, p)
			lq, okq := placeIn(diagram, q)
			if okp && okq && lq < lp {
				if _, ok := l.exceptions[[2]string{p, q}]; !ok {
					out = append(out, fmt.Sprintf("docs/architecture.md: %s -> %s runs up the diagram (%s is drawn on line %d, %s on line %d)", p, q, q, lq+1, p, lp+1))
				}
			}
		}
	}
	var arrows [][2]string
	for a := range l.exceptions {
		arrows = append(arrows, a)
	}
	slices.SortFunc(arrows, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, a := range arrows {
		switch {
		case l.exceptions[a] == "":
			out = append(out, fmt.Sprintf("docs/architecture.md: the exception %s -> %s gives no reason", a[0], a[1]))
		case !slices.Contains(imports[a[0]], a[1]):
			out = append(out, fmt.Sprintf("docs/architecture.md: the exception %s -> %s names an arrow the code does not have: remove it", a[0], a[1]))
		case !used[a]:
			out = append(out, fmt.Sprintf("docs/architecture.md: the exception %s -> %s breaks no rule: remove it", a[0], a[1]))
		}
	}
	return out
}

// parseLayering reads the table and the exceptions of the section "Who
// imports whom": the first table whose header is | layer | package |
// imports |, a row per package (an empty layer cell continues the layer
// above; "none" for no import), and the lines "- `a` -> `b`: reason" after
// it, up to the next heading.
func parseLayering(doc string) (*layering, []string) {
	start := strings.Index(doc, "\n## Who imports whom\n")
	if start < 0 {
		return nil, []string{"docs/architecture.md has no section \"## Who imports whom\" and so no table"}
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	lines := strings.Split(section, "\n")
	head := slices.IndexFunc(lines, func(s string) bool {
		return strings.ReplaceAll(s, " ", "") == "|layer|package|imports|"
	})
	if head < 0 || head+1 >= len(lines) {
		return nil, []string{"docs/architecture.md: \"Who imports whom\" has no table | layer | package | imports |"}
	}
	name := regexp.MustCompile("`([^`]+)`")
	l := &layering{exceptions: map[[2]string]string{}}
	var out []string
	layer := ""
	i := head + 2
	for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := tableCells(lines[i])
		if len(cells) != 3 {
			out = append(out, fmt.Sprintf("docs/architecture.md: the row %q has %d cells, not 3", lines[i], len(cells)))
			continue
		}
		if s := strings.TrimSpace(cells[0]); s != "" {
			layer = s
		}
		pkg := name.FindStringSubmatch(cells[1])
		if pkg == nil || layer == "" {
			out = append(out, fmt.Sprintf("docs/architecture.md: the row %q names no package or no layer", lines[i]))
			continue
		}
		r := row{layer: layer, pkg: pkg[1]}
		for _, m := range name.FindAllStringSubmatch(cells[2], -1) {
			r.imports = append(r.imports, m[1])
		}
		if len(r.imports) == 0 && strings.TrimSpace(cells[2]) != "none" {
			out = append(out, fmt.Sprintf("docs/architecture.md: the row of %s names no import: write none", r.pkg))
		}
		l.rows = append(l.rows, r)
	}
	exception := regexp.MustCompile("^- `([^`]+)` -> `([^`]+)`:(.*)$")
	for ; i < len(lines); i++ {
		m := exception.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		reason := strings.TrimSpace(m[3])
		// A reason may go on over the lines that follow, indented.
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") {
			i++
			reason += " " + strings.TrimSpace(lines[i])
		}
		l.exceptions[[2]string{m[1], m[2]}] = strings.TrimSpace(reason)
	}
	return l, out
}

// diagramLines returns the package names drawn in the layering diagram
// (the first code block of doc: tokens ending in "/") and the line each is
// drawn on.
func diagramLines(doc string) map[string]int {
	lines := map[string]int{}
	block := regexp.MustCompile("(?s)```\n(.*?)```").FindStringSubmatch(doc)
	if block == nil {
		return lines
	}
	for n, line := range strings.Split(block[1], "\n") {
		for _, tok := range strings.Fields(line) {
			if strings.HasSuffix(tok, "/") && tok != "/" {
				if _, ok := lines[strings.TrimSuffix(tok, "/")]; !ok {
					lines[strings.TrimSuffix(tok, "/")] = n
				}
			}
		}
	}
	return lines
}

// placeIn returns the line of the diagram on which pkg is drawn: the line
// of the longest name drawn that is pkg or holds it.
func placeIn(diagram map[string]int, pkg string) (int, bool) {
	for p := pkg; ; {
		if n, ok := diagram[p]; ok {
			return n, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return 0, false
		}
		p = p[:i]
	}
}

// moduleImports walks the module (nested modules, testdata and hidden
// directories aside) and returns, for every directory holding Go files
// other than tests, the packages of the module its non-test files import,
// in every build (a file excluded by "//go:build ignore" aside).
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	mod := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindStringSubmatch(read(t, "go.mod"))
	if mod == nil {
		t.Fatal("go.mod names no module")
	}
	prefix := mod[1] + "/"
	imports := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != "." {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		pkg := filepath.ToSlash(path)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly|parser.ParseComments)
			if err != nil {
				return err
			}
			if ignored(file.Comments, file.Package) {
				continue
			}
			if _, ok := imports[pkg]; !ok {
				imports[pkg] = nil
			}
			for _, spec := range file.Imports {
				p, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					return err
				}
				if q, ok := strings.CutPrefix(p, prefix); ok && !slices.Contains(imports[pkg], q) {
					imports[pkg] = append(imports[pkg], q)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}

// ignored reports whether a file's build constraint (before its package
// clause) is "ignore": a file no build compiles.
func ignored(comments []*ast.CommentGroup, pkg token.Pos) bool {
	for _, g := range comments {
		if g.Pos() >= pkg {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(strings.TrimPrefix(c.Text, "//go:build")) == "ignore" && strings.HasPrefix(c.Text, "//go:build") {
				return true
			}
		}
	}
	return false
}

// tableCells returns the cells of a Markdown table row, "| a | | b |"
// giving "a", "" and "b" (spaces kept).
func tableCells(row string) []string {
	return strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(row), "|"), "|"), "|")
}
