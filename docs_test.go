package spindle_test

import (
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
