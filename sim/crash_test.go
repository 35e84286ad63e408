package sim_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
	"github.com/spindle-rt/spindle/sim"
)

// recLen is the length of one record of the crash test's log.
const recLen = 16

// rec is the record of incarnation inc, number seq: "r IIII SSSSSSSS\n".
func rec(inc, seq int) []byte { return fmt.Appendf(nil, "r %04d %08d\n", inc, seq) }

// wholeRecords returns how many bytes of data, from the start, are whole
// records.
func wholeRecords(data []byte) int {
	n := 0
	for len(data)-n >= recLen {
		r := data[n : n+recLen]
		if r[0] != 'r' || r[recLen-1] != '\n' {
			break
		}
		n += recLen
	}
	return n
}

// crashLog is what the crash test knows of the server's log: the bytes
// every incarnation appended (after what it recovered), and how far they
// were synced as its program saw it.
type crashLog struct {
	want      []byte // the log as written: recovered, then appended
	synced    int    // bytes of want a completed Sync covered
	inc       int    // incarnations started
	recovered []int  // per incarnation: bytes found whole at its start
	ghosts    []error
	ready     bool // the running incarnation has recovered and listens
}

// logServer is the server host's program: it recovers its log (keeping
// the whole records, cutting a torn tail), then appends records and syncs
// each, and serves an echo on port 7000; a task of it that is unwound by
// a crash tries to leave a trace (a file, a connection) and must fail.
func logServer(t *testing.T, w *sim.World, lg *crashLog) func(h *sim.Host) {
	return func(h *sim.Host) {
		lg.inc++
		inc := lg.inc
		lg.ready = false
		ex := h.Executor(executor.WithName(fmt.Sprintf("server#%d", inc)))
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			f, err := fileio.OpenFile(ex, "/log", os.O_RDWR|os.O_CREATE, 0o644).Await(ctx)
			if err != nil {
				t.Errorf("incarnation %d: open: %v", inc, err)
				return struct{}{}, nil
			}
			st, err := f.Stat().Await(ctx)
			if err != nil {
				t.Errorf("incarnation %d: stat: %v", inc, err)
				return struct{}{}, nil
			}
			var data []byte
			if st.Size() > 0 {
				if data, err = f.ReadAt(0, int(st.Size())).Await(ctx); err != nil {
					t.Errorf("incarnation %d: read: %v", inc, err)
					return struct{}{}, nil
				}
			}
			whole := wholeRecords(data)
			if lg.synced > len(data) || !bytes.Equal(data[:lg.synced], lg.want[:lg.synced]) {
				t.Errorf("incarnation %d: the log lost synced bytes: %d synced, %d found (or they differ)", inc, lg.synced, len(data))
			}
			if whole < lg.synced {
				t.Errorf("incarnation %d: %d bytes of whole records, %d were synced", inc, whole, lg.synced)
			}
			lg.recovered = append(lg.recovered, whole)
			if whole < len(data) {
				if _, err := f.Truncate(int64(whole)).Await(ctx); err != nil {
					t.Errorf("incarnation %d: truncate: %v", inc, err)
					return struct{}{}, nil
				}
			}
			lg.want = append(lg.want[:0], data[:whole]...)
			lg.synced = whole
			l := echoServer(t, ex, 7000)
			_ = l
			lg.ready = true
			rng := w.Rand()
			for seq := 0; seq < 200; seq++ {
				r := rec(inc, seq)
				if _, err := f.WriteAt(r, int64(len(lg.want))).Await(ctx); err != nil {
					return struct{}{}, nil // the crash unwinds the task here, or below
				}
				lg.want = append(lg.want, r...)
				if _, err := f.Sync().Await(ctx); err != nil {
					return struct{}{}, nil
				}
				lg.synced = len(lg.want)
				if _, err := future.Sleep(ex, time.Duration(rng.Intn(500))*time.Microsecond).Await(ctx); err != nil {
					return struct{}{}, nil
				}
			}
			return struct{}{}, nil
		})
		// A task that a crash unwinds: whatever it tries then must fail.
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			_, err := future.Sleep(ex, 24*time.Hour).Await(ctx)
			if err == nil {
				return struct{}{}, nil
			}
			_, ferr := fileio.Create(ex, fmt.Sprintf("/ghost%d", inc)).Await(context.Background())
			_, derr := netio.Dial(context.Background(), ex, "tcp", "10.0.0.2:7001").Await(context.Background())
			lg.ghosts = append(lg.ghosts, err, ferr, derr)
			return struct{}{}, nil
		})
	}
}

