package future

// What becomes of continuations whose loop has closed before running them
// (loop.Dropper): nothing that waits on the loop is left pending. A
// continuation that would have completed a future fails it with
// executor.ErrClosed; an observer callback (OnComplete, OnCancel) is called
// on the goroutine that drops it, because its loop no longer runs anything.

import "github.com/spindle-rt/spindle/executor"

// Drop fails the derived future: the loop closed before fn could run.
func (n *thenNode[T, U]) Drop() { n.node.drop() }

// Drop fails the derived future: the loop closed before fn could run.
func (n *transformNode[T, U]) Drop() { n.node.drop() }

func (n *node[T, U]) drop() {
	var zero U
	n.out.complete(zero, executor.ErrClosed, fromAnywhere)
	n.release()
}

// Drop calls the callback off the loop, which has closed.
func (n *completeNode[T]) Drop() { n.fn(n.src.val, n.src.err) }

// Drop calls the callback off the loop, which has closed.
func (n *cancelNode) Drop() { n.fn() }

// Drop fails the future of Call: the loop closed before fn could run.
func (n *callNode[T]) Drop() {
	var zero T
	n.out.complete(zero, executor.ErrClosed, fromAnywhere)
}

// Drop fails the combinator: the loop closed before it could take this
// input in.
func (e *entry[T]) Drop() { e.c.fail(executor.ErrClosed) }

// Drop fails the future of a task that never started: the loop closed
// first.
func (t *task[T]) Drop() {
	var zero T
	t.res.complete(zero, executor.ErrClosed, fromAnywhere)
}
