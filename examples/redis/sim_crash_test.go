package main

// The server's crashes under simulation (package sim): a server host whose
// AOF is on the host's simulated disk, crashed at steps the seed draws
// and restarted on what its disk kept, with disk faults (latency, a failed
// fsync, a full disk); clients on other hosts record every operation's
// call and return on the world's clock, and the history is checked by
// porcupine (the lincheck command, a module of its own in ./lincheck).
//
//	go test ./examples/redis -run SimCrash -sim.runs=200      # 200 seeds
//	go test ./examples/redis -run SimCrashAlways -sim.seed=7 -v
//
// What is checked (crashCheck):
//
//   - appendfsync always: every write acknowledged is on disk, and no reply
//     shows a write that is not (a reply waits for the sync of the writes
//     it may have seen): the whole history, across every crash and
//     restart, is linearizable from an empty keyspace. A request in flight
//     at a crash, or whose connection ended without its reply, has an
//     unknown outcome: it may or may not have happened (porcupine gives it
//     a return after everything and accepts any reply). A request refused
//     (MISCONF once the disk failed, EXECABORT) did not happen and is left
//     out, as a read without its reply is.
//   - appendfsync everysec: a crash may lose the writes of about the last
//     second. Each incarnation's history is linearizable from the keyspace
//     it recovered; that keyspace is what the AOF left by the crash gives
//     (read by the test from the disk, cut as the server cuts it), which
//     is a prefix, in the file's order, of the writes, since the file is
//     only appended to and the loader cuts it at the first command a crash
//     damaged; and that prefix holds every write acknowledged more than
//     1 s + slack before the crash, or before the first failed write or
//     sync of the incarnation if one came first (after which nothing is
//     promised: the server refuses writes, MISCONF). The writes checked
//     are those with a value of their own (SET, MSET, and the same in
//     MULTI/EXEC): each such value must be in the file kept. slack is
//     everySecSlack: the time the sync that the everysec timer starts may
//     take to land (a write, then an fdatasync, each bounded by the
//     disk's latencies), plus the first shard's loop's lag.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/sim"
)

// crashAOF is the AOF's path on the server host's disk.
const crashAOF = "/data/" + DefaultAppendFilename

// crashGroup are keys on several shards written by MSET and MULTI/EXEC:
// one partition of the model.
var crashGroup = []string{"grp:a", "grp:d", "grp:f", "grp:g"}

// crashOp is what an operation of the history asks (sim.History's
// input; its output is the raw reply).
type crashOp struct {
	part   string // the model's partition
	cmds   [][]string
	tx     bool     // MULTI/EXEC around cmds
	inc    int      // the server's incarnation the connection reached
	values []string // the values it writes that no other write writes
	write  bool
	// open: its client gave up waiting for the reply, so a write may
	// happen at any time after its call (else an unknown write happened,
	// if it did, by its Return: its server crashed then, or closed its
	// connection after running it).
	open bool
}

// unanswered is the outcome of an operation without its reply: a write
// may or may not have happened, a read did nothing.
func (o *crashOp) unanswered() sim.Outcome {
	if o.write {
		return sim.Unknown
	}
	return sim.Failed
}

// crashInc is one incarnation of the server and how it ended.
type crashInc struct {
	srv      *Server
	start    time.Duration
	crash    time.Duration     // 0 while it runs
	failedAt time.Duration     // the first failed write or sync, 0 if none
	kept     []byte            // the AOF its crash left on the disk
	loaded   map[string]string // the keyspace it loaded (nil if it did not)
}

// crashWorld is one seeded run.
type crashWorld struct {
	t      testing.TB
	w      *sim.World
	fsync  string
	srvH   *sim.Host
	shards int
	incs   []*crashInc
	hist   *sim.History[*crashOp, string]
	errs   []error
	seq    int
	bound  int // writes the everysec bound covered (check)
}

func (r *crashWorld) cur() *crashInc { return r.incs[len(r.incs)-1] }

// failed returns when the incarnation's AOF first failed (a write or a
// sync), on the world's clock, or 0. Ask before its crash: the crash
// fails what the dead incarnation had in flight.
func (inc *crashInc) failed(w *sim.World) time.Duration {
	if a := inc.srv.aof; a != nil {
		if l, ok := a.file.(*loopAOF); ok {
			if at, failed := l.FailedAt(); failed {
				// The loops' clock is the world's, from a fixed epoch.
				return w.Now() - inc.srv.g.Shard(0).Now().Sub(at)
			}
		}
	}
	return 0
}

