// Package sim runs a program of executors, shard groups and netio sockets
// on a simulated network, on fake time, in an order that one seed decides,
// so that a run can be replayed byte for byte.
//
// A World holds hosts; each host has executors (Host.Executor) and shard
// groups (Host.Group) that the world steps itself: one batch of one loop
// at a time, on the test's goroutine, in an order drawn from the seed. Their
// netio listeners, dials and connections are simulated sockets: bytes are
// cut into pieces and delayed as the seed says, and the test may add
// faults (World.Faults, World.Partition, World.Stall, short writes,
// refused and slow connects). Timers of those loops run on the world's
// clock, which moves only when no loop has work, so a minute of expiry
// costs nothing.
//
// Trace is a digest of everything that happened: every byte delivered,
// every network event and every step. Check runs a test body for a number
// of seeds, printing "sim seed=N trace=HEX" for each; -sim.seed=N runs one
// seed and -sim.runs=K runs K. A failing seed reports the command that
// replays it.
//
// What is not simulated: goroutines other than the test's (future.Go,
// Await from another goroutine, a ctx whose cancel comes from a timer of
// package time), the kernel's own timers, and Go's map iteration order;
// a program that depends on them is not replayed exactly. See
// docs/simulation.md.
package sim
