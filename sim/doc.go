// Package sim runs a program of executors, shard groups, netio sockets
// and fileio files on a simulated network and disk, on fake time, in an
// order that one seed decides, so that a run can be replayed byte for
// byte.
//
// A World holds hosts; each host has a disk (Host.Disk) and executors
// (Host.Executor) and shard groups (Host.Group) that the world steps
// itself: one batch of one loop at a time, on the test's goroutine, in an
// order drawn from the seed. Their netio listeners, dials and connections
// are simulated sockets: bytes are cut into pieces and delayed as the
// seed says, and the test may add faults (World.Faults, World.Partition,
// World.Reset, World.Stall). Their fileio files live on the host's disk,
// which may fail syncs with EIO, fill up, and lose or tear what was not
// synced (Disk.Faults). Timers of those loops run on the world's clock,
// which moves only when no loop has work, so a minute of expiry costs
// nothing.
//
// A host's program (Host.Start) makes its executors and starts its
// services; World.Crash stops every loop of the host at once (its peers
// see resets or silence, its disk keeps only what was synced and what
// the crash spared) and World.Restart runs the program again on the same
// address and disk. World.AtStep runs a function before a given step, for
// a crash at a step the seed picks.
//
// Trace is a digest of everything that happened: every byte delivered,
// every network and disk event, every crash and every step. Check runs a
// test body for a number of seeds, printing "sim seed=N start" and
// "sim seed=N trace=HEX" for each; -sim.seed=N runs one seed, -sim.runs=K
// runs K, and -sim.keepgoing runs every seed after a failure. A failing
// seed reports the command that replays it (Replay). A seed cannot hang
// silently: a run whose clock stays still for DefaultLivelock steps fails
// as a livelock, and a step that runs longer than -sim.stepwait of wall
// time ends the test binary with the seed, its replay command and every
// goroutine's stack.
//
// What is not simulated: goroutines other than the test's (future.Go,
// Await from another goroutine, a ctx whose cancel comes from a timer of
// package time), the kernel's own timers, and Go's map iteration order;
// a program that depends on them is not replayed exactly. See
// docs/simulation.md, a user's guide.
package sim
