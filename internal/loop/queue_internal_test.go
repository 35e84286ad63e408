package loop

import (
	"fmt"
	"testing"

	"github.com/spindle-rt/spindle/hooks"
)

// takenBlocks returns the items ids first, first+1, ..., first+n-1 as a
// list of blocks taken from an inbox, as the loop's take hands them over.
func takenBlocks(first, n int) (*block[item], int) {
	var in inbox
	for i := range n {
		in.push(item{id: hooks.ID(first + i)})
	}
	return in.take()
}

// TakeBlocks queues a take behind everything queued, also behind blocks
// of an earlier take still being consumed in place, however many blocks
// each take holds and however far the consumption has gone: the items come
// out once each, in the order taken, and Len counts them. (The loop itself
// takes the inbox only once the blocks of the last take are consumed; a
// take that did not wait would rely on this.)
func TestTakeBlocksBehindBlocksBeingConsumed(t *testing.T) {
	for _, tc := range []struct {
		first, consumed, second int
	}{
		{1, 0, 1},
		{blockSize + 1, 0, 1},
		{2*blockSize + 3, 1, blockSize + 2},
		{2*blockSize + 3, blockSize, 2 * blockSize},
		{3 * blockSize, blockSize + 5, 3*blockSize + 1},
		{3 * blockSize, 3*blockSize - 1, 1},
	} {
		t.Run(fmt.Sprintf("first=%d/consumed=%d/second=%d", tc.first, tc.consumed, tc.second), func(t *testing.T) {
			var q taskQueue
			q.TakeBlocks(takenBlocks(0, tc.first))
			next := 0
			pop := func() {
				t.Helper()
				it, ok := q.Pop()
				if !ok || int(it.id) != next {
					t.Fatalf("pop %d: got item %d (ok %v), want %d", next, it.id, ok, next)
				}
				next++
			}
			for range tc.consumed {
				pop()
			}
			if !q.Batching() {
				t.Fatalf("after %d of %d items: not batching", tc.consumed, tc.first)
			}
			q.TakeBlocks(takenBlocks(tc.first, tc.second))
			total := tc.first + tc.second
			if got, want := q.Len(), total-tc.consumed; got != want {
				t.Fatalf("after the second take: Len %d, want %d", got, want)
			}
			for next < total {
				pop()
			}
			if it, ok := q.Pop(); ok {
				t.Fatalf("item %d popped after all %d", it.id, total)
			}
			if q.Len() != 0 || q.Batching() {
				t.Fatalf("drained queue: Len %d, batching %v", q.Len(), q.Batching())
			}
		})
	}
}