// connEnd is how a client's connection ended.
type connEnd struct {
	inc       int // the server incarnation it was made to
	err       error
	atRestart bool // ended before the restart that followed its incarnation's crash
}

// crashRun runs a server host crashed and restarted rounds times, at
// steps the seed draws, and clients on another host that keep pinging it
// over connections they open again when one ends. It returns the
// connections' ends.
func crashRun(t *testing.T, w *sim.World, rounds int) []connEnd {
	srvH, cliH := w.Host("server"), w.Host("client")
	lg := &crashLog{}
	srvH.Start(logServer(t, w, lg))
	cli := cliH.Executor(executor.WithName("client"))
	echoServer(t, cli, 7001) // what the dead incarnation's dial would reach
	rng := w.Rand()
	var ends []connEnd
	pings, refused := 0, 0
	restarts := 0
	for c := 0; c < 3; c++ {
		future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
			for {
				inc := lg.inc
				conn, err := netio.Dial(ctx, cli, "tcp", srvH.Addr(7000)).Await(ctx)
				if err != nil {
					if errors.Is(err, executor.ErrClosed) {
						return struct{}{}, nil
					}
					// Refused or unanswered while the server is down, or
					// reset by the crash before the connect ended.
					if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ETIMEDOUT) && !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("dial: %v, want ECONNREFUSED, ETIMEDOUT or ECONNRESET", err)
					}
					refused++
					if _, err := future.Sleep(cli, 10*time.Millisecond).Await(ctx); err != nil {
						return struct{}{}, nil
					}
					continue
				}
				before := restarts
				for {
					if _, err = conn.Write([]byte("ping")); err != nil {
						_, err = conn.Recv().Await(ctx) // the connection's error
						break
					}
					var got []byte
					for len(got) < 4 && err == nil {
						var b []byte
						if b, err = conn.Recv().Await(ctx); err == nil {
							got = append(got, b...)
						}
					}
					if err != nil {
						break
					}
					pings++
					if _, err = future.Sleep(cli, time.Duration(1+rng.Intn(2000))*time.Microsecond).Await(ctx); err != nil {
						break
					}
				}
				conn.Close()
				if errors.Is(err, executor.ErrClosed) {
					return struct{}{}, nil
				}
				ends = append(ends, connEnd{inc: inc, err: err, atRestart: restarts == before})
			}
		})
	}
	for r := 0; r < rounds; r++ {
		if !w.RunUntil(func() bool { return lg.ready }, time.Minute) {
			t.Fatalf("round %d: the server did not recover", r)
		}
		at := w.Steps() + 1 + uint64(rng.Intn(400))
		w.AtStep(at, func() {
			if w.Steps() != at {
				t.Errorf("AtStep(%d) ran at step %d", at, w.Steps())
			}
			w.Crash(srvH)
		})
		if !w.RunUntil(srvH.Down, time.Minute) {
			t.Fatalf("round %d: no crash at step %d (%d steps)", r, at, w.Steps())
		}
		if _, ok := srvH.Disk().ReadFile(fmt.Sprintf("/ghost%d", lg.inc)); ok {
			t.Errorf("round %d: the dead incarnation created a file", r)
		}
		w.RunFor(time.Duration(1+rng.Intn(3000)) * time.Millisecond)
		for _, e := range ends {
			if e.inc == lg.inc && !errors.Is(e.err, syscall.ECONNRESET) {
				t.Errorf("round %d: a connection to the crashed server ended with %v, want ECONNRESET or nothing", r, e.err)
			}
		}
		restarts++
		w.Restart(srvH)
	}
	if !w.RunUntil(func() bool { return lg.ready }, time.Minute) {
		t.Fatal("the last incarnation did not recover")
	}
	p := pings
	if !w.RunUntil(func() bool { return pings > p }, 2*time.Minute) {
		for _, e := range ends {
			t.Logf("%+v", e)
		}
		t.Logf("refused %d at %v", refused, w.Now())
		t.Errorf("no ping answered after the last restart (%d answered in all)", pings)
	}
	for i, g := range lg.ghosts {
		if i%3 != 0 && g == nil {
			t.Errorf("a dead incarnation's operation succeeded (%d of %v)", i, lg.ghosts)
		}
	}
	if len(lg.ghosts) != 3*rounds {
		t.Errorf("%d dead incarnations' tasks unwound, want %d", len(lg.ghosts)/3, rounds)
	}
	if lg.inc != rounds+1 || len(lg.recovered) != rounds+1 {
		t.Errorf("%d incarnations, %d recovered, want %d", lg.inc, len(lg.recovered), rounds+1)
	}
	return ends
}

