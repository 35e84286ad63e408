package netio

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The backend contract's two sides (backend.go): a backend's file (by
// prefix, doc.go's file map) reaches the shared code only through the
// contract's files, and a shared file reaches a backend only through
// them too.

// backendPrefixes names the backends' files.
var backendPrefixes = []string{"epoll_", "uring_", "portable_", "sim_", "kernel_"}

// contractFiles are the contract: the door both ways.
var contractFiles = map[string]bool{"backend.go": true, "backend_conn.go": true}

// sharedTypes are the shared names a backend may use besides the
// contract's: the types the contract speaks of (their exported methods
// too: the API anyone may use).
var sharedTypes = map[string]bool{"Conn": true, "Listener": true, "reactor": true, "listenConfig": true, "fileOut": true}

func isBackendFile(name string) bool {
	for _, p := range backendPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// mayCross reports whether a backend may use obj, defined in a shared
// file: a type the contract names or an exported method of one, or an
// exported error value or constant.
func mayCross(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.TypeName:
		return sharedTypes[o.Name()]
	case *types.Func:
		recv := o.Signature().Recv()
		if recv == nil || !o.Exported() {
			return false
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := t.(*types.Named)
		return ok && sharedTypes[n.Obj().Name()]
	case *types.Const:
		return o.Exported() && o.Parent() == o.Pkg().Scope()
	case *types.Var:
		return o.Exported() && o.Parent() == o.Pkg().Scope() && strings.HasPrefix(o.Name(), "Err")
	}
	return false
}

// contractBreaks type-checks the package's files of this build and
// returns a line for every use that goes around the contract.
func contractBreaks(t *testing.T, tags []string) []string {
	ctx := build.Default
	ctx.BuildTags = tags
	bp, err := ctx.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range bp.GoFiles {
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check(bp.ImportPath, fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		at := fset.Position(id.Pos())
		from, to := filepath.Base(at.Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to || contractFiles[from] || contractFiles[to] {
			continue
		}
		var why string
		switch fb, tb := isBackendFile(from), isBackendFile(to); {
		case fb && !tb && !mayCross(obj):
			why = "backend file uses shared"
		case !fb && tb:
			why = "shared file uses backend"
		default:
			continue
		}
		k := fmt.Sprintf("%s: %s %s, defined in %s", from, why, id.Name, to)
		if !seen[k] {
			seen[k] = true
			out = append(out, fmt.Sprintf("%s (first at line %d)", k, at.Line))
		}
	}
	sort.Strings(out)
	return out
}

func TestBackendContract(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the package from source: a few seconds")
	}
	var tags []string
	if hostDefault == BackendPortable {
		tags = []string{"purego"}
	}
	for _, b := range contractBreaks(t, tags) {
		t.Errorf("around the backend contract (backend.go, backend_conn.go): %s", b)
	}
}