// program is the server host's program, run at the start and at every
// restart: the shards, the server, its AOF on the host's disk.
func (r *crashWorld) program(h *sim.Host) {
	g := h.Group(r.shards, executor.WithName("redis"), executor.WithPanicHandler(func(v any) {
		r.errs = append(r.errs, fmt.Errorf("panic on a shard: %v", v))
	}))
	s := New(g, Config{
		Shards:      r.shards,
		AppendOnly:  true,
		AppendFsync: r.fsync,
		Dir:         "/data",
		KeyHash: func(key []byte) uint64 {
			f := fnv.New64a()
			f.Write(key)
			return f.Sum64()
		},
	})
	inc := &crashInc{srv: s, start: r.w.Now()}
	r.incs = append(r.incs, inc)
	n := len(r.incs) - 1
	future.Spawn(g.Shard(0), func(ctx context.Context) (struct{}, error) {
		err := s.OpenAOFContext(ctx)
		if err == nil {
			inc.loaded, err = loadedKeys(ctx, s)
		}
		if err == nil {
			err = s.ListenContext(ctx, "tcp", fmt.Sprintf(":%d", simPort))
		}
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("incarnation %d did not start on what the disk kept: %w", n, err))
		}
		return struct{}{}, nil
	})
}

// crashKeys are the keys the clients write.
var crashKeys = append([]string{"k0", "k1", "k2", "n0", "n1"}, crashGroup...)

// loadedKeys returns what the server loaded: the value of every key the
// clients write, read on its shard before the server serves.
func loadedKeys(ctx context.Context, s *Server) (map[string]string, error) {
	m := map[string]string{}
	for _, k := range crashKeys {
		v, err := shard.Invoke(s.shards, s.owner([]byte(k)), func(st *shardState) (*string, error) {
			v, found, _ := st.db.getString([]byte(k))
			if !found {
				return nil, nil
			}
			return &v, nil
		}).Await(ctx)
		if err != nil {
			return nil, err
		}
		if v != nil {
			m[k] = *v
		}
	}
	return m, nil
}

// crash crashes the server host, noting what its disk kept.
func (r *crashWorld) crash() {
	if r.srvH.Down() {
		return
	}
	inc := r.cur()
	inc.crash = r.w.Now()
	inc.failedAt = inc.failed(r.w)
	r.w.Crash(r.srvH)
	inc.kept, _ = r.srvH.Disk().ReadFile(crashAOF)
	r.hist.Settle(func(op *sim.Op[*crashOp, string]) sim.Outcome {
		if op.Input.inc != len(r.incs)-1 {
			return sim.Pending // sent to an earlier incarnation: its client settles it
		}
		return op.Input.unanswered()
	})
}