// TestSimCrash crashes a server at steps the seed draws and restarts it:
// what it synced before a crash is there after it, its peers see resets
// or silence (then a reset, once it is up again) but never an end, and
// the tasks of its dead incarnations are unwound without an effect.
func TestSimCrash(t *testing.T) {
	var resets, silent int
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		for _, e := range crashRun(t, w, 3) {
			switch {
			case e.inc > 3:
			case errors.Is(e.err, io.EOF) || e.err == nil:
				t.Errorf("a connection to incarnation %d ended with %v: the crash closed it", e.inc, e.err)
			case !errors.Is(e.err, syscall.ECONNRESET):
				t.Errorf("a connection to incarnation %d ended with %v, want ECONNRESET", e.inc, e.err)
			case e.atRestart:
				resets++
			default:
				silent++
			}
		}
	})
	if resets == 0 || silent == 0 {
		t.Errorf("%d connections reset at the crash, %d silent until the restart: want both", resets, silent)
	}
}

// TestSimCrashDeterminism runs crashes twice per seed: one trace.
func TestSimCrashDeterminism(t *testing.T) {
	checkReplays(t, 4, func(w *sim.World) { crashRun(t, w, 2) })
}

// TestCrashMisuse: the panics of a crash or restart that cannot be.
func TestCrashMisuse(t *testing.T) {
	cases := []struct {
		name, want string
		fn         func(w *sim.World, h *sim.Host)
	}{
		{"crash of a down host", `sim: Crash of host "h", which is down`, func(w *sim.World, h *sim.Host) { w.Crash(h); w.Crash(h) }},
		{"restart of an up host", `sim: Restart of host "h", which is up`, func(w *sim.World, h *sim.Host) { w.Restart(h) }},
		{"executor on a down host", `sim: Executor on host "h", which is down`, func(w *sim.World, h *sim.Host) { w.Crash(h); h.Executor() }},
		{"group on a down host", `sim: Group on host "h", which is down`, func(w *sim.World, h *sim.Host) { w.Crash(h); h.Group(2) }},
		{"start twice", `sim: Start of host "h", which has a program`, func(w *sim.World, h *sim.Host) {
			h.Start(func(*sim.Host) {})
			h.Start(func(*sim.Host) {})
		}},
		{"crash of another world's host", "sim: Crash of a host of another world", func(w *sim.World, h *sim.Host) {
			o := sim.New(2)
			defer o.Close()
			o.Crash(h)
		}},
		{"stall of a crashed executor", "sim: Stall of an executor the world does not step", func(w *sim.World, h *sim.Host) {
			ex := h.Executor()
			w.Crash(h)
			w.Stall(ex, time.Second)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := sim.New(1)
			defer w.Close()
			h := w.Host("h")
			defer func() {
				v := recover()
				if s, _ := v.(string); !strings.HasPrefix(s, c.want) {
					t.Fatalf("panic %v, want %q", v, c.want)
				}
			}()
			c.fn(w, h)
		})
	}
}

