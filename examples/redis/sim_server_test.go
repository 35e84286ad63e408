package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
			srv := simServerOf(h, Config{Shards: 2}, func(v any) { t.Errorf("panic on a shard: %v", v) })
			if err := srv.Listen("tcp", fmt.Sprintf(":%d", simPort)); err != nil {
				t.Fatal(err)
			}
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
