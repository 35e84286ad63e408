package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/sim"
)

// TestListenAfterEnd: a Listen after Shutdown or Close fails with
// ErrServerClosed, instead of accepting connections only to end them; a
// Shutdown after Close, with no connection left, returns at once.
func TestListenAfterEnd(t *testing.T) {
	for _, closeFirst := range []bool{true, false} {
		t.Run(fmt.Sprint("close first=", closeFirst), func(t *testing.T) {
			w := sim.New(1)
			defer w.Close()
			h := w.Host("redis")
			srv := simServer(h, 2, 0, func(v any) { t.Errorf("panic on a shard: %v", v) })
			if closeFirst {
				if err := srv.Close(); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v, want it done at once", err)
			}
			if err := srv.Listen("tcp", fmt.Sprintf(":%d", simPort)); !errors.Is(err, ErrServerClosed) {
				t.Fatalf("Listen after the end: %v, want ErrServerClosed", err)
			}
		})
	}
}

// TestSimSetKeepTTLAfterExpiry: SET KEEPTTL of a key whose time has
// passed, not yet deleted (neither read since nor met by the active
// expiry), makes a new key without a time to live, as redis-server does:
// the time that has passed is not kept, which would expire the new value
// at once.
func TestSimSetKeepTTLAfterExpiry(t *testing.T) {
	sim.Check(t, 3, func(t *testing.T, w *sim.World) {
		srvH, cliH := w.Host("redis"), w.Host("client")
		srv := simServerOf(srvH, Config{Shards: 2, ExpireInterval: time.Hour}, func(v any) { t.Errorf("panic on a shard: %v", v) })
		if err := srv.Listen("tcp", fmt.Sprintf(":%d", simPort)); err != nil {
			t.Fatal(err)
		}
		cli := cliH.Executor(executor.WithName("client"))
		r := &simRun{w: w, addr: srvH.Addr(simPort)}
		var got []string
		f := future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
			c, err := r.dial(ctx, cli)
			if err != nil {
				return struct{}{}, err
			}
			defer c.Close()
			p := &replies{c: c}
			for _, step := range [][]byte{
				cmd("SET", "k", "v", "PX", "10"),
				nil, // the time passes
				append(append(cmd("SET", "k", "v2", "KEEPTTL"), cmd("GET", "k")...), cmd("TTL", "k")...),
			} {
				if step == nil {
					if _, err := future.Sleep(cli, 50*time.Millisecond).Await(ctx); err != nil {
						return struct{}{}, err
					}
					continue
				}
				c.Write(step)
				for range strings.Count(string(step), "*") {
					reply, err := p.next(ctx)
					if err != nil {
						return struct{}{}, err
					}
					got = append(got, reply)
				}
			}
			return struct{}{}, nil
		})
		if !w.RunUntil(f.Ready, time.Minute) {
			t.Fatalf("no end after %v: got %q", w.Now(), got)
		}
		if r, _ := f.Peek(); r.Err != nil {
			t.Fatal(r.Err)
		}
		if want := []string{simple("OK"), simple("OK"), bulk("v2"), integer(-1)}; !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
