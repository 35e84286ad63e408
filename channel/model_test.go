package channel_test

// A differential test: random sequences of channel operations run against
// spindle channels and against a plain model of their semantics (slices,
// FIFO queues, eager withdrawal), and after every step the outcomes must
// agree. Every run also checks conservation: each item that was sent is
// received exactly once, and nothing else is.
//
// The same driver runs the property test (math/rand sequences) and the
// fuzz target FuzzOps (go test -fuzz FuzzOps ./channel), whose seed corpus
// runs in every go test.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

type opKind uint8

const (
	opTrySend opKind = iota
	opTryRecv
	opSend       // Send future
	opRecv       // Recv future
	opSelect     // SelectFuture
	opTaskSend   // SendWait in a task
	opTaskRecv   // RecvWait in a task
	opTaskSelect // Select in a task
	opPoll
	opCancel
	opClose
	opTrySelect
	numOps
)

var opNames = [...]string{"TrySend", "TryRecv", "Send", "Recv", "SelectFuture", "SendWait", "RecvWait", "Select", "PollRecv", "Cancel", "Close", "TrySelect"}

const (
	stPending = iota
	stDone
	stCancelled
)

// mCase is a case of a select in the model.
type mCase struct {
	ch   int
	send bool
	val  int
}

// mOp is an operation that may wait: its model state and its real handles.
type mOp struct {
	kind    opKind
	cases   []mCase // one case for a plain send or receive
	state   int
	val     int   // received item
	err     error // ErrClosed
	chosen  int
	counted bool // its item is recorded in sent or got

	sendF  *future.Future[struct{}]
	recvF  *future.Future[int]
	selF   *future.Future[int]
	taskF  *future.Future[taskRes]
	rcases []channel.Case
}

type taskRes struct {
	val, chosen int
}

// mWaiter is a queued case of a model operation.
type mWaiter struct {
	op *mOp
	ci int
}

type mChan struct {
	capacity     int
	buf          []int
	sendq, recvq []mWaiter
	closed       bool
	armed        bool // a poll's waker is registered
	wakes        int
}

type model struct {
	chans []*mChan
}

func (op *mOp) complete(ci, v int, err error) {
	op.state, op.chosen, op.val, op.err = stDone, ci, v, err
}

// popLive pops the first waiter whose operation is pending.
func popLive(q *[]mWaiter) (mWaiter, bool) {
	for len(*q) > 0 {
		w := (*q)[0]
		*q = (*q)[1:]
		if w.op.state == stPending {
			return w, true
		}
	}
	return mWaiter{}, false
}

func (m *model) wake(c *mChan) {
	if c.armed {
		c.armed = false
		c.wakes++
	}
}

func (m *model) trySend(ch, v int) bool {
	c := m.chans[ch]
	if c.closed {
		return false
	}
	if w, ok := popLive(&c.recvq); ok {
		w.op.complete(w.ci, v, nil)
		return true
	}
	if len(c.buf) < c.capacity {
		c.buf = append(c.buf, v)
		m.wake(c)
		return true
	}
	return false
}

func (m *model) tryRecv(ch int) (int, bool) {
	c := m.chans[ch]
	if len(c.buf) > 0 {
		v := c.buf[0]
		c.buf = c.buf[1:]
		if w, ok := popLive(&c.sendq); ok {
			c.buf = append(c.buf, w.op.cases[w.ci].val)
			w.op.complete(w.ci, 0, nil)
		}
		return v, true
	}
	if w, ok := popLive(&c.sendq); ok {
		w.op.complete(w.ci, 0, nil)
		return w.op.cases[w.ci].val, true
	}
	return 0, false
}

// start runs a waiting operation: the first case that can complete at once
// does, otherwise every case queues.
func (m *model) start(op *mOp) {
	if m.ready(op) {
		return
	}
	for i, cs := range op.cases {
		c := m.chans[cs.ch]
		if cs.send {
			c.sendq = append(c.sendq, mWaiter{op, i})
			m.wake(c)
		} else {
			c.recvq = append(c.recvq, mWaiter{op, i})
		}
	}
}

