// Package soak holds spindle's soak test: random work thrown at fresh
// executors from eight goroutines, closed at a random moment, and then
// checked against the lifecycle contract (docs/design.md, execution model, point
// 7). It has no code of its own; see soak_test.go.
//
// Each round starts an executor and eight workers that, at random, Submit
// functions, hand work to the loop with future.Call, spawn tasks (which
// Yield, Sleep, send and receive on shared channels, Select, and await other
// futures), await futures other workers made (with no deadline, a short one
// or a cancelled context), Cancel them, chain Then on them, put a short
// Timeout on them, call across a two-shard group (MapReduce over both
// shards, Invoke on one) from outside it, and send or receive through
// channel futures. Some rounds add tasks that never stop on
// their own: two that ping-pong over a channel and one that loops on Yield.
// At a random moment the round ends with Close or Shutdown (random
// deadline), made from a goroutine or from the loop itself; the workers go
// on for a few operations after that. Then the round checks that Close
// returned, every task body had returned when it did, every Await returned
// with an outcome the contract allows, every accepted Submit ran exactly once
// when Shutdown drained (at most once after a Close), no rejected Submit ran,
// every future handed between goroutines (Call, Spawn, Sleep, Then,
// Timeout, shard calls) is complete and its OnComplete callback has run, a
// channel future whose Await said executor.ErrClosed is complete, anything
// asked of the closed executor fails at once,
// no withdrawn send delivered its item, no item arrived twice, and no
// goroutine is left. Between rounds, the live heap must come back to
// within 4 MiB of where it was before the round.
//
// The test runs rounds until its time budget is spent: 45 s, 5 s with
// -short. Every wait has a watchdog (10 s, less near the end of the
// budget): a hang fails the test and is undone (the round's own tasks and
// waits are told to stop) so that the run ends. The seed of the first round is logged; replay a run with
//
//	go test -race -run TestSoak ./internal/soak -soak.seed=0x1234
//
// (or SPINDLE_SOAK_SEED=0x1234), and one failing round, whose seed each
// failure names, with -soak.seed=<round seed> -soak.rounds=1. Timing still
// differs between runs: the seed fixes what each goroutine does, not how
// the scheduler interleaves it.
package soak
