//go:build linux && !purego

package fileio

import (
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/internal/loop"
	"github.com/spindle-rt/spindle/internal/uring"
)

// otherIO is an IO that is not the loop's ring (as netio's epoll is).
type otherIO struct{ wake chan struct{} }

func (o *otherIO) Wait(d time.Duration) {
	if d < 0 {
		d = time.Hour
	}
	select {
	case <-o.wake:
	case <-time.After(d):
	}
}
func (o *otherIO) Dispatch() {}
func (o *otherIO) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// TestEngineChoice checks which engine serves a loop's files: the ring
// when the loop waits in one already or when Config or SPINDLE_NETIO asks
// for it; never a ring made on a loop that waits in another IO; the pool
// when asked for, whatever the loop has.
func TestEngineChoice(t *testing.T) {
	onRing(t, EngineURing)
	cases := []struct {
		name  string
		env   string
		eng   Engine
		setup string // "ring": the loop has its ring already; "other": it waits in another IO
		want  Engine
	}{
		{"default", "", EngineAuto, "", EnginePool},
		{"SPINDLE_NETIO=epoll", "epoll", EngineAuto, "", EnginePool},
		{"SPINDLE_NETIO=uring", "uring", EngineAuto, "", EngineURing},
		{"SPINDLE_NETIO=io_uring", "io_uring", EngineAuto, "", EngineURing},
		{"the loop's ring", "", EngineAuto, "ring", EngineURing},
		{"Config io_uring", "", EngineURing, "", EngineURing},
		{"Config pool, the loop's ring", "uring", EnginePool, "ring", EnginePool},
		{"SPINDLE_NETIO=uring, the loop waits in epoll", "uring", EngineAuto, "other", EnginePool},
		{"SPINDLE_NETIO=uring, netio.Use chose epoll", "uring", EngineAuto, "declined", EnginePool},
		{"Config io_uring, netio.Use chose epoll", "", EngineURing, "declined", EngineURing},
		{"Config io_uring, the loop waits in epoll", "", EngineURing, "other", EnginePool},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SPINDLE_NETIO", c.env)
			ex := executor.New()
			if err := Configure(ex, Config{Engine: c.eng}); err != nil {
				t.Fatal(err)
			}
			ex.Start()
			defer ex.Close()
			got, err := wait(t, future.Call(ex, func() (Engine, error) {
				lp := (*loop.Loop)(ex)
				switch c.setup {
				case "ring":
					if _, err := uring.Of(lp); err != nil {
						return "", err
					}
				case "other":
					lp.SetIO(&otherIO{wake: make(chan struct{}, 1)})
				case "declined":
					uring.Decline(lp, true)
				}
				st, err := stateOf(lp)
				if err != nil {
					return "", err
				}
				if c.want == EnginePool && c.setup != "ring" && uring.Existing(lp) != nil {
					t.Error("a ring was made for the loop, which the pool serves")
				}
				return Engine(st.eng.name()), nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("engine %q, want %q", got, c.want)
			}
			if s := StatsOf(ex); s.Engine != string(c.want) {
				t.Fatalf("Stats.Engine %q, want %q", s.Engine, c.want)
			}
		})
	}
}

// TestConfigureEngine checks that an engine Configure does not know is
// refused.
func TestConfigureEngine(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	if err := Configure(ex, Config{Engine: "aio"}); err == nil {
		t.Fatal(`Configure with Engine "aio" succeeded`)
	}
}

// TestRingFallback checks that an op whose operation the kernel's ring
// lacks goes to the engine's pool, and the others stay on the ring.
func TestRingFallback(t *testing.T) {
	onRing(t, EngineURing)
	defer uring.Lack(uring.OpFtruncate)()
	ex := executor.New()
	Configure(ex, Config{Engine: EngineURing})
	ex.Start()
	defer ex.Close()
	f, err := wait(t, Create(ex, t.TempDir()+"/f"))
	if err != nil {
		t.Fatal(err)
	}
	var e *ringEngine
	ex.Submit(func() { e = f.st.eng.(*ringEngine) })
	if _, err := wait(t, f.WriteAt([]byte("hello"), 0)); err != nil {
		t.Fatal(err)
	}
	if pooled, _ := wait(t, future.Call(ex, func() (bool, error) { return e.pool != nil, nil })); pooled {
		t.Fatal("a write went to the pool, with WRITE on the ring")
	}
	if _, err := wait(t, f.Truncate(2)); err != nil {
		t.Fatal(err)
	}
	if pooled, _ := wait(t, future.Call(ex, func() (bool, error) { return e.pool != nil, nil })); !pooled {
		t.Fatal("a truncate did not go to the pool, with FTRUNCATE lacking")
	}
	if fi, err := wait(t, f.Stat()); err != nil || fi.Size() != 2 {
		t.Fatalf("Stat after Truncate(2): %v %v", fi, err)
	}
	if _, err := wait(t, f.Close()); err != nil {
		t.Fatal(err)
	}
}