// ready completes the first case of op that can complete at once, if any.
func (m *model) ready(op *mOp) bool {
	for i, cs := range op.cases {
		c := m.chans[cs.ch]
		if cs.send {
			if c.closed {
				op.complete(i, 0, channel.ErrClosed)
				return true
			}
			if m.trySend(cs.ch, cs.val) {
				op.complete(i, 0, nil)
				return true
			}
		} else {
			if v, ok := m.tryRecv(cs.ch); ok {
				op.complete(i, v, nil)
				return true
			}
			if c.closed {
				op.complete(i, 0, channel.ErrClosed)
				return true
			}
		}
	}
	return false
}

func (m *model) close(ch int) {
	c := m.chans[ch]
	if c.closed {
		return
	}
	c.closed = true
	for _, w := range c.recvq {
		if w.op.state == stPending {
			w.op.complete(w.ci, 0, channel.ErrClosed)
		}
	}
	for _, w := range c.sendq {
		if w.op.state == stPending {
			w.op.complete(w.ci, 0, channel.ErrClosed)
		}
	}
	c.recvq, c.sendq = nil, nil
	m.wake(c)
}

// input decodes operations from fuzz bytes.
type input struct {
	b []byte
}

func (in *input) next() int {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return int(v)
}

// runner drives the real channels and the model side by side.
type runner struct {
	t      testing.TB
	ex     *executor.Executor
	chans  []*channel.Chan[int]
	wakers []*countWaker
	m      model
	ops    []*mOp
	next   int // next item to send; items are unique
	sent   map[int]bool
	got    map[int]bool
	log    []string
}

func (r *runner) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nsteps:\n%v", fmt.Sprintf(format, args...), r.log)
}

func (r *runner) received(v int) {
	if r.got[v] {
		r.fail("item %d received twice", v)
	}
	r.got[v] = true
}

// runOps runs the operations encoded in data and checks every step.
func runOps(t testing.TB, data []byte) {
	in := &input{b: data}
	ex := executor.New()
	defer ex.Close()
	r := &runner{t: t, ex: ex, sent: map[int]bool{}, got: map[int]bool{}}
	nch := 1 + in.next()%3
	for range nch {
		capacity := in.next() % 3
		r.chans = append(r.chans, channel.New[int](ex, capacity))
		r.wakers = append(r.wakers, &countWaker{})
		r.m.chans = append(r.m.chans, &mChan{capacity: capacity})
	}
	for step := 0; len(in.b) > 0 && step < 400; step++ {
		kind := opKind(in.next() % int(numOps))
		r.step(kind, in)
		r.check()
	}
	// Close everything and drain: every pending operation completes.
	for ch := range r.chans {
		r.log = append(r.log, fmt.Sprintf("final Close(%d)", ch))
		r.loop(func() { r.chans[ch].Close() })
		r.m.close(ch)
		r.check()
		for {
			var v int
			var ok bool
			r.loop(func() { v, ok = r.chans[ch].TryRecv() })
			mv, mok := r.m.tryRecv(ch)
			if ok != mok || v != mv {
				r.fail("final TryRecv(%d) = (%d, %v), model (%d, %v)", ch, v, ok, mv, mok)
			}
			if !ok {
				break
			}
			r.received(v)
		}
	}
	for _, op := range r.ops {
		if op.state == stPending {
			r.fail("%s still pending after every channel closed", opNames[op.kind])
		}
	}
	for v := range r.sent {
		if !r.got[v] {
			r.fail("item %d was sent but never received", v)
		}
	}
	for v := range r.got {
		if !r.sent[v] {
			r.fail("item %d was received but its send did not complete", v)
		}
	}
}