// client runs n operations on one connection at a time, reconnecting
// after a failure, and records each.
func (r *crashWorld) client(ctx context.Context, ex *executor.Executor, id, n int, rng *rand.Rand) error {
	addr := r.srvH.Addr(simPort)
	var c *netio.Conn
	var in []byte
	inc := 0
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for done, tries := 0, 0; done < n && tries < 20*n; tries++ {
		if c == nil {
			conn, err := future.WithTimeout(netio.Dial(ctx, ex, "tcp", addr), 200*time.Millisecond).Await(ctx)
			if err != nil {
				if _, err := future.Sleep(ex, time.Duration(20+rng.Intn(100))*time.Millisecond).Await(ctx); err != nil {
					return err
				}
				continue
			}
			c, in, inc = conn, nil, len(r.incs)-1
		}
		o, req, want := r.gen(rng, id)
		o.inc = inc
		i := r.hist.Call(id, o)
		done++
		ok := true
		if _, err := c.Write(req); err != nil {
			ok = false
		}
		var replies []string
		timedOut := false
		for ok && len(replies) < want {
			k, complete := replyLen(in)
			if complete {
				replies = append(replies, string(in[:k]))
				in = in[k:]
				continue
			}
			b, err := future.Timeout(c.Recv(), time.Second).Await(ctx)
			if err != nil {
				ok, timedOut = false, errors.Is(err, context.DeadlineExceeded)
				break
			}
			in = append(in, b...)
		}
		switch {
		case r.hist.Op(i).Outcome != sim.Pending:
			// The crash settled it while its reply was on its way.
		case !ok && o.write:
			o.open = timedOut
			r.hist.Unknown(i)
		case !ok:
			r.hist.Fail(i)
		default:
			r.reply(i, replies)
		}
		if !ok || o.inc != len(r.incs)-1 {
			c.Close()
			c = nil
		}
		if rng.Intn(2) == 0 {
			// A pause: the run spans seconds of the world's clock, past
			// the everysec syncs.
			if _, err := future.Sleep(ex, time.Duration(rng.Intn(250))*time.Millisecond).Await(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// reply records an operation's replies: the last one is its reply (EXEC's
// for a transaction, whose other replies are MULTI's +OK and +QUEUED).
func (r *crashWorld) reply(i int, replies []string) {
	op := r.hist.Op(i)
	o := op.Input
	last := replies[len(replies)-1]
	r.w.Record('h', uint64(op.Client), uint64(op.Call), []byte(last))
	if o.tx {
		for n, q := range replies[:len(replies)-1] {
			want := "+QUEUED\r\n"
			if n == 0 {
				want = "+OK\r\n"
			}
			if q == want {
				continue
			}
			if strings.HasPrefix(q, "-MISCONF ") && strings.HasPrefix(last, "-EXECABORT ") {
				r.hist.Fail(i)
				return
			}
			r.errs = append(r.errs, fmt.Errorf("client %d: %q: reply %d is %q", op.Client, o.cmds, n, q))
		}
	}
	switch {
	case strings.HasPrefix(last, "-MISCONF ") || strings.HasPrefix(last, "-EXECABORT "):
		r.hist.Fail(i)
		if r.incs[o.inc].srv.aof.file.Err() == nil {
			r.errs = append(r.errs, fmt.Errorf("client %d: %q refused with %q while the AOF had not failed", op.Client, o.cmds, last))
		}
	default:
		r.hist.Return(i, last)
	}
}

// gen draws an operation: its record, its request and how many replies
// it gets.
func (r *crashWorld) gen(rng *rand.Rand, id int) (*crashOp, []byte, int) {
	r.seq++
	v := fmt.Sprintf("c%d.%d", id, r.seq)
	o := &crashOp{}
	one := func(part string, write bool, c ...string) {
		o.part, o.write, o.cmds = part, write, [][]string{c}
	}
	switch x := rng.Intn(20); {
	case x < 8: // one string key
		k := fmt.Sprintf("k%d", rng.Intn(3))
		switch rng.Intn(5) {
		case 0, 1:
			one(k, false, "GET", k)
		case 2:
			one(k, true, "SET", k, v)
			o.values = []string{v}
		case 3:
			one(k, true, "SET", k, v)
			o.values = []string{v}
		default:
			one(k, true, "DEL", k)
		}
	case x < 11: // a counter
		k := fmt.Sprintf("n%d", rng.Intn(2))
		switch rng.Intn(4) {
		case 0:
			one(k, false, "GET", k)
		case 1:
			one(k, true, "DEL", k)
		default:
			one(k, true, "INCR", k)
		}
	case x < 13:
		args := []string{"MSET"}
		for _, k := range crashGroup {
			args = append(args, k, v)
		}
		one("grp", true, args...)
		o.values = []string{v}
	case x < 15:
		args := []string{"MGET"}
		for _, k := range crashGroup {
			if rng.Intn(3) > 0 {
				args = append(args, k)
			}
		}
		if len(args) < 3 {
			args = append(args, crashGroup[0], crashGroup[3])
		}
		one("grp", false, args...)
	case x < 16:
		one("grp", true, "DEL", crashGroup[rng.Intn(2)], crashGroup[2+rng.Intn(2)])
	default: // MULTI/EXEC over the group's shards
		a, b := crashGroup[rng.Intn(2)], crashGroup[2+rng.Intn(2)]
		o.part, o.tx, o.write = "grp", true, true
		switch rng.Intn(4) {
		case 0:
			o.cmds = [][]string{{"SET", a, v}, {"SET", b, v}, {"MGET", a, b}}
			o.values = []string{v}
		case 1:
			o.cmds = [][]string{{"MGET", a, b}, {"SET", b, v}}
			o.values = []string{v}
		case 2:
			o.cmds = [][]string{{"SET", a, v}, {"GET", b}, {"DEL", b}}
			o.values = []string{v}
		default:
			o.cmds = [][]string{{"GET", a}, {"GET", b}}
			o.write = false
		}
	}
	var req []byte
	if o.tx {
		req = cmd("MULTI")
		for _, c := range o.cmds {
			req = append(req, cmd(c...)...)
		}
		return o, append(req, cmd("EXEC")...), len(o.cmds) + 2
	}
	return o, cmd(o.cmds[0]...), 1
}

// crashFaults draws the seed's disk: latencies, and in some seeds a
// failing fsync (a rate that fails one of the few syncs of everysec now
// and then, and one of always's many sooner) or a capacity the run's AOF
// outgrows (a few KB).
func crashFaults(rng *rand.Rand, f sim.DiskFaults, fsync string) sim.DiskFaults {
	f.MaxLatency = time.Duration(10+rng.Intn(200)) * time.Microsecond
	f.MaxSync = time.Duration(1+rng.Intn(5)) * time.Millisecond
	switch rng.Intn(6) {
	case 0:
		f.SyncEIO = 0.002 + rng.Float64()*0.02
		if fsync == FsyncEverySec {
			f.SyncEIO = 0.05 + rng.Float64()*0.25
		}
	case 1:
		f.Capacity = int64(2<<10 + rng.Intn(8<<10))
	}
	return f
}

// everySecSlack is what the everysec bound allows beyond the second: the
// sync the timer starts (a write, then a DataSync, on the seed's
// latencies) and the loop's lag.
func everySecSlack(f sim.DiskFaults) time.Duration {
	return 2*(f.MaxLatency+f.MaxSync) + 50*time.Millisecond
}

// runCrash runs one seed: the server, its clients, crashes and restarts.
func runCrash(t testing.TB, w *sim.World, fsync string) *crashWorld {
	rng := w.Rand()
	r := &crashWorld{t: t, w: w, fsync: fsync, shards: 2 + rng.Intn(3), hist: sim.NewHistory[*crashOp, string](w)}
	nf := w.Faults()
	nf.MaxDelay = time.Duration(1+rng.Intn(1000)) * time.Microsecond
	r.srvH = w.Host("redis")
	r.srvH.Start(r.program)
	disk := crashFaults(rng, r.srvH.Disk().Faults, fsync)

	cliH := w.Host("clients")
	cli := cliH.Executor(executor.WithName("clients"))
	clients, done := 4+rng.Intn(3), 0
	for id := range clients {
		cr := rand.New(rand.NewSource(rng.Int63()))
		future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
			defer func() { done++ }()
			if err := r.client(ctx, cli, id, 40, cr); err != nil {
				r.errs = append(r.errs, fmt.Errorf("client %d: %w", id, err))
			}
			return struct{}{}, nil
		})
	}
	// The disk's faults once the first start has made the file.
	w.AtStep(50, func() { r.srvH.Disk().Faults = disk })
	// Crashes at steps the seed draws; each restart some time later.
	var restartAt time.Duration
	step := uint64(200)
	for range 1 + rng.Intn(3) {
		step += uint64(100 + rng.Intn(3000))
		w.AtStep(step, func() {
			if !r.srvH.Down() {
				r.crash()
				restartAt = w.Now() + time.Duration(1+rng.Intn(300))*time.Millisecond
			}
		})
	}
	end := w.Now() + 2*time.Minute
	for done < clients && len(r.errs) == 0 && w.Now() < end {
		if r.srvH.Down() && w.Now() >= restartAt {
			w.Restart(r.srvH)
		}
		if !w.Step() {
			if r.srvH.Down() {
				w.Restart(r.srvH)
				continue
			}
			break
		}
	}
	if done < clients && len(r.errs) == 0 {
		r.errs = append(r.errs, fmt.Errorf("%d of %d clients done after %v of simulated time (%d steps)", done, clients, w.Now(), w.Steps()))
	}
	return r
}

// check checks the run's history (see the top of the file) and returns
// what is wrong; the visualization of a history that is not linearizable
// goes into the directory vis.
func (r *crashWorld) check(name, vis string) error {
	if len(r.errs) > 0 {
		return errors.Join(r.errs...)
	}
	for _, op := range r.hist.Ops() {
		if op.Outcome == sim.Pending {
			return fmt.Errorf("client %d's %q, called at %v, never ended", op.Client, op.Input.cmds, op.Call)
		}
	}
	for i := 1; i < len(r.incs); i++ {
		if r.incs[i].loaded == nil {
			continue // crashed while it loaded
		}
		want, _, err := replayAOF(r.incs[i-1].kept)
		if err != nil {
			return fmt.Errorf("the AOF incarnation %d's crash left: %w", i-1, err)
		}
		if got := fmt.Sprint(r.incs[i].loaded); got != fmt.Sprint(want) {
			return fmt.Errorf("incarnation %d loaded %s from what the crash kept, which holds %s", i, got, fmt.Sprint(want))
		}
	}
	in := lincheckInput{Name: name}
	if r.fsync == FsyncAlways {
		in.Histories = append(in.Histories, r.history("whole run", -1, map[string]string{}))
		return lincheck(r.t, in, vis)
	}
	init := map[string]string{}
	for i, inc := range r.incs {
		in.Histories = append(in.Histories, r.history(fmt.Sprintf("incarnation %d", i), i, init))
		if inc.crash == 0 {
			break
		}
		kept, values, err := replayAOF(inc.kept)
		if err != nil {
			return fmt.Errorf("the AOF incarnation %d's crash left: %w", i, err)
		}
		if err := r.durable(i, inc, values); err != nil {
			return err
		}
		init = kept
	}
	return lincheck(r.t, in, vis)
}

// durable checks that the AOF kept by incarnation i's crash holds every
// write acknowledged more than 1 s + slack before the crash (or before
// the first failure of the disk).
func (r *crashWorld) durable(i int, inc *crashInc, values map[string]bool) error {
	end := inc.crash
	if inc.failedAt > 0 && inc.failedAt < end {
		end = inc.failedAt
	}
	cut := end - time.Second - everySecSlack(r.srvH.Disk().Faults)
	for _, op := range r.hist.Ops() {
		o := op.Input
		if o.inc != i || op.Outcome != sim.Returned || op.Return >= cut {
			continue
		}
		r.bound++
		for _, v := range o.values {
			if !values[v] {
				return fmt.Errorf("incarnation %d: %q by client %d, acknowledged at %v, is not in the AOF its crash at %v left (every write acknowledged before %v must be)",
					i, o.cmds, op.Client, op.Return, inc.crash, cut)
			}
		}
	}
	return nil
}

// summary describes the run: its operations by outcome, its crashes.
func (r *crashWorld) summary() string {
	var n [4]int
	for _, op := range r.hist.Ops() {
		n[op.Outcome]++
	}
	size := 0
	if b, ok := r.srvH.Disk().ReadFile(crashAOF); ok {
		size = len(b)
	}
	failed := 0
	for _, inc := range r.incs {
		if inc.failedAt > 0 || (inc.crash == 0 && inc.failed(r.w) > 0) {
			failed++
		}
	}
	return fmt.Sprintf("%d operations: %d answered, %d unknown, %d refused or unanswered reads, %d pending; %d incarnations, %d with a failed AOF; %d writes under the everysec bound; %v, %d steps; AOF %d bytes, %d syncs",
		r.hist.Len(), n[sim.Returned], n[sim.Unknown], n[sim.Failed], n[sim.Pending], len(r.incs), failed, r.bound, r.w.Now(), r.w.Steps(), size, r.srvH.Disk().Syncs())
}

// history returns the operations of incarnation inc (-1: all) for the
// checker.
func (r *crashWorld) history(name string, inc int, init map[string]string) lincheckHistory {
	h := lincheckHistory{Name: name, Init: init}
	for _, op := range r.hist.Ops() {
		o := op.Input
		if inc >= 0 && o.inc != inc {
			continue
		}
		switch op.Outcome {
		case sim.Returned:
			h.Ops = append(h.Ops, lincheckOp{Client: op.Client, Part: o.part, Cmds: o.cmds, Tx: o.tx, Call: int64(op.Call), Return: int64(op.Return), Reply: op.Output})
		case sim.Unknown:
			by := int64(op.Return) // it happened by then, if it did
			if o.open {
				by = 0 // at any time
			}
			h.Ops = append(h.Ops, lincheckOp{Client: op.Client, Part: o.part, Cmds: o.cmds, Tx: o.tx, Call: int64(op.Call), Return: by, Unknown: true})
		}
	}
	return h
}

// The checker's input (lincheck's Input).
type lincheckInput struct {
	Name      string            `json:"name"`
	Histories []lincheckHistory `json:"histories"`
}

type lincheckHistory struct {
	Name string            `json:"name"`
	Init map[string]string `json:"init"`
	Ops  []lincheckOp      `json:"ops"`
}

type lincheckOp struct {
	Client  int        `json:"client"`
	Part    string     `json:"part"`
	Cmds    [][]string `json:"cmds"`
	Tx      bool       `json:"tx"`
	Call    int64      `json:"call"`
	Return  int64      `json:"return"`
	Reply   string     `json:"reply"`
	Unknown bool       `json:"unknown"`
}

// replayAOF reads an AOF as the server loads it (cut at the first command
// a crash damaged, an unfinished MULTI dropped) and returns the keyspace
// its commands make, and every argument of them (the values written).
func replayAOF(b []byte) (map[string]string, map[string]bool, error) {
	var cmds [][]string
	var multi [][]string
	inMulti := false
	for len(b) > 0 {
		c, n := parseCommand(b)
		if n == 0 {
			break // the end a crash left
		}
		b = b[n:]
		switch strings.ToUpper(c[0]) {
		case "MULTI":
			inMulti, multi = true, nil
		case "EXEC":
			cmds, inMulti = append(cmds, multi...), false
		default:
			if inMulti {
				multi = append(multi, c)
			} else {
				cmds = append(cmds, c)
			}
		}
	}
	s := map[string]string{}
	values := map[string]bool{}
	for _, c := range cmds {
		for _, a := range c[1:] {
			values[a] = true
		}
		args := c[1:]
		switch strings.ToUpper(c[0]) {
		case "SELECT":
		case "SET":
			s[args[0]] = args[1]
		case "DEL":
			for _, k := range args {
				delete(s, k)
			}
		case "INCR":
			n, _ := strconv.ParseInt(s[args[0]], 10, 64)
			s[args[0]] = strconv.FormatInt(n+1, 10)
		case "MSET":
			for i := 0; i+1 < len(args); i += 2 {
				s[args[i]] = args[i+1]
			}
		default:
			return nil, nil, fmt.Errorf("a command the test does not replay: %q", c)
		}
	}
	return s, values, nil
}

// parseCommand parses one whole RESP command at the start of b and
// returns it and its length, or 0 if b does not start with a whole,
// well-formed one.
func parseCommand(b []byte) ([]string, int) {
	line := func(at int) (int64, int, bool) {
		i := bytes.Index(b[at:], []byte("\r\n"))
		if i < 2 {
			return 0, 0, false
		}
		n, err := strconv.ParseInt(string(b[at+1:at+i]), 10, 64)
		return n, at + i + 2, err == nil && n >= 0
	}
	if len(b) == 0 || b[0] != '*' {
		return nil, 0
	}
	argc, at, ok := line(0)
	if !ok || argc < 1 {
		return nil, 0
	}
	c := make([]string, 0, argc)
	for range argc {
		if at >= len(b) || b[at] != '$' {
			return nil, 0
		}
		var n int64
		n, at, ok = line(at)
		if !ok || int64(len(b)-at) < n+2 || b[at+int(n)] != '\r' || b[at+int(n)+1] != '\n' {
			return nil, 0
		}
		c = append(c, string(b[at:at+int(n)]))
		at += int(n) + 2
	}
	return c, at
}

// The lincheck command, built once per test binary.
var lincheckBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// lincheckPath builds the checker (the module in ./lincheck) and returns
// its path; without the go command it fails the test: the check is the
// point of the simulation.
func lincheckPath(t testing.TB) string {
	t.Helper()
	b := &lincheckBin
	b.once.Do(func() {
		gocmd, err := exec.LookPath("go")
		if err != nil {
			b.err = fmt.Errorf("the go command is needed to build the history checker (./lincheck), the oracle of the crash simulation: %w", err)
			return
		}
		b.dir, b.err = os.MkdirTemp("", "redis-lincheck-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "lincheck")
		build := exec.Command(gocmd, "build", "-o", b.path, ".")
		build.Dir = "lincheck"
		build.Env = append(os.Environ(), "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building the history checker (./lincheck): %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// removeLincheck removes the checker built, once the tests have run.
func removeLincheck() {
	if lincheckBin.dir != "" {
		os.RemoveAll(lincheckBin.dir)
	}
}

// lincheck pipes the histories to the checker: nil if they are
// linearizable; else its report, with the path of the visualization.
func lincheck(t testing.TB, in lincheckInput, vis string) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	c := exec.Command(lincheckPath(t), "-vis", vis)
	c.Stdin = bytes.NewReader(data)
	out, err := c.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return fmt.Errorf("porcupine: %s", strings.TrimSpace(string(out)))
	default:
		return fmt.Errorf("the history checker: %v: %s %s", err, out, stderrOf(err))
	}
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// quietLogs drops the server's log lines (a load, a cut AOF, a failed
// sync: every seed has them) until the test ends.
func quietLogs(t testing.TB) {
	prev := log.Writer()
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(prev) })
}

// simCrash is the body of the crash simulations: one seed of fsync.
func simCrash(t *testing.T, w *sim.World, fsync string) {
	r := runCrash(t, w, fsync)
	err := r.check(strings.ReplaceAll(t.Name(), "/", "-"), os.TempDir()) // TestSimCrashAlways-seed=N
	t.Log(r.summary())
	if err != nil {
		t.Fatal(err)
	}
}

// TestSimCrashAlways: under appendfsync always, the history across every
// crash is linearizable.
func TestSimCrashAlways(t *testing.T) {
	lincheckPath(t)
	quietLogs(t)
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { simCrash(t, w, FsyncAlways) })
}

// TestSimCrashEverySec: under everysec, each incarnation is linearizable
// from what the last crash kept, which holds every write acknowledged
// more than about a second before it.
func TestSimCrashEverySec(t *testing.T) {
	lincheckPath(t)
	quietLogs(t)
	sim.Check(t, 20, func(t *testing.T, w *sim.World) { simCrash(t, w, FsyncEverySec) })
}

// TestSimCrashReplays runs seeds twice: one seed, one trace.
func TestSimCrashReplays(t *testing.T) {
	quietLogs(t)
	for seed := int64(1); seed <= 3; seed++ {
		var traces [2]string
		for i := range traces {
			w := sim.New(seed)
			runCrash(t, w, FsyncAlways)
			traces[i] = w.TraceHex()
			w.Close()
		}
		if traces[0] != traces[1] {
			t.Fatalf("seed %d: traces %s and %s", seed, traces[0], traces[1])
		}
	}
}

// TestSimCrashPlantedBugs plants each crash-safety bug and shows that the
// crash simulation finds it within maxSeeds seeds, and that the seed that
// found it fails again, with the same trace, on every replay.
func TestSimCrashPlantedBugs(t *testing.T) {
	lincheckPath(t)
	quietLogs(t)
	const maxSeeds, replays = 100, 10
	for _, bug := range []struct {
		name  string
		on    *bool
		fsync string
	}{
		{"write-acknowledged-before-its-sync", &plantedBugs.ackBeforeSync, FsyncAlways},
		{"read-of-a-write-not-synced", &plantedBugs.dirtyRead, FsyncAlways},
		{"torn-command-replayed", &plantedBugs.tornReplay, FsyncAlways}, // under everysec a crash leaves holes far more often than a torn end
		{"everysec-every-3s", &plantedBugs.slowEverySec, FsyncEverySec},
	} {
		t.Run(bug.name, func(t *testing.T) {
			*bug.on = true
			defer func() { *bug.on = false }()
			vis := t.TempDir()
			run := func(seed int64) (string, error) {
				w := sim.New(seed)
				defer w.Close()
				r := runCrash(t, w, bug.fsync)
				return w.TraceHex(), r.check(fmt.Sprintf("planted-%s-seed%d", bug.name, seed), vis)
			}
			found := int64(-1)
			var first error
			var trace string
			for seed := int64(1); seed <= maxSeeds; seed++ {
				if tr, err := run(seed); err != nil {
					found, first, trace = seed, err, tr
					break
				}
			}
			if found < 0 {
				t.Fatalf("not found in %d seeds", maxSeeds)
			}
			if !strings.HasPrefix(first.Error(), "porcupine: ") && !strings.Contains(first.Error(), "is not in the AOF its crash") &&
				!strings.Contains(first.Error(), "from what the crash kept") && !strings.Contains(first.Error(), "did not start on what the disk kept") {
				t.Fatalf("seed %d failed, but not the check of its history: %v", found, first)
			}
			t.Logf("found at seed %d (trace %s): %v", found, trace, firstLine(first))
			for i := range replays {
				tr, err := run(found)
				if err == nil || tr != trace || err.Error() != first.Error() {
					t.Fatalf("replay %d of seed %d: trace %s, error %v; want trace %s and a failure", i, found, tr, err, trace)
				}
			}
		})
	}
}
