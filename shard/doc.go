// Package shard runs one spindle loop per core and carries calls between
// them without a shared lock: shard-per-core, as in Seastar.
//
// One executor uses one core. A service that needs more runs a [Group] of
// executors, its shards (not to be confused with future.Group, which runs
// tasks of one executor and waits for them), and gives every piece of
// state one owner: the
// shard whose loop alone touches it, with no lock. Other shards (and other
// goroutines) reach the state by asking its owner with [Call], which runs a
// function on the owner's loop and returns a future of its result.
//
//	g := shard.New(0) // one shard per GOMAXPROCS
//	g.Start()
//	defer g.Close()
//	counts := shard.NewSharded(g, func(int) *map[uint64]int {
//		m := map[uint64]int{} // made on its own shard's loop
//		return &m
//	})
//
//	// From a handler's goroutine, or from code on any shard:
//	n, err := shard.Invoke(counts, g.Of(key), func(m *map[uint64]int) (int, error) {
//		(*m)[key]++ // the owner's map: only the owner's loop runs this
//		return (*m)[key], nil
//	}).Await(ctx)
//
// # Where the future belongs
//
// Called on a shard's loop (a callback or a task of one of the group's
// shards), Call sends the call from that shard and the future belongs to
// that shard: the callbacks registered on it with Then, and the tasks that
// await it, run on the calling shard, next to the state they work on, with
// no further hop. Called anywhere else (a handler goroutine, say), Call is
// future.Call on the owner and the future belongs to the owner. Either
// way, calls from one shard or one goroutine to a shard run in the order
// they were made, errors cross as they are, and a panic in the function
// fails the future with a *future.PanicError.
//
// # The transport
//
// Between two shards, calls travel one queue per ordered pair of shards,
// and their replies travel the queue of the reverse pair. A queue is a
// chain of lock-free single-producer/single-consumer ring segments: the
// calling shard writes the call into the ring and publishes it, together with every other call
// made during the same batch of tasks, when its loop reaches the end of
// the batch (or once 16 calls are waiting); the destination is woken once
// for the batch, not once per call, and not at all while it is still
// working through the queue. A call from a shard allocates nothing but its
// promise, which comes from the shard's slab (executor.WithAllocation); a
// call whose function captures variables pays for its closure, which
// CallWith and InvokeWith avoid by carrying one argument in the call. See
// docs/shards.md for the design, the measurements behind it and how it
// scales with the number of cores.
//
// # Sharded services
//
// A [Sharded] service keeps one instance per shard, each made on its own
// shard's loop ([NewSharded]). Code on a shard uses its own instance with
// Local; [Invoke] runs a function with another shard's instance on that
// shard; [InvokeAll] runs one on every shard and [MapReduce] folds the
// results.
//
// # One-way messages
//
// When the caller needs no answer, [Send] runs a function on another shard
// without a future: the message is the function itself, one slot in the
// queue, and nothing comes back. [Update] does the same for a Sharded
// service's instance with an argument, and an [Updater] (one service, one
// function, one calling shard) makes many of them cheaply: updates to a
// shard are gathered in batches of up to 64, one message each, that leave
// when full, when the caller sends that shard anything else, and at the end
// of the calling loop's batch of tasks, and come back empty for reuse, so
// an update allocates nothing. Sends, updates and calls from one shard to
// another arrive in the order they were made. A panic in a one-way
// function goes to the destination's panic handler, and one-way messages
// still on their way when the group closes are dropped, as work submitted
// to a closed executor is.
//
// # Choosing owners
//
// [Group.Of] maps a key to its owner: stable for the group's life and even
// over the shards. Hash a string key to a uint64 first (hash/maphash).
// State that every request touches belongs on one shard only if that shard
// can keep up; otherwise split it per shard and combine with MapReduce.
//
// # Watching the shards
//
// [Group.Stats] sums the shards' figures (executor.Stats), and each
// shard's own are Shard(i).Stats(). Package metrics publishes both through
// expvar (metrics.PublishGroup), and the contrib modules export every
// shard under its name ("<name>-<i>") to Prometheus and OpenTelemetry;
// a shard whose utilization stays above the others' owns too many hot
// keys.
//
// # Stopping
//
// [Group.Shutdown] lets calls between shards finish before any shard
// closes: calls from outside the group fail with executor.ErrClosed at
// once, and once the shards are quiet every shard shuts down.
// [Group.Close] closes every shard at once. Either way, every call in
// flight is released: its future completes with its result if it ran and
// fails with executor.ErrClosed if it did not, and no goroutine is left
// behind. A call to a shard that is draining runs (it carries work already
// accepted); a call to a shard that has closed fails with
// executor.ErrClosed. Stop a group's shards through the group: a shard
// executor closed on its own fails later calls to it, but calls already in
// flight to it are released only when their caller's shard or the group
// closes.
package shard
