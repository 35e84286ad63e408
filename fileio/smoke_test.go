package fileio_test

import (
	"testing"

	"github.com/spindle-rt/spindle/fileio"
)

func TestSmoke(t *testing.T) {
	ex := started(t)
	f, _ := create(t, ex, "a")
	must(t, f.WriteAt([]byte("hello"), 0))
	must(t, f.Append([]byte(" world"), fileio.Durable))
	b := must(t, f.ReadAt(0, 100))
	if string(b) != "hello world" {
		t.Fatalf("%q", b)
	}
	must(t, f.Close())
	t.Logf("%+v", fileio.StatsOf(ex))
}