// A task may crash its own host: the crash takes effect when the step
// returns (Down is true at once), the rest of the task never runs, and a
// restart brings the program up again.
func TestSimCrashFromTask(t *testing.T) {
	sim.Check(t, 3, func(t *testing.T, w *sim.World) {
		h := w.Host("h")
		var log []string
		h.Start(func(h *sim.Host) {
			ex := h.Executor()
			future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
				log = append(log, "start")
				if len(log) > 1 {
					return struct{}{}, nil
				}
				w.Crash(h)
				log = append(log, fmt.Sprintf("down=%v", h.Down()))
				if _, err := future.Sleep(ex, time.Millisecond).Await(ctx); err != nil {
					log = append(log, "unwound: "+err.Error())
					return struct{}{}, nil
				}
				log = append(log, "woke")
				return struct{}{}, nil
			})
		})
		w.RunFor(time.Second)
		if !h.Down() {
			t.Fatal("the host is up after crashing itself")
		}
		w.Restart(h)
		w.RunFor(time.Second)
		want := []string{"start", "down=true", "unwound: " + executor.ErrClosed.Error(), "start"}
		if fmt.Sprint(log) != fmt.Sprint(want) {
			t.Fatalf("log %q, want %q", log, want)
		}
	})
}

// AtStep runs its functions before the step they name, in the order they
// were given, and one whose step has passed at the next step.
func TestAtStep(t *testing.T) {
	w := sim.New(1)
	defer w.Close()
	ex := w.Host("h").Executor()
	var tick func()
	tick = func() { ex.Submit(tick) }
	ex.Submit(tick)
	var got []string
	note := func(s string) func() {
		return func() { got = append(got, fmt.Sprintf("%s@%d", s, w.Steps())) }
	}
	w.AtStep(5, note("a"))
	w.AtStep(3, note("b"))
	w.AtStep(5, note("c"))
	w.AtStep(0, note("d"))
	for w.Steps() < 8 {
		w.Step()
	}
	w.AtStep(2, note("late"))
	w.Step()
	want := "[d@0 b@3 a@5 c@5 late@8]"
	if fmt.Sprint(got) != want {
		t.Fatalf("ran %v, want %s", got, want)
	}
}

// The faults a test sets through World.Faults and Disk.Faults are the
// ones the network and the disk draw from.
func TestFaultsReachTheWorld(t *testing.T) {
	w := sim.New(1)
	defer w.Close()
	srvH, cliH := w.Host("server"), w.Host("client")
	echoServer(t, srvH.Executor(), 7000)
	w.Faults().Refuse = 1
	cliH.Disk().Faults.Capacity = 10
	ex := cliH.Executor()
	var dialErr, writeErr error
	done := future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		_, dialErr = netio.Dial(ctx, ex, "tcp", srvH.Addr(7000)).Await(ctx)
		f, err := fileio.Create(ex, "/f").Await(ctx)
		if err != nil {
			return struct{}{}, err
		}
		_, writeErr = f.WriteAt(make([]byte, 11), 0).Await(ctx)
		return struct{}{}, nil
	})
	if !w.RunUntil(done.Ready, time.Minute) {
		t.Fatal("the task did not finish")
	}
	if !errors.Is(dialErr, syscall.ECONNREFUSED) {
		t.Errorf("dial with Faults().Refuse = 1: %v, want ECONNREFUSED", dialErr)
	}
	if !errors.Is(writeErr, syscall.ENOSPC) {
		t.Errorf("a write past Disk().Faults.Capacity: %v, want ENOSPC", writeErr)
	}
	if got := cliH.Disk().Used(); got != 10 {
		t.Errorf("the disk holds %d bytes, want its capacity, 10", got)
	}
}

