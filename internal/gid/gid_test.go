package gid

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCurrentStableAndDistinct(t *testing.T) {
	me := Current()
	if me == 0 {
		t.Fatal("Current returned 0")
	}
	if again := Current(); again != me {
		t.Fatalf("Current changed on the same goroutine: %#x then %#x", me, again)
	}
	const n = 16
	ids := make([]uintptr, n)
	var wg sync.WaitGroup
	var ready sync.WaitGroup // keep all n alive at once so ids cannot be reused
	ready.Add(n)
	release := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = Current()
			if Current() != ids[i] {
				t.Errorf("goroutine %d: Current not stable", i)
			}
			ready.Done()
			<-release
		}()
	}
	ready.Wait()
	close(release)
	wg.Wait()
	seen := map[uintptr]int{me: -1}
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			t.Fatalf("goroutines %d and %d share id %#x", i, j, id)
		}
		seen[id] = i
	}
}

func TestCurrentAllocates(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts differ under the race detector")
	}
	if n := testing.AllocsPerRun(100, func() { Current() }); n != 0 {
		t.Errorf("Current allocates %v times a call, want 0", n)
	}
}

func BenchmarkCurrent(b *testing.B) {
	var x uintptr
	for range b.N {
		x += Current()
	}
	_ = x
}

func BenchmarkCurrentParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var x uintptr
		for pb.Next() {
			x += Current()
		}
		_ = x
	})
}

func TestHeld(t *testing.T) {
	me := Current()
	other := make(chan uintptr)
	go func() { other <- Current() }()
	them := <-other
	cases := []struct {
		ids  [2]uintptr
		want bool
	}{
		{[2]uintptr{me, 0}, true},
		{[2]uintptr{0, me}, true},
		{[2]uintptr{them, me}, true},
		{[2]uintptr{0, 0}, false},
		{[2]uintptr{them, them}, false},
	}
	for _, c := range cases {
		if got := Held(&c.ids); got != c.want {
			t.Errorf("Held(%v) with me=%v = %v, want %v", c.ids, me, got, c.want)
		}
	}
}
