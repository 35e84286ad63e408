package peers

// Fanout: each iteration starts 1,000 small jobs from the benchmark's
// goroutine, waits for all and sums their results. Per job.

import (
	"context"
	"sync"
	"testing"

	"github.com/sourcegraph/conc/pool"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

const (
	fanoutJobs  = 1000
	fanoutLimit = 8
	// fanoutSum is the sum of job(i) over the jobs.
	fanoutSum = fanoutJobs * (fanoutJobs - 1) / 2
)

// job is the work of one job: small, so that what is measured is the
// machinery around it.
func job(i int) int { return i }

func init() {
	register(Group{
		Name: "Fanout",
		Note: "spindle runs the jobs one after the other on its one loop goroutine; the others run them on " +
			"goroutines over both cores (a job that blocks or computes for long belongs on a goroutine, future.Go)",
	},
		Case{Name: "spindle_call_all", Unit: "job", Baseline: "errgroup", Kind: kindSpindle, Fn: fanoutSpindleCallAll},
		// future.Group (docs/design.md: NewGroup, SetLimit, Go, Wait) is being
		// added to the library; when it exists, register here
		//	Case{Name: "spindle_group", Unit: "job", Baseline: "errgroup", Kind: kindSpindle, Fn: fanoutSpindleGroup},
		// with g := future.NewGroup(ctx, ex), 1,000 g.Go(...) from this
		// goroutine and g.Wait(ctx), and a spindle_group_limit8 twin
		// (g.SetLimit(fanoutLimit)) with Baseline "errgroup".
		Case{Name: "errgroup", Unit: "job", Kind: kindGo, Version: "golang.org/x/sync v0.25.0", Fn: fanoutErrgroup(0)},
		Case{Name: "errgroup_limit8", Unit: "job", Baseline: "errgroup", Kind: kindGo, Version: "golang.org/x/sync v0.25.0", Fn: fanoutErrgroup(fanoutLimit)},
		Case{Name: "semaphore_limit8", Unit: "job", Baseline: "errgroup", Kind: kindGo, Version: "golang.org/x/sync v0.25.0", Fn: fanoutSemaphore},
		Case{Name: "conc_pool", Unit: "job", Baseline: "errgroup", Kind: kindPeer, Version: "sourcegraph/conc v0.3.0", Fn: fanoutConc},
		Case{Name: "waitgroup", Unit: "job", Baseline: "errgroup", Kind: kindGo, Fn: fanoutWaitGroup},
	)
}

// checkSum fails b unless the job results vs add up to fanoutSum.
func checkSum(b *testing.B, vs []int) {
	sum := 0
	for _, v := range vs {
		sum += v
	}
	if sum != fanoutSum {
		b.Fatalf("sum = %d, want %d", sum, fanoutSum)
	}
}

// fanoutSpindleCallAll: future.Call per job from this goroutine, then
// future.All awaited from this goroutine; the jobs run on the loop.
func fanoutSpindleCallAll(b *testing.B) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	ctx := context.Background()
	fs := make([]*future.Future[int], fanoutJobs)
	m := startMeter(b)
	for range b.N {
		for i := range fs {
			fs[i] = future.Call(ex, func() (int, error) { return job(i), nil })
		}
		vs, err := future.All(fs...).Await(ctx)
		if err != nil {
			b.Fatal(err)
		}
		checkSum(b, vs)
	}
	m.stop(b, "job", float64(b.N*fanoutJobs))
}

// fanoutErrgroup: errgroup.Group.Go per job, each writing its slot, then
// Wait; limit > 0 sets SetLimit.
func fanoutErrgroup(limit int) func(b *testing.B) {
	return func(b *testing.B) {
		res := make([]int, fanoutJobs)
		m := startMeter(b)
		for range b.N {
			var g errgroup.Group
			if limit > 0 {
				g.SetLimit(limit)
			}
			for i := range res {
				g.Go(func() error { res[i] = job(i); return nil })
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			checkSum(b, res)
		}
		m.stop(b, "job", float64(b.N*fanoutJobs))
	}
}

// fanoutSemaphore: a goroutine per job, started after acquiring one unit of
// a semaphore.Weighted of fanoutLimit units, released when it is done.
func fanoutSemaphore(b *testing.B) {
	ctx := context.Background()
	res := make([]int, fanoutJobs)
	sem := semaphore.NewWeighted(fanoutLimit)
	m := startMeter(b)
	for range b.N {
		for i := range res {
			if err := sem.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			go func() {
				defer sem.Release(1)
				res[i] = job(i)
			}()
		}
		// Holding every unit means every job has finished.
		if err := sem.Acquire(ctx, fanoutLimit); err != nil {
			b.Fatal(err)
		}
		sem.Release(fanoutLimit)
		checkSum(b, res)
	}
	m.stop(b, "job", float64(b.N*fanoutJobs))
}

// fanoutConc: conc's pool.ResultPool: Go per job, Wait returns the results.
func fanoutConc(b *testing.B) {
	m := startMeter(b)
	for range b.N {
		p := pool.NewWithResults[int]()
		for i := range fanoutJobs {
			p.Go(func() int { return job(i) })
		}
		checkSum(b, p.Wait())
	}
	m.stop(b, "job", float64(b.N*fanoutJobs))
}

// fanoutWaitGroup: a goroutine per job and a sync.WaitGroup.
func fanoutWaitGroup(b *testing.B) {
	res := make([]int, fanoutJobs)
	m := startMeter(b)
	for range b.N {
		var wg sync.WaitGroup
		for i := range res {
			wg.Go(func() { res[i] = job(i) })
		}
		wg.Wait()
		checkSum(b, res)
	}
	m.stop(b, "job", float64(b.N*fanoutJobs))
}
