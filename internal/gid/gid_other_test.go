//go:build (!amd64 && !arm64) || purego

package gid

import "testing"

// TestCurrentIsOwnNumber checks the fast path against the slow one: the
// creator line of the reporter's traceback and the caller's own header
// must give the same number, on the test goroutine and on others.
func TestCurrentIsOwnNumber(t *testing.T) {
	check := func() error {
		got := Current()
		mu.Lock()
		want := own()
		mu.Unlock()
		if got != want || got == 0 {
			t.Errorf("Current() = %d, the goroutine's own header says %d", got, want)
		}
		return nil
	}
	check()
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			check()
		}()
	}
	for range 8 {
		<-done
	}
}

func TestCreator(t *testing.T) {
	cases := []struct {
		name string
		tr   string
		want uintptr
	}{
		{"reporter", "goroutine 9 [running]:\ngithub.com/x/gid.report()\n\t/p/gid_other.go:60 +0x25\ncreated by github.com/x/gid.Current in goroutine 7\n\t/p/gid_other.go:48 +0x3d\n", 7},
		{"ancestors after the creator", "goroutine 9 [running]:\nf()\n\t/p:1\ncreated by g in goroutine 12\n\t/p:2\n[originating from goroutine 3]:\ncreated by h in goroutine 1\n", 12},
		{"no creator", "goroutine 1 [running]:\nmain.main()\n\t/p:1\n", 0},
		{"creator line without a number", "goroutine 9 [running]:\nf()\ncreated by g\n\t/p:2\n", 0},
		{"cut short", "goroutine 9 [running]:\nf()\ncreated by g in gorou", 0},
	}
	for _, c := range cases {
		if got := creator([]byte(c.tr)); got != c.want {
			t.Errorf("%s: creator = %d, want %d", c.name, got, c.want)
		}
	}
}

// BenchmarkCurrentDeep is BenchmarkCurrent twenty frames down, where a
// loop's callbacks call it from.
func BenchmarkCurrentDeep(b *testing.B) {
	deep(20, func() {
		var x uintptr
		for range b.N {
			x += Current()
		}
		_ = x
	})
}

//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}