func (r *runner) loop(fn func()) {
	if err := r.ex.Submit(fn); err != nil {
		r.t.Fatal(err)
	}
	r.ex.RunUntilIdle()
}

func (r *runner) cases(in *input) []mCase {
	n := 1 + in.next()%3
	var cs []mCase
	for range n {
		b := in.next()
		cs = append(cs, mCase{ch: b % len(r.chans), send: b&0x80 != 0})
	}
	for i := range cs {
		if cs[i].send {
			cs[i].val = r.next
			r.next++
		}
	}
	return cs
}

func (r *runner) realCases(cs []mCase) []channel.Case {
	out := make([]channel.Case, len(cs))
	for i, c := range cs {
		if c.send {
			out[i] = r.chans[c.ch].SendCase(c.val)
		} else {
			out[i] = r.chans[c.ch].RecvCase()
		}
	}
	return out
}

func (r *runner) step(kind opKind, in *input) {
	ch := in.next() % len(r.chans)
	c := r.chans[ch]
	r.log = append(r.log, fmt.Sprintf("%s(%d)", opNames[kind], ch))
	switch kind {
	case opTrySend:
		v := r.next
		r.next++
		var ok bool
		r.loop(func() { ok = c.TrySend(v) })
		if mok := r.m.trySend(ch, v); ok != mok {
			r.fail("TrySend = %v, model %v", ok, mok)
		}
		if ok {
			r.sent[v] = true
		}
	case opTryRecv:
		var v int
		var ok bool
		r.loop(func() { v, ok = c.TryRecv() })
		mv, mok := r.m.tryRecv(ch)
		if ok != mok || v != mv {
			r.fail("TryRecv = (%d, %v), model (%d, %v)", v, ok, mv, mok)
		}
		if ok {
			r.received(v)
		}
	case opPoll:
		var v int
		var ok bool
		var err error
		r.loop(func() { v, ok, err = c.PollRecv(r.wakers[ch]) })
		mc := r.m.chans[ch]
		mv, mok := r.m.tryRecv(ch)
		var merr error
		if !mok {
			if mc.closed {
				merr = channel.ErrClosed
			} else {
				mc.armed = true
			}
		}
		if ok != mok || v != mv || !errors.Is(err, merr) {
			r.fail("PollRecv = (%d, %v, %v), model (%d, %v, %v)", v, ok, err, mv, mok, merr)
		}
		if ok {
			r.received(v)
		}
	case opClose:
		r.loop(c.Close)
		r.m.close(ch)
	case opCancel:
		if len(r.ops) == 0 {
			return
		}
		b := in.next()
		op := r.ops[(b&0x7f)%len(r.ops)]
		// With the high bit set, a TrySend and a TryRecv on ch follow in
		// the same loop turn, before a cancelled task has run again.
		then := b&0x80 != 0
		v := r.next
		r.next++
		var ok, sok, rok bool
		var rv int
		r.loop(func() {
			ok = r.cancel(op)
			if then {
				sok = c.TrySend(v)
				rv, rok = c.TryRecv()
			}
		})
		mok := op.state == stPending
		if mok {
			op.state = stCancelled
		}
		if ok != mok {
			r.fail("Cancel(%s) = %v, model %v", opNames[op.kind], ok, mok)
		}
		if then {
			msok := r.m.trySend(ch, v)
			mrv, mrok := r.m.tryRecv(ch)
			if sok != msok || rok != mrok || rv != mrv {
				r.fail("TrySend, TryRecv after Cancel = %v, (%d, %v); model %v, (%d, %v)", sok, rv, rok, msok, mrv, mrok)
			}
			if sok {
				r.sent[v] = true
			}
			if rok {
				r.received(rv)
			}
		}
	case opTrySelect:
		cs := r.cases(in)
		var i int
		var err error
		var rc []channel.Case
		r.loop(func() {
			rc = r.realCases(cs)
			i, err = channel.TrySelect(rc...)
		})
		op := &mOp{kind: kind, cases: cs, chosen: -1}
		r.m.ready(op)
		if i != op.chosen || !errors.Is(err, op.err) {
			r.fail("TrySelect = (%d, %v), model (%d, %v)", i, err, op.chosen, op.err)
		}
		if i >= 0 {
			if rcv, ok := rc[i].(*channel.RecvCase[int]); ok && rcv.Value() != op.val {
				r.fail("TrySelect received %d, model %d", rcv.Value(), op.val)
			}
			r.settled(op, i, err)
		}
	default:
		op := &mOp{kind: kind, chosen: -1}
		switch kind {
		case opSend, opTaskSend:
			op.cases = []mCase{{ch: ch, send: true, val: r.next}}
			r.next++
		case opRecv, opTaskRecv:
			op.cases = []mCase{{ch: ch}}
		case opSelect, opTaskSelect:
			op.cases = r.cases(in)
		}
		r.loop(func() { r.startReal(op) })
		r.m.start(op)
		r.ops = append(r.ops, op)
	}
}

