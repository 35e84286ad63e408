// Package uring is a loop's io_uring: one ring per loop, which the loop
// waits in (it is the loop's [loop.IO]) and which any component serving
// something on the loop submits to. netio's io_uring backend moves socket
// bytes through it; fileio's io_uring engine reads, writes, syncs, opens
// and closes files through the same ring.
//
// [Of] returns the loop's ring, made and attached on first use; [Existing]
// returns it only if some component made it already. It is nil
// (with the reason) on a loop the kernel refuses a ring (ENOSYS, EPERM, a
// seccomp filter, kernel.io_uring_disabled, a kernel without the features
// used), on a simulated loop, on a loop that already waits in another IO
// (netio's epoll backend), and in builds without io_uring (-tags purego,
// systems other than Linux).
//
// # Submission and completion rules
//
//   - Everything runs on the goroutine that holds the loop, except Wake.
//   - A component registers once ([Ring.Register]) and gets a tag; every
//     operation it submits carries [UserData](tag, bits) in its user_data:
//     the tag in the top 4 bits, the component's own 60 bits below. The
//     ring hands each completion to the handler of its tag, on the loop,
//     in the order the kernel completed them ([Handler.Complete]): a
//     completion always finds its owner. Tag 0 is the ring's own.
//   - A component submits only operations the kernel carries out
//     ([Ring.Supports] asks it once, IORING_REGISTER_PROBE); a kernel
//     that refuses one answers its entries with -EINVAL.
//   - A component fills entries ([Ring.Next]) whenever it runs on the loop;
//     they are handed to the kernel by the loop's next io_uring_enter, the
//     one that also waits for completions with the next timer as its
//     timeout (so a batch's operations cost one system call together), or
//     earlier when the submission queue is full ([Ring.Next] submits what
//     is queued to make room) or the component asks ([Ring.Submit]).
//   - The memory an operation names (a buffer it reads or writes, an
//     address it fills) must stay alive and unmoved until its completion
//     has been handed to the handler: the component keeps a reference to
//     it until then. The ring holds nothing of the component's.
//   - At the executor's close the ring first tells every handler
//     ([Handler.Closing]), which ends its work (and may queue more
//     entries, closes for instance); then it cancels everything in flight
//     (IORING_OP_ASYNC_CANCEL, all) and keeps handing completions to their
//     handlers (cancelled ones with -ECANCELED) until no handler reports an
//     operation in flight ([Handler.Pending]), for at most two seconds.
//     [Handler.Closed] then says whether that wait ended with nothing in
//     flight; if not, the kernel may still write memory those operations
//     name, and the handler must never reuse it. Then the ring is
//     unmapped and closed; Next must not be called any more.
//
// # Files
//
//	doc.go            this contract
//	ring_linux.go     the ring: setup, the mappings, the submission and completion queues, enter
//	loop_linux.go     one ring per loop: Of, the loop's IO (Wait, Dispatch, Wake), dispatch by tag, close
//	bufring_linux.go  rings of provided buffers (IORING_REGISTER_PBUF_RING)
//	probe_linux.go    which operations the kernel carries out (IORING_REGISTER_PROBE)
//	other.go          builds without io_uring: Of returns nil
package uring
