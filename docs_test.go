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
	"strings"
	"testing"
)

// The public packages (every package directory of this module outside
// internal/ that is not a command) are each named in the three places a
// newcomer looks: the root package's doc (doc.go), the README's package
// table and the layering diagram of docs/architecture.md. A package added
// without them fails here; it is found by walking the tree, so the list is
// never written down twice.
func TestDocsNameEveryPackage(t *testing.T) {
	pkgs := publicPackages(t)
	if !slices.Contains(pkgs, "executor") || !slices.Contains(pkgs, "shard") {
		t.Fatalf("the walk found %v: not this module's tree", pkgs)
	}
	for _, m := range undocumented(pkgs, read(t, "doc.go"), read(t, "README.md"), read(t, "docs/architecture.md")) {
		t.Error(m)
	}
}

// The check itself reports a package left out of any of the three.
func TestUndocumentedFindsOmissions(t *testing.T) {
	doc := "// - [github.com/spindle-rt/spindle/future]: ...\n// - [github.com/spindle-rt/spindle/shard]: ...\n"
	readme := "## Packages\n\n| package | what |\n|---|---|\n| `future` | futures |\n| `shard` | shards |\n\n## Next\n| `merge` | not in the table |\n"
	arch := "# x\n\n```\nshard/  one loop per core\nfuture/  futures\n```\n\n```\nmerge/ a later block\n```\n"
	if got := undocumented([]string{"future", "shard"}, doc, readme, arch); len(got) != 0 {
		t.Errorf("complete docs reported: %v", got)
	}
	got := undocumented([]string{"future", "shard", "merge"}, doc, readme, arch)
	if len(got) != 3 || !strings.Contains(strings.Join(got, "\n"), "merge") {
		t.Errorf("merge missing from all three: got %q", got)
	}
	got = undocumented([]string{"shard"}, doc, strings.Replace(readme, "| `shard` | shards |\n", "", 1), arch)
	if len(got) != 1 || !strings.Contains(got[0], "README") {
		t.Errorf("shard missing from the README: got %q", got)
	}
}

// publicPackages walks the module for directories holding a non-main
// package, leaving out internal/, testdata, hidden directories and nested
// modules (their own go.mod).
func publicPackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == "." {
			return err
		}
		name := d.Name()
		if name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
			return filepath.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
			if err != nil {
				return err
			}
			if file.Name.Name != "main" {
				pkgs = append(pkgs, filepath.ToSlash(path))
			}
			break
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// undocumented returns a message for every package of pkgs that the root
// doc, the README's package table or the architecture diagram (the first
// code block of docs/architecture.md) does not name.
func undocumented(pkgs []string, doc, readme, arch string) []string {
	table := readme
	if i := strings.Index(table, "## Packages"); i >= 0 {
		table = table[i:]
		if j := strings.Index(table[3:], "\n## "); j >= 0 {
			table = table[:j+3]
		}
	}
	diagram := regexp.MustCompile("(?s)```\n(.*?)```").FindStringSubmatch(arch)
	var tokens []string
	if diagram != nil {
		tokens = strings.Fields(diagram[1])
	}
	var out []string
	for _, p := range pkgs {
		if !strings.Contains(doc, "[github.com/spindle-rt/spindle/"+p+"]") {
			out = append(out, "doc.go: the package list does not link package "+p)
		}
		if !strings.Contains(table, "| `"+p+"` |") {
			out = append(out, "README.md: the Packages table has no row for "+p)
		}
		if !slices.Contains(tokens, p+"/") {
			out = append(out, "docs/architecture.md: the layering diagram does not show "+p+"/")
		}
	}
	return out
}

