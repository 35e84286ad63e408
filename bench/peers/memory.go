package peers

// Memory: each iteration makes 10,000 waiters pending on one event, measures
// what they add to the live heap and to goroutine stacks (after collecting
// garbage), then fires the event and waits until every waiter has run.
// Ranked by bytes per waiter.
//
// Not counted, for anyone: the runtime's goroutine descriptors (a few
// hundred bytes each), which it keeps and reuses after a goroutine exits, so
// that after the first iteration a new goroutine takes one that is already
// allocated. Goroutine stacks are counted: they are freed when collected.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	chebyrash "github.com/chebyrash/promise"
	fanliao "github.com/fanliao/go-promise"
	jizhuozhi "github.com/jizhuozhi/go-future"
	reugn "github.com/reugn/async"

	"github.com/spindle-rt/spindle/bench/internal/netcase"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

const waiterCount = 10_000

func init() {
	register(Group{
		Name: "Memory",
		Note: "live heap plus goroutine stacks after GC, per waiter; link/ compares pending Then links, task/ " +
			"compares straight-line code suspended until the event (a spawned task, a goroutine); goroutine " +
			"descriptors, which the runtime reuses and never frees, are not counted (this favours every case " +
			"that holds a goroutine, spindle_task's included)",
	},
		Case{Name: "link/spindle", Unit: "waiter", Metric: "B", Baseline: "link/goroutines", Kind: kindSpindle, Fn: memory(newSpindleWaiters(false))},
		Case{Name: "link/jizhuozhi_future", Unit: "waiter", Metric: "B", Baseline: "link/goroutines", Kind: kindPeer,
			Version: "jizhuozhi/go-future v0.1.5", Fn: memory(newJizhuozhi)},
		Case{Name: "link/fanliao_promise", Unit: "waiter", Metric: "B", Baseline: "link/goroutines", Kind: kindPeer,
			Version: "fanliao/go-promise v0.0.0-20141029170127-1890db352a72", Fn: memory(newFanliao)},
		Case{Name: "link/chebyrash_promise", Unit: "waiter", Metric: "B", Baseline: "link/goroutines", Kind: kindPeer,
			Version: "chebyrash/promise v0.0.0-20230709133807-42ec49ba1459", Fn: memory(newChebyrash)},
		Case{Name: "link/reugn_async", Unit: "waiter", Metric: "B", Baseline: "link/goroutines", Kind: kindPeer,
			Version: "reugn/async v0.10.0", Fn: memory(newReugn)},
		Case{Name: "link/goroutines", Unit: "waiter", Metric: "B", Kind: kindGo, Fn: memory(newGoroutines)},
		Case{Name: "task/spindle", Unit: "waiter", Metric: "B", Baseline: "task/goroutines", Kind: kindSpindle, Fn: memory(newSpindleWaiters(true))},
		Case{Name: "task/goroutines", Unit: "waiter", Metric: "B", Kind: kindGo, Fn: memory(newGoroutines)},
	)
}

// waiterSet is one iteration's fixture, made before the first reading.
type waiterSet interface {
	// arm makes waiterCount waiters pending and returns once all wait.
	arm(b *testing.B)
	// release fires the event and returns once every waiter has run.
	release(b *testing.B)
	// close frees what the fixture holds (an executor).
	close()
}

// memory runs a Memory case with the fixtures mk makes, reporting
// "B/waiter" (live bytes added by arm), "ns/waiter" (arm plus release) and
// "allocs/waiter" (mallocs in arm).
func memory(mk func() waiterSet) func(b *testing.B) {
	return func(b *testing.B) {
		var bytes, mallocs int64
		var elapsed time.Duration
		var ms runtime.MemStats
		b.ResetTimer()
		for range b.N {
			ws := mk()
			before := netcase.LiveBytes()
			runtime.ReadMemStats(&ms)
			m0 := ms.Mallocs
			t0 := time.Now()
			ws.arm(b)
			elapsed += time.Since(t0)
			runtime.ReadMemStats(&ms)
			mallocs += int64(ms.Mallocs - m0)
			bytes += netcase.LiveBytes() - before
			t1 := time.Now()
			ws.release(b)
			elapsed += time.Since(t1)
			ws.close()
		}
		b.StopTimer()
		units := float64(b.N * waiterCount)
		b.ReportMetric(float64(bytes)/units, "B/waiter")
		b.ReportMetric(float64(elapsed.Nanoseconds())/units, "ns/waiter")
		b.ReportMetric(float64(mallocs)/units, "allocs/waiter")
	}
}

// countdown closes done when hit has been called waiterCount times; hit
// may be called from any goroutine.
type countdown struct {
	n    atomic.Int64
	done chan struct{}
}

func newCountdown() *countdown { return &countdown{done: make(chan struct{})} }

func (c *countdown) hit() {
	if c.n.Add(1) == waiterCount {
		close(c.done)
	}
}

// wait waits until every waiter has hit, failing b after a minute.
func (c *countdown) wait(b *testing.B) {
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d waiters ran", c.n.Load(), waiterCount)
	}
}

// spindleWaiters: waiterCount waiters on one pending promise's future, made
// on the loop: future.Then links, or (tasks) spawned tasks suspended in
// Await.
type spindleWaiters struct {
	ex    *executor.Executor
	p     *future.Promise[int]
	cd    *countdown
	tasks bool
}

