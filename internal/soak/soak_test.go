package soak

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	seedFlag   = flag.Uint64("soak.seed", 0, "seed of the first round (0: SPINDLE_SOAK_SEED, else random)")
	budgetFlag = flag.Duration("soak.budget", 0, "time budget for starting rounds (0: 45s, 5s with -short)")
	roundsFlag = flag.Int("soak.rounds", 0, "stop after this many rounds (0: when the budget is spent)")
)

// firstSeed returns the seed of the first round: the flag, the environment
// variable, or a random one.
func firstSeed(t *testing.T) uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("SPINDLE_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("SPINDLE_SOAK_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano()) | 1
}

// nextSeed derives the next round's seed (splitmix64), so that a round can
// be replayed alone from its own seed.
func nextSeed(s uint64) uint64 {
	s += 0x9e3779b97f4a7c15
	s = (s ^ s>>30) * 0xbf58476d1ce4e5b9
	s = (s ^ s>>27) * 0x94d049bb133111eb
	return s ^ s>>31
}

func budget() time.Duration {
	switch {
	case *budgetFlag > 0:
		return *budgetFlag
	case testing.Short():
		return 5 * time.Second
	}
	return 45 * time.Second
}

// watchdog is how long a round waits for what the contract says ends (a
// Close, the Awaits after it) before it fails the check and aborts the
// round: 10 s, shortened, but never below 3 s, as the end of the budget
// nears, so that a run with hangs still ends about 8 s after its budget.
func watchdog(start time.Time, budget time.Duration) time.Duration {
	return min(10*time.Second, max(3*time.Second, time.Until(start.Add(budget+8*time.Second))))
}

// TestSoak runs rounds (round.go) until the budget is spent, then reports
// every check that failed, with the seed of the first round that failed it.
func TestSoak(t *testing.T) {
	seed, b := firstSeed(t), budget()
	t.Logf("seed %#x, budget %v; replay: go test -race -run TestSoak ./internal/soak -soak.seed=%#x", seed, b, seed)
	rec := &recorder{t: t}
	var total tally
	var modes [nModes]int
	ignore := goleak.IgnoreCurrent()
	start := time.Now()
	rounds := 0
	for time.Since(start) < b && (*roundsFlag == 0 || rounds < *roundsFlag) {
		before := spindletest.HeapInUse()
		r := newRound(rounds, seed, rec, watchdog(start, b))
		ok := r.run(ignore)
		t.Log(r.line())
		total.add(&r.n)
		modes[r.outcome()]++
		rounds++
		if !ok {
			t.Errorf("round %d (seed %#x) could not be undone; stopping", r.index, r.seed)
			break
		}
		seed = nextSeed(seed)
		// Once its burst is over, a round leaves nothing behind.
		index, rseed, desc := r.index, r.seed, r.describe()
		r = nil
		if grown := spindletest.HeapInUse() - before; grown > maxHeapGrowth {
			rec.t.Errorf("round %d (seed %#x, %s): the heap grew by %d B over the round, want under %d", index, rseed, desc, grown, maxHeapGrowth)
		}
	}
	t.Logf("soak: %d rounds in %v; %s; %s", rounds, time.Since(start).Round(time.Millisecond), total.summary(), modeSummary(modes))
	rec.report(rounds)
}

// maxHeapGrowth bounds how much the live heap may grow over a round, from
// before its executor is made to after everything it made is dropped.
const maxHeapGrowth = 4 << 20

// recorder collects check failures over all rounds: each check is reported
// once, with how often it failed and its first failure.
type recorder struct {
	t      *testing.T
	mu     sync.Mutex
	checks []string
	fails  map[string]*failure
}

type failure struct {
	count  int
	rounds map[int]bool
	first  string
}

// fail records that check failed in round r.
func (rec *recorder) fail(check string, r *round, format string, args ...any) {
	msg := fmt.Sprintf("round %d (seed %#x, %s): ", r.index, r.seed, r.describe()) + fmt.Sprintf(format, args...)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.fails == nil {
		rec.fails = map[string]*failure{}
	}
	f := rec.fails[check]
	if f == nil {
		f = &failure{rounds: map[int]bool{}, first: msg}
		rec.fails[check] = f
		rec.checks = append(rec.checks, check)
		rec.t.Logf("check %s failed: %s", check, msg)
	}
	f.count++
	f.rounds[r.index] = true
}

func (rec *recorder) report(rounds int) {
	rec.t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range rec.checks {
		f := rec.fails[c]
		rec.t.Errorf("check %s failed %d times, in %d of %d rounds; first: %s", c, f.count, len(f.rounds), rounds, f.first)
	}
}

func modeSummary(modes [nModes]int) string {
	var b strings.Builder
	b.WriteString("ends:")
	for m, n := range modes {
		fmt.Fprintf(&b, " %s %d", outcomeNames[m], n)
	}
	return b.String()
}
