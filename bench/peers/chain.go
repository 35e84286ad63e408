package peers

// Chain: each iteration builds 32 Then links on a pending promise from the
// benchmark's goroutine, resolves the head and waits (from the same
// goroutine) for the tail. Per link.

import (
	"context"
	"testing"

	chebyrash "github.com/chebyrash/promise"
	fanliao "github.com/fanliao/go-promise"
	jizhuozhi "github.com/jizhuozhi/go-future"
	reugn "github.com/reugn/async"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

const chainDepth = 32

func addOne(v int) (int, error) { return v + 1, nil }

func init() {
	register(Group{
		Name: "Chain",
		Note: "spindle runs every callback later, on its loop (never inside Resolve or Then); jizhuozhi runs them " +
			"inside Set on the resolving goroutine (no queue, the stack grows with the chain); chebyrash, reugn " +
			"and fanliao start a goroutine per link",
	},
		Case{Name: "spindle", Unit: "link", Baseline: "goroutines", Kind: kindSpindle, Fn: chainSpindle},
		Case{Name: "chebyrash_promise", Unit: "link", Baseline: "goroutines", Kind: kindPeer,
			Version: "chebyrash/promise v0.0.0-20230709133807-42ec49ba1459", Fn: chainChebyrash},
		Case{Name: "reugn_async", Unit: "link", Baseline: "goroutines", Kind: kindPeer,
			Version: "reugn/async v0.10.0", Fn: chainReugn},
		Case{Name: "jizhuozhi_future", Unit: "link", Baseline: "goroutines", Kind: kindPeer,
			Version: "jizhuozhi/go-future v0.1.5", Fn: chainJizhuozhi},
		Case{Name: "fanliao_promise", Unit: "link", Baseline: "goroutines", Kind: kindPeer,
			Version: "fanliao/go-promise v0.0.0-20141029170127-1890db352a72", Fn: chainFanliao},
		Case{Name: "goroutines", Unit: "link", Kind: kindGo, Fn: chainGoroutines},
	)
}

// checkTail fails b unless the chain's tail holds chainDepth.
func checkTail(b *testing.B, v int, err error) {
	if err != nil || v != chainDepth {
		b.Fatalf("chain tail: %d, %v; want %d", v, err, chainDepth)
	}
}

// chainSpindle: future.Then; the loop runs on its own goroutine.
func chainSpindle(b *testing.B) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	ctx := context.Background()
	m := startMeter(b)
	for range b.N {
		p := future.NewPromise[int](ex)
		f := p.Future()
		for range chainDepth {
			f = future.Then(f, addOne)
		}
		p.Resolve(0)
		v, err := f.Await(ctx)
		checkTail(b, v, err)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}

// chainChebyrash: chebyrash/promise's Then; the head waits on a channel.
func chainChebyrash(b *testing.B) {
	ctx := context.Background()
	m := startMeter(b)
	for range b.N {
		start := make(chan int, 1)
		p := chebyrash.New(func(resolve func(int), _ func(error)) { resolve(<-start) })
		for range chainDepth {
			p = chebyrash.Then(p, ctx, addOne)
		}
		start <- 0
		v, err := p.Await(ctx)
		if err != nil {
			b.Fatal(err)
		}
		checkTail(b, *v, nil)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}

// chainReugn: reugn/async's Future.Map.
func chainReugn(b *testing.B) {
	m := startMeter(b)
	for range b.N {
		p := reugn.NewPromise[int]()
		f := p.Future()
		for range chainDepth {
			f = f.Map(addOne)
		}
		p.Success(0)
		v, err := f.Join()
		checkTail(b, v, err)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}

// chainJizhuozhi: jizhuozhi/go-future's Then.
func chainJizhuozhi(b *testing.B) {
	link := func(v int, err error) (int, error) {
		if err != nil {
			return 0, err
		}
		return v + 1, nil
	}
	m := startMeter(b)
	for range b.N {
		p := jizhuozhi.NewPromise[int]()
		f := p.Future()
		for range chainDepth {
			f = jizhuozhi.Then(f, link)
		}
		p.Set(0, nil)
		v, err := f.Get()
		checkTail(b, v, err)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}

// chainFanliao: fanliao/go-promise's Pipe with a func(v) (r, err), its Then.
func chainFanliao(b *testing.B) {
	link := func(v any) (any, error) { return v.(int) + 1, nil }
	m := startMeter(b)
	for range b.N {
		p := fanliao.NewPromise()
		f := p.Future
		for range chainDepth {
			next, ok := f.Pipe(link)
			if !ok {
				b.Fatal("Pipe refused the link")
			}
			f = next
		}
		if err := p.Resolve(0); err != nil {
			b.Fatal(err)
		}
		v, err := f.Get()
		if err != nil {
			b.Fatal(err)
		}
		checkTail(b, v.(int), nil)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}

// chainGoroutines: the plain-Go chain: a goroutine per link, each waiting
// on a channel for the previous result and sending its own on.
func chainGoroutines(b *testing.B) {
	m := startMeter(b)
	for range b.N {
		head := make(chan int, 1)
		in := head
		for range chainDepth {
			out := make(chan int, 1)
			go func(in <-chan int, out chan<- int) { out <- <-in + 1 }(in, out)
			in = out
		}
		head <- 0
		checkTail(b, <-in, nil)
	}
	m.stop(b, "link", float64(b.N*chainDepth))
}
