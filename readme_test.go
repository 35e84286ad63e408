package spindle_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's quick start is Example's body as a program: the two must not
// drift apart, so that the program a newcomer pastes is the one go test runs.
func TestReadmeQuickStartIsExample(t *testing.T) {
	readme := read(t, "README.md")
	start := strings.Index(readme, "## Quick start")
	if start < 0 {
		t.Fatal("README.md has no Quick start section")
	}
	block := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(readme[start:])
	if block == nil {
		t.Fatal("the Quick start section has no go code block")
	}
	prog := block[1]
	if !strings.HasPrefix(prog, "package main\n") {
		t.Fatal("the quick start is not a complete program (package main)")
	}
	if got, want := body(t, prog, "func main() {"), body(t, read(t, "example_test.go"), "func Example() {"); got != want {
		t.Errorf("README main body differs from Example body\nREADME:\n%s\nExample:\n%s", got, want)
	}
}

// body returns the lines of the function that opens with the line open, up
// to its closing brace, without // Output lines.
func body(t *testing.T, src, open string) string {
	t.Helper()
	i := strings.Index(src, open+"\n")
	if i < 0 {
		t.Fatalf("no %q", open)
	}
	rest := src[i+len(open)+1:]
	j := strings.Index(rest, "\n}\n")
	if j < 0 {
		t.Fatalf("%q is not closed", open)
	}
	var lines []string
	for _, l := range strings.Split(rest[:j], "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "// Output:") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
