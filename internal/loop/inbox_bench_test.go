package loop

import "testing"

// BenchmarkSubmitBurst: Submit of bursts of 256 items to a loop that does
// not run while they arrive, then the loop runs them: the inbox's cost
// without a consumer on another core.
func BenchmarkSubmitBurst(b *testing.B) {
	e := New(Config{})
	defer e.Close()
	n := 0
	fn := func() { n++ }
	b.ReportAllocs()
	for i := 0; i < b.N; i += 256 {
		for range 256 {
			if err := e.Submit(fn); err != nil {
				b.Fatal(err)
			}
		}
		e.RunUntilIdle()
	}
}

// BenchmarkSubmitParallel: GOMAXPROCS goroutines submit to a running loop.
func BenchmarkSubmitParallel(b *testing.B) {
	e := New(Config{})
	e.Start()
	defer e.Close()
	fn := func() {}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := e.Submit(fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