// Every document the project cites exists in it: each relative link of a
// Markdown file resolves (code spans and blocks aside), and each
// docs/NAME.md, or design document at the root, that a Go file or a note
// names is there: a reader must be able to follow a reference to the
// design or to a note.
func TestDocsReferencesResolve(t *testing.T) {
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
	link := regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
	cited := regexp.MustCompile(`\bdocs/[a-z_-]+\.md\b|\bDESIGN\.md\b`)
	var checked int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		md, gofile := strings.HasSuffix(path, ".md"), strings.HasSuffix(path, ".go")
		if (!md && !gofile) || path == "docs_test.go" {
			return nil
		}
		text := read(t, path)
		if md {
			for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(text, ""), -1) {
				if target := m[1]; !strings.Contains(target, "://") {
					checked++
					if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
						t.Errorf("%s links to %s, which does not exist", path, target)
					}
				}
			}
		}
		for _, name := range cited.FindAllString(text, -1) {
			checked++
			if _, err := os.Stat(name); err != nil {
				t.Errorf("%s cites %s, which is not in the repository", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d references: the walk missed the tree", checked)
	}
}

// docs/simulation.md names every method of netio's backend contract in a
// table whose header says which interface of which file it lists ("methods
// of `backend` in `netio/backend.go`"): a method added, renamed or removed
// there without the table fails here.
func TestSimulationNamesTheBackendContract(t *testing.T) {
	doc := read(t, "docs/simulation.md")
	iface, file, listed := contractTable(doc)
	if iface == "" {
		t.Fatal("docs/simulation.md has no table headed \"methods of `IFACE` in `FILE.go`\"")
	}
	methods, err := interfaceMethods(filepath.Dir(file), iface)
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) < 10 {
		t.Fatalf("found only %d methods of %s in %s: %v", len(methods), iface, filepath.Dir(file), methods)
	}
	for _, m := range contractDrift(iface, listed, methods) {
		t.Error("docs/simulation.md: " + m)
	}
}

// The check itself reports methods missing from the table and names the
// contract does not have.
func TestContractDriftFindsDifferences(t *testing.T) {
	doc := "| serves | methods of `be` in `x/be.go` |\n|---|---|\n| loop | `init`, `shut` |\n| conn | `read` |\n\nafter\n"
	iface, file, listed := contractTable(doc)
	if iface != "be" || file != "x/be.go" || !slices.Equal(listed, []string{"init", "shut", "read"}) {
		t.Fatalf("contractTable = %q, %q, %q", iface, file, listed)
	}
	if got := contractDrift(iface, listed, []string{"init", "read", "shut"}); len(got) != 0 {
		t.Errorf("a true table reported: %q", got)
	}
	got := strings.Join(contractDrift(iface, listed, []string{"init", "read", "write"}), "\n")
	if !strings.Contains(got, "be has write, which the table does not list") || !strings.Contains(got, "the table lists shut, which be does not have") {
		t.Errorf("drift not reported: %q", got)
	}
}

// contractTable returns the interface and the file that the header of the
// contract's table names, and the methods its rows list (in code spans,
// the first column aside).
func contractTable(doc string) (iface, file string, methods []string) {
	lines := strings.Split(doc, "\n")
	header := regexp.MustCompile("methods of `([A-Za-z_][A-Za-z0-9_]*)` in `([^`]+\\.go)`")
	name := regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*)`")
	for i, line := range lines {
		m := header.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, row := range lines[min(i+2, len(lines)):] {
			if !strings.HasPrefix(row, "|") {
				break
			}
			cells := tableCells(row)
			for _, c := range cells[1:] {
				for _, n := range name.FindAllStringSubmatch(c, -1) {
					methods = append(methods, n[1])
				}
			}
		}
		return m[1], m[2], methods
	}
	return "", "", nil
}

// interfaceMethods returns the methods of the interface type named iface
// in the package of dir (its non-test files), those of the interfaces it
// embeds from the same package included.
func interfaceMethods(dir, iface string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	types := map[string]*ast.InterfaceType{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					types[ts.Name.Name] = it
				}
			}
			return true
		})
	}
	var methods []string
	var collect func(name string) error
	collect = func(name string) error {
		it, ok := types[name]
		if !ok {
			return fmt.Errorf("no interface type %s in %s", name, dir)
		}
		for _, f := range it.Methods.List {
			if len(f.Names) == 0 {
				id, ok := f.Type.(*ast.Ident)
				if !ok {
					return fmt.Errorf("%s embeds %T, which the check cannot follow", name, f.Type)
				}
				if err := collect(id.Name); err != nil {
					return err
				}
				continue
			}
			for _, n := range f.Names {
				methods = append(methods, n.Name)
			}
		}
		return nil
	}
	if err := collect(iface); err != nil {
		return nil, err
	}
	slices.Sort(methods)
	return methods, nil
}

// contractDrift returns a message for every method of the interface the
// table does not list and every name it lists that the interface lacks.
func contractDrift(iface string, listed, methods []string) []string {
	var out []string
	for _, m := range methods {
		if !slices.Contains(listed, m) {
			out = append(out, fmt.Sprintf("%s has %s, which the table does not list", iface, m))
		}
	}
	for _, m := range listed {
		if !slices.Contains(methods, m) {
			out = append(out, fmt.Sprintf("the table lists %s, which %s does not have", m, iface))
		}
	}
	return out
}