func newSpindleWaiters(tasks bool) func() waiterSet {
	return func() waiterSet {
		ex := executor.New()
		ex.Start()
		return &spindleWaiters{ex: ex, p: future.NewPromise[int](ex), cd: newCountdown(), tasks: tasks}
	}
}

func (s *spindleWaiters) arm(b *testing.B) {
	f := s.p.Future()
	link := func(v int) (int, error) { s.cd.hit(); return v, nil }
	body := func(ctx context.Context) (int, error) {
		v, err := f.Await(ctx)
		s.cd.hit()
		return v, err
	}
	ready := make(chan struct{})
	err := s.ex.Submit(func() {
		for range waiterCount {
			if s.tasks {
				future.Spawn(s.ex, body)
			} else {
				future.Then(f, link)
			}
		}
		close(ready)
	})
	if err != nil {
		b.Fatal(err)
	}
	<-ready
	// Spawned tasks suspend once the loop has run them, after the batch
	// above.
	deadline := time.Now().Add(time.Minute)
	for s.tasks && s.ex.Stats().Suspended < waiterCount {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks suspended", s.ex.Stats().Suspended, waiterCount)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (s *spindleWaiters) release(b *testing.B) { s.p.Resolve(1); s.cd.wait(b) }
func (s *spindleWaiters) close()               { s.ex.Close() }

// goroutineWaiters: waiterCount goroutines blocked receiving from one
// channel, which release closes.
type goroutineWaiters struct {
	ch          chan struct{}
	ready, done sync.WaitGroup
}

func newGoroutines() waiterSet { return &goroutineWaiters{ch: make(chan struct{})} }

func (g *goroutineWaiters) arm(*testing.B) {
	g.ready.Add(waiterCount)
	g.done.Add(waiterCount)
	for range waiterCount {
		go func() {
			g.ready.Done()
			<-g.ch
			g.done.Done()
		}()
	}
	g.ready.Wait()
}

func (g *goroutineWaiters) release(*testing.B) { close(g.ch); g.done.Wait() }
func (g *goroutineWaiters) close()             {}

// chebyrashWaiters: waiterCount chebyrash.Then on one pending promise (a
// goroutine each, waiting in Await).
type chebyrashWaiters struct {
	start chan int
	head  *chebyrash.Promise[int]
	cd    *countdown
}

func newChebyrash() waiterSet {
	start := make(chan int, 1)
	head := chebyrash.New(func(resolve func(int), _ func(error)) { resolve(<-start) })
	return &chebyrashWaiters{start: start, head: head, cd: newCountdown()}
}

func (c *chebyrashWaiters) arm(*testing.B) {
	ctx := context.Background()
	link := func(v int) (int, error) { c.cd.hit(); return v, nil }
	for range waiterCount {
		chebyrash.Then(c.head, ctx, link)
	}
}

func (c *chebyrashWaiters) release(b *testing.B) { c.start <- 1; c.cd.wait(b) }
func (c *chebyrashWaiters) close()               {}

// reugnWaiters: waiterCount reugn Future.Map on one pending promise (a
// goroutine each).
type reugnWaiters struct {
	p  reugn.Promise[int]
	cd *countdown
}

func newReugn() waiterSet { return &reugnWaiters{p: reugn.NewPromise[int](), cd: newCountdown()} }

func (r *reugnWaiters) arm(*testing.B) {
	f := r.p.Future()
	link := func(v int) (int, error) { r.cd.hit(); return v, nil }
	for range waiterCount {
		f.Map(link)
	}
}

func (r *reugnWaiters) release(b *testing.B) { r.p.Success(1); r.cd.wait(b) }
func (r *reugnWaiters) close()               {}

// jizhuozhiWaiters: waiterCount jizhuozhi Then on one pending promise (a
// callback node each).
type jizhuozhiWaiters struct {
	p  *jizhuozhi.Promise[int]
	cd *countdown
}

func newJizhuozhi() waiterSet {
	return &jizhuozhiWaiters{p: jizhuozhi.NewPromise[int](), cd: newCountdown()}
}

func (j *jizhuozhiWaiters) arm(*testing.B) {
	f := j.p.Future()
	link := func(v int, err error) (int, error) { j.cd.hit(); return v, err }
	for range waiterCount {
		jizhuozhi.Then(f, link)
	}
}

func (j *jizhuozhiWaiters) release(b *testing.B) { j.p.Set(1, nil); j.cd.wait(b) }
func (j *jizhuozhiWaiters) close()               {}

// fanliaoWaiters: waiterCount fanliao Pipe links on one pending promise.
type fanliaoWaiters struct {
	p  *fanliao.Promise
	cd *countdown
}

func newFanliao() waiterSet { return &fanliaoWaiters{p: fanliao.NewPromise(), cd: newCountdown()} }

func (f *fanliaoWaiters) arm(b *testing.B) {
	link := func(v any) (any, error) { f.cd.hit(); return v, nil }
	for range waiterCount {
		if _, ok := f.p.Future.Pipe(link); !ok {
			b.Fatal("Pipe refused the link")
		}
	}
}

func (f *fanliaoWaiters) release(b *testing.B) {
	if err := f.p.Resolve(1); err != nil {
		b.Fatal(err)
	}
	f.cd.wait(b)
}
func (f *fanliaoWaiters) close() {}