// A file operation in flight when its host crashes never happens, and
// one made by the next incarnation does.
func TestSimCrashFileOpInFlight(t *testing.T) {
	w := sim.New(1)
	defer w.Close()
	h := w.Host("h")
	h.Disk().Faults.MinLatency, h.Disk().Faults.MaxLatency = time.Second, time.Second
	var started bool
	var errs []error
	h.Start(func(h *sim.Host) {
		ex := h.Executor()
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			f := fileio.Create(ex, "/inflight")
			started = true
			_, err := f.Await(ctx)
			errs = append(errs, err)
			return struct{}{}, nil
		})
	})
	// Another host's task crashes h half way through the create.
	other := w.Host("o").Executor()
	future.Spawn(other, func(ctx context.Context) (struct{}, error) {
		if _, err := future.Sleep(other, 500*time.Millisecond).Await(ctx); err != nil {
			return struct{}{}, err
		}
		if !started {
			t.Error("the create did not start")
		}
		if _, ok := h.Disk().ReadFile("/inflight"); ok {
			t.Error("the create landed before its latency")
		}
		w.Crash(h)
		return struct{}{}, nil
	})
	w.RunFor(2 * time.Second)
	if !h.Down() {
		t.Fatal("no crash")
	}
	if _, ok := h.Disk().ReadFile("/inflight"); ok {
		t.Fatal("a create in flight at the crash landed after it")
	}
	w.Restart(h)
	w.RunFor(2 * time.Second)
	if _, ok := h.Disk().ReadFile("/inflight"); !ok {
		t.Fatal("the restarted program's create did not land")
	}
	if len(errs) != 2 || !errors.Is(errs[0], executor.ErrClosed) || errs[1] != nil {
		t.Fatalf("the creates ended with %v, want [executor.ErrClosed <nil>]", errs)
	}
}

// A host whose program serves on a shard group, with calls between its
// shards in flight, crashes and restarts as a host of one executor does:
// the clients' connections end in resets, the new incarnation serves.
func TestSimCrashGroup(t *testing.T) {
	sim.Check(t, 10, func(t *testing.T, w *sim.World) {
		srvH, cliH := w.Host("server"), w.Host("client")
		calls := 0
		srvH.Start(func(h *sim.Host) {
			g := h.Group(3)
			_, err := netio.ServeGroup(g, "tcp", ":7000", func(c *netio.Conn) {
				// Answer through another shard, as a sharded store does.
				echoConn(c, func(ctx context.Context, b []byte) ([]byte, error) {
					msg := string(b)
					r, err := shard.Call(g, len(msg)%g.Len(), func() (string, error) {
						calls++
						return msg, nil
					}).Await(ctx)
					return []byte(r), err
				})
			})
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		cli := cliH.Executor()
		answered, ended := 0, 0
		for i := 0; i < 4; i++ {
			future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
				for {
					c, err := netio.Dial(ctx, cli, "tcp", srvH.Addr(7000)).Await(ctx)
					if err != nil {
						if errors.Is(err, executor.ErrClosed) {
							return struct{}{}, nil
						}
						if _, err := future.Sleep(cli, 5*time.Millisecond).Await(ctx); err != nil {
							return struct{}{}, nil
						}
						continue
					}
					for err == nil {
						if _, err = c.Write([]byte("hello")); err == nil {
							if _, err = c.Recv().Await(ctx); err == nil {
								answered++
							}
						}
					}
					c.Close()
					if errors.Is(err, executor.ErrClosed) {
						return struct{}{}, nil
					}
					if !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("a connection ended with %v, want ECONNRESET", err)
					}
					ended++
				}
			})
		}
		rng := w.Rand()
		for r := 0; r < 2; r++ {
			w.RunUntil(func() bool { return answered > 50*(r+1) }, time.Minute)
			w.AtStep(w.Steps()+uint64(1+rng.Intn(50)), func() { w.Crash(srvH) })
			w.RunUntil(srvH.Down, time.Minute)
			w.RunFor(time.Duration(rng.Intn(100)) * time.Millisecond)
			w.Restart(srvH)
		}
		a := answered
		if !w.RunUntil(func() bool { return answered > a+10 }, 5*time.Minute) {
			t.Fatalf("the restarted group answered %d after the last restart", answered-a)
		}
		if ended < 4 || calls == 0 {
			t.Fatalf("%d connections ended, %d cross-shard calls", ended, calls)
		}
	})
}