func (r *runner) startReal(op *mOp) {
	cs := op.cases[0]
	c := r.chans[cs.ch]
	switch op.kind {
	case opSend:
		op.sendF = c.Send(cs.val)
	case opRecv:
		op.recvF = c.Recv()
	case opSelect:
		op.rcases = r.realCases(op.cases)
		op.selF = channel.SelectFuture(op.rcases...)
	case opTaskSend:
		op.taskF = future.Spawn(r.ex, func(ctx context.Context) (taskRes, error) {
			return taskRes{}, c.SendWait(ctx, cs.val)
		})
	case opTaskRecv:
		op.taskF = future.Spawn(r.ex, func(ctx context.Context) (taskRes, error) {
			v, err := c.RecvWait(ctx)
			return taskRes{val: v}, err
		})
	case opTaskSelect:
		op.rcases = r.realCases(op.cases)
		op.taskF = future.Spawn(r.ex, func(ctx context.Context) (taskRes, error) {
			i, err := channel.Select(ctx, op.rcases...)
			if i < 0 {
				return taskRes{chosen: i}, err
			}
			if rc, ok := op.rcases[i].(*channel.RecvCase[int]); ok {
				return taskRes{val: rc.Value(), chosen: i}, err
			}
			return taskRes{chosen: i}, err
		})
	}
}

func (r *runner) cancel(op *mOp) bool {
	switch {
	case op.sendF != nil:
		return op.sendF.Cancel()
	case op.recvF != nil:
		return op.recvF.Cancel()
	case op.selF != nil:
		return op.selF.Cancel()
	}
	return op.taskF.Cancel()
}

// outcome reads the real outcome of op: ready, chosen case, item, error.
func (r *runner) outcome(op *mOp) (ready bool, chosen, val int, err error) {
	switch {
	case op.sendF != nil:
		res, ok := op.sendF.Peek()
		return ok, 0, 0, res.Err
	case op.recvF != nil:
		res, ok := op.recvF.Peek()
		return ok, 0, res.Value, res.Err
	case op.selF != nil:
		res, ok := op.selF.Peek()
		if !ok || res.Err != nil {
			return ok, -1, 0, res.Err
		}
		i := res.Value
		err := op.rcases[i].Err()
		if rc, isRecv := op.rcases[i].(*channel.RecvCase[int]); isRecv {
			return true, i, rc.Value(), err
		}
		return true, i, 0, err
	}
	res, ok := op.taskF.Peek()
	if op.kind == opTaskSelect {
		return ok, res.Value.chosen, res.Value.val, res.Err
	}
	return ok, 0, res.Value.val, res.Err
}

