package hooks_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
)

// A context carries values in (WithValue, read by FromContext and by loop
// code run for it) and out (NewContext, a task's ctx, fn's ctx in Go).
func TestContextCarriesValues(t *testing.T) {
	ex := executor.New(executor.WithName("ctx"))
	ex.Start()
	defer ex.Close()
	id := hooks.NewStorage[string]()
	n := hooks.NewStorage[int]()
	ctx := n.WithValue(id.WithValue(context.Background(), "req-1"), 7)
	if v, ok := id.FromContext(ctx); !ok || v != "req-1" {
		t.Fatalf("FromContext = %q, %v", v, ok)
	}
	if _, ok := id.FromContext(context.Background()); ok {
		t.Fatal("FromContext of a bare context reported a value")
	}
	// in: Do and CallContext run fn, and what it registers, under ctx's values
	get := func() (string, error) {
		v, _ := id.Get(ex)
		k, _ := n.Get(ex)
		return v + "/" + string(rune('0'+k)), nil
	}
	for name, f := range map[string]func() (string, error){
		"Do": func() (string, error) { return future.Do(ctx, ex, get) },
		"CallContext": func() (string, error) {
			return spindletest.Await(t, future.CallContext(ctx, ex, get))
		},
		"Do, then a callback": func() (string, error) {
			later, err := future.Do(ctx, ex, func() (*future.Future[string], error) {
				return future.Then(future.Sleep(ex, 0), func(struct{}) (string, error) { return get() }), nil
			})
			if err != nil {
				return "", err
			}
			return spindletest.Await(t, later)
		},
	} {
		if v, err := f(); err != nil || v != "req-1/7" {
			t.Errorf("%s: fn saw %q, %v; want req-1/7", name, v, err)
		}
	}
	if v, _ := spindletest.Await(t, future.Call(ex, get)); v != "/0" {
		t.Errorf("Call without a context saw %q, want no values", v)
	}
	// out: NewContext, a task's ctx and Go's ctx carry the loop's values
	type outs struct {
		made        string
		task, goFut *future.Future[string]
	}
	o, err := future.Do(ctx, ex, func() (outs, error) {
		var o outs
		o.made, _ = id.FromContext(hooks.NewContext(context.Background(), ex))
		o.task = future.Spawn(ex, func(tctx context.Context) (string, error) {
			v, _ := id.FromContext(tctx)
			return v, nil
		})
		o.goFut = future.Go(ex, func(gctx context.Context) (string, error) {
			v, _ := id.FromContext(gctx)
			return v, nil
		})
		return o, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.made != "req-1" {
		t.Errorf("NewContext carried %q, want req-1", o.made)
	}
	if v, _ := spindletest.Await(t, o.task); v != "req-1" {
		t.Errorf("the task's ctx carried %q, want req-1", v)
	}
	if v, _ := spindletest.Await(t, o.goFut); v != "req-1" {
		t.Errorf("Go's ctx carried %q, want req-1", v)
	}
}

// RunValue binds a value for fn and its continuations, returns fn's
// result, and restores the frame; RunContext runs fn under a context's
// values. Both panic off the loop, naming the package.
func TestRunValueAndRunContext(t *testing.T) {
	ex := executor.New()
	defer ex.Close()
	id := hooks.NewStorage[string]()
	var f *future.Future[string]
	var after, inCtx string
	var afterOK bool
	ex.Drive(func() {
		f = hooks.RunValue(id, ex, "a", func() *future.Future[string] {
			return future.Then(future.Resolved(ex, 1), func(int) (string, error) {
				v, _ := id.Get(ex)
				return v, nil
			})
		})
		after, afterOK = id.Get(ex)
		hooks.RunContext(id.WithValue(context.Background(), "c"), ex, func() { inCtx, _ = id.Get(ex) })
	})
	if v, err := spindletest.Await(t, f); err != nil || v != "a" {
		t.Errorf("continuation registered under RunValue saw %q, %v", v, err)
	}
	if afterOK {
		t.Errorf("after RunValue the value %q is still bound", after)
	}
	if inCtx != "c" {
		t.Errorf("RunContext: fn saw %q, want c", inCtx)
	}
	spindletest.MustPanic(t, "hooks: RunValue", "does not hold the loop", func() {
		hooks.RunValue(id, ex, "x", func() int { return 0 })
	})
	spindletest.MustPanic(t, "hooks: RunContext", "does not hold the loop", func() {
		hooks.RunContext(context.Background(), ex, func() {})
	})
	spindletest.MustPanic(t, "hooks: NewContext", "does not hold the loop", func() {
		hooks.NewContext(context.Background(), ex)
	})
	spindletest.MustPanic(t, "hooks: RunValue with nil func", "", func() {
		hooks.RunValue[string, int](id, ex, "x", nil)
	})
}

// LogHandler adds the values (and the executor's name) of the loop the
// caller holds, else of the record's context, and nothing elsewhere; groups
// and attributes of the logger still work.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer // slog's handler serialises its writes
	id := hooks.NewStorage[string]()
	user := hooks.NewStorage[int]()
	text := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: withoutTime})
	logger := slog.New(hooks.NewLogHandler(text, hooks.Log("request_id", id), hooks.Log("user", user)))
	ex := executor.New(executor.WithName("logs"))
	ex.Start()
	defer ex.Close()
	ctx := id.WithValue(context.Background(), "r1")
	task, err := future.Do(ctx, ex, func() (*future.Future[struct{}], error) {
		logger.Info("callback")
		user.Run(ex, 5, func() { logger.With("k", "v").Info("nested") })
		return future.Spawn(ex, func(tctx context.Context) (struct{}, error) {
			logger.InfoContext(tctx, "task")
			// the task hands its ctx to a goroutine off the loop
			_, err := future.Go(ex, func(gctx context.Context) (struct{}, error) {
				logger.InfoContext(gctx, "off the loop")
				logger.Info("off the loop, no ctx")
				return struct{}{}, nil
			}).Await(tctx)
			return struct{}{}, err
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spindletest.Await(t, task); err != nil {
		t.Fatal(err)
	}
	logger.Info("outside")
	logger.InfoContext(ctx, "outside, with ctx")
	want := []string{
		`level=INFO msg=callback executor=logs request_id=r1`,
		`level=INFO msg=nested k=v executor=logs request_id=r1 user=5`,
		`level=INFO msg=task executor=logs request_id=r1`,
		`level=INFO msg="off the loop" executor=logs request_id=r1`,
		`level=INFO msg="off the loop, no ctx"`,
		`level=INFO msg=outside`,
		`level=INFO msg="outside, with ctx" request_id=r1`,
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	spindletest.MustPanic(t, "hooks: NewLogHandler with nil handler", "", func() { hooks.NewLogHandler(nil) })
	spindletest.MustPanic(t, "hooks: NewLogHandler with a zero LogAttr", "", func() { hooks.NewLogHandler(text, hooks.LogAttr{}) })
}
