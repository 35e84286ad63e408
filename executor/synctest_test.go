//go:build go1.25

package executor_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
)

// TestSessionExpiry is the test that docs/testing.md walks through: loop
// code with a 30-minute timer, tested in a testing/synctest bubble, where
// time is fake and the test takes no real time.
func TestSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := executor.New() // made and started inside the bubble
		ex.Start()
		defer ex.Close() // the bubble ends only once the loop has

		sessions := map[string]bool{} // loop-owned
		ctx := context.Background()
		_, _ = future.Do(ctx, ex, func() (struct{}, error) {
			sessions["s1"] = true
			ex.AfterFunc(30*time.Minute, func() { delete(sessions, "s1") })
			return struct{}{}, nil
		})
		alive := func() bool {
			ok, _ := future.Do(ctx, ex, func() (bool, error) { return sessions["s1"], nil })
			return ok
		}

		time.Sleep(29 * time.Minute) // fake time: returns at once
		if !alive() {
			t.Fatal("the session expired before 30 minutes")
		}
		time.Sleep(time.Minute)
		synctest.Wait() // until the loop has run the due timer and sleeps again
		if alive() {
			t.Fatal("the session outlived 30 minutes")
		}
	})
}