// check compares every operation and channel with the model.
func (r *runner) check() {
	r.t.Helper()
	for k, op := range r.ops {
		ready, chosen, val, err := r.outcome(op)
		name := fmt.Sprintf("op %d %s%v", k, opNames[op.kind], op.cases)
		switch op.state {
		case stPending:
			if ready {
				r.fail("%s: ready with (%d, %d, %v), model pending", name, chosen, val, err)
			}
		case stCancelled:
			if !ready || !errors.Is(err, context.Canceled) {
				r.fail("%s: (%v, %v), model cancelled", name, ready, err)
			}
		case stDone:
			if !ready {
				r.fail("%s: pending, model done with case %d", name, op.chosen)
			}
			if chosen != op.chosen || !errors.Is(err, op.err) || (op.err == nil && val != op.val) {
				r.fail("%s: (case %d, %d, %v), model (case %d, %d, %v)", name, chosen, val, err, op.chosen, op.val, op.err)
			}
			r.settled(op, chosen, err)
		}
	}
	var lens []int
	r.loop(func() {
		for _, c := range r.chans {
			lens = append(lens, c.Len())
		}
	})
	for i, mc := range r.m.chans {
		if lens[i] != len(mc.buf) {
			r.fail("channel %d: Len %d, model %d", i, lens[i], len(mc.buf))
		}
		if r.wakers[i].n != mc.wakes {
			r.fail("channel %d: poll waker woken %d times, model %d", i, r.wakers[i].n, mc.wakes)
		}
	}
}

// settled records, once, the item a completed operation moved.
func (r *runner) settled(op *mOp, chosen int, err error) {
	if op.counted || err != nil || chosen < 0 {
		return
	}
	op.counted = true
	cs := op.cases[chosen]
	if cs.send {
		r.sent[cs.val] = true
	} else {
		r.received(op.val)
	}
}

var seedA uint64 = 9

// TestModel pushes random operation sequences through spindle channels and
// the model and compares them step by step.
func TestModel(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	rng := rand.New(rand.NewPCG(seedA, 2))
	for seq := range n {
		data := make([]byte, 50+rng.IntN(400))
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(seq), func(t *testing.T) { runOps(t, data) })
		if t.Failed() {
			return
		}
	}
}

// FuzzOps is the fuzz target for operation sequences; its seed corpus runs
// in every go test.
func FuzzOps(f *testing.F) {
	// Layout: channel count-1, one capacity per channel, then operations:
	// kind, channel, and for selects a case count and one byte per case
	// (channel, high bit: send), for Cancel the operation (high bit: hand
	// off in the same loop turn).
	f.Add([]byte{})
	f.Add([]byte{0, 0, 2, 0, 3, 0, 0, 0})                                   // rendezvous: Send, Recv, TrySend
	f.Add([]byte{1, 2, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 1, 0, 1, 0, 1, 0})     // a buffered channel fills, a sender waits, all drain
	f.Add([]byte{0, 0, 3, 0, 3, 0, 9, 0, 0x80, 0, 0})                       // Recv, Recv, Cancel the first and hand off
	f.Add([]byte{1, 0, 0, 4, 0, 2, 0, 0x81, 0, 1, 1, 0, 1, 1})              // SelectFuture over two channels
	f.Add([]byte{1, 1, 0, 6, 0, 6, 0, 5, 1, 10, 0, 1, 0})                   // tasks wait, a channel closes on them
	f.Add([]byte{2, 0, 1, 2, 7, 0, 2, 0, 0x81, 0, 0, 0, 8, 2, 0, 2, 10, 1}) // task Select, PollRecv, Close
	f.Add([]byte{0, 0, 4, 0, 1, 0x80, 9, 0, 0x80, 0, 0, 11, 0, 1, 0x80})    // a select sends and receives on one channel, TrySend meets it, TrySelect
	f.Add([]byte{0, 0, 5, 0, 9, 0, 0x80, 6, 0, 9, 0, 0x81})                 // a task is cancelled and a hand-off follows at once
	f.Fuzz(func(t *testing.T, data []byte) { runOps(t, data) })
}
