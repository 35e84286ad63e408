package shard

import (
	"runtime"
	"sync"
	"testing"
)

// BenchmarkQueue measures the lane storage alone: a producer
// goroutine pushes b.N messages and publishes every batch of 16, a
// consumer goroutine pops them. ns/op is per message.
func BenchmarkQueue(b *testing.B) {
	q := newRingQueue()
	var m message = item(0)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range b.N {
			if q.push(m) {
				q.publish()
			}
		}
		q.publish()
	}()
	for n := 0; n < b.N; {
		if _, ok := q.pop(); ok {
			n++
		} else {
			runtime.Gosched()
		}
	}
	wg.Wait()
}
