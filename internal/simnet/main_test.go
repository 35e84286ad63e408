package simnet

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The seed flags of package sim's tests, which this package's cannot
// import (sim imports simnet): go test with -sim.runs or -sim.seed runs
// the seeded tests here with those seeds too.
var (
	seedFlag = flag.Int64("sim.seed", -1, "run the seeded tests with this seed only")
	runsFlag = flag.Int("sim.runs", 0, "run the seeded tests with this many seeds (from 1, or from -sim.seed)")
)

// seeds returns the seeds of a seeded test, as sim.Seeds does: the one
// -sim.seed names, or -sim.runs of them, or runs of them (1, 2, ...).
func seeds(runs int) []int64 {
	first, n := int64(1), runs
	if *seedFlag >= 0 {
		first, n = *seedFlag, 1
	}
	if *runsFlag > 0 {
		n = *runsFlag
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = first + int64(i)
	}
	return s
}
