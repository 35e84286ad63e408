package fileio_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spindle-rt/spindle/fileio"
)

// TestLikeOS checks Stat and Remove against package os on the same kind of
// tree: the same descriptions (name, size, mode, time, the system's
// stat), and the same errors (errno and op) where os fails.
func TestLikeOS(t *testing.T) { onEngines(t, testLikeOS) }

func testLikeOS(t *testing.T, eng fileio.Engine) {
	ex := startedOn(t, eng)
	// tree makes, in dir, a file, an empty directory, a directory with a
	// file in it, a symlink to the file and a setuid file.
	tree := func(t *testing.T) string {
		dir := t.TempDir()
		mk := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		mk(os.WriteFile(filepath.Join(dir, "file"), []byte("12345"), 0o640))
		mk(os.Mkdir(filepath.Join(dir, "empty"), 0o750))
		mk(os.Mkdir(filepath.Join(dir, "full"), 0o755))
		mk(os.WriteFile(filepath.Join(dir, "full", "x"), nil, 0o600))
		mk(os.Symlink("file", filepath.Join(dir, "link")))
		mk(os.WriteFile(filepath.Join(dir, "suid"), nil, 0o644))
		mk(os.Chmod(filepath.Join(dir, "suid"), 0o4755))
		return dir
	}
	names := []string{"file", "empty", "full", "link", "suid", "none", "file/below", "none/below", "."}
	t.Run("Stat", func(t *testing.T) {
		dir := tree(t)
		for _, n := range names {
			p := filepath.Join(dir, n)
			want, werr := os.Stat(p)
			got, gerr := await(t, fileio.Stat(ex, p))
			sameErr(t, "Stat "+n, gerr, werr)
			if werr != nil {
				continue
			}
			if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() ||
				!got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() || !reflect.DeepEqual(got.Sys(), want.Sys()) {
				t.Errorf("Stat %s: %s %d %v %v %v, os: %s %d %v %v %v", n,
					got.Name(), got.Size(), got.Mode(), got.ModTime(), got.IsDir(),
					want.Name(), want.Size(), want.Mode(), want.ModTime(), want.IsDir())
			}
		}
	})
	t.Run("Remove", func(t *testing.T) {
		ours, theirs := tree(t), tree(t)
		for _, n := range names[:len(names)-1] {
			werr := os.Remove(filepath.Join(theirs, n))
			_, gerr := await(t, fileio.Remove(ex, filepath.Join(ours, n)))
			sameErr(t, "Remove "+n, gerr, werr)
			_, gone := os.Lstat(filepath.Join(ours, n))
			_, wgone := os.Lstat(filepath.Join(theirs, n))
			if (gone == nil) != (wgone == nil) {
				t.Errorf("Remove %s: left %v, os left %v", n, gone == nil, wgone == nil)
			}
		}
	})
}

// sameErr checks that got is nil where want is, and otherwise an
// *fs.PathError of the same op and errno.
func sameErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Errorf("%s: %v, os: %v", what, got, want)
		return
	}
	if want == nil {
		return
	}
	var g, w *fs.PathError
	if !errors.As(got, &g) || !errors.As(want, &w) || g.Op != w.Op || !errors.Is(g.Err, w.Err) {
		t.Errorf("%s: %v, os: %v", what, got, want)
	}
}
