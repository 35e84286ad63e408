package sim_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spindle-rt/spindle/fileio"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// A server and a client on two hosts of a simulated network: the world
// steps both loops on fake time, and the same seed gives the same run.
func Example() {
	w := sim.New(42)
	defer w.Close()
	srvHost, cliHost := w.Host("server"), w.Host("client")
	srv, cli := srvHost.Executor(), cliHost.Executor()

	l, err := netio.Listen(srv, "tcp", ":7000")
	if err != nil {
		panic(err)
	}
	future.Spawn(srv, func(ctx context.Context) (struct{}, error) {
		c, err := l.Accept().Await(ctx)
		if err != nil {
			return struct{}{}, err
		}
		c.Write([]byte("hello from " + c.LocalAddr().String()))
		return struct{}{}, c.Close()
	})
	var got string
	future.Spawn(cli, func(ctx context.Context) (struct{}, error) {
		c, err := netio.Dial(ctx, cli, "tcp", srvHost.Addr(7000)).Await(ctx)
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		for {
			b, err := c.Recv().Await(ctx)
			if err != nil {
				return struct{}{}, nil // io.EOF once the server has closed
			}
			got += string(b)
		}
	})
	w.RunUntil(func() bool { return false }, time.Second) // until the world is quiet
	fmt.Println(got)
	// Output: hello from 10.0.0.1:7000
}

// Executor.Now on a simulated loop is the world's fake clock, which starts
// at midnight UTC, 1 January 2000: an hour's sleep moves it by an hour, in
// no real time.
func Example_now() {
	w := sim.New(1)
	defer w.Close()
	ex := w.Host("server").Executor()
	future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
		fmt.Println("start:", ex.Now().Format(time.DateTime))
		_, err := future.Sleep(ex, time.Hour).Await(ctx)
		fmt.Println("after an hour:", ex.Now().Format(time.DateTime))
		return struct{}{}, err
	})
	w.RunUntil(func() bool { return false }, 2*time.Hour)
	// Output:
	// start: 2000-01-01 00:00:00
	// after an hour: 2000-01-01 01:00:00
}

// A host's program (Host.Start) runs again at every restart, on the disk
// the crash left: what it synced is there, what it did not may be lost.
func Example_crash() {
	w := sim.New(1)
	defer w.Close()
	db := w.Host("db")
	db.Start(func(h *sim.Host) {
		ex := h.Executor()
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			f, err := fileio.OpenFile(ex, "/log", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644).Await(ctx)
			if err != nil {
				return struct{}{}, err
			}
			st, err := f.Stat().Await(ctx)
			if err != nil {
				return struct{}{}, err
			}
			fmt.Println("boot: the log holds", st.Size(), "bytes")
			if _, err := f.Append([]byte("synced "), fileio.Durable).Await(ctx); err != nil {
				return struct{}{}, err
			}
			_, err = f.Append([]byte("not synced ")).Await(ctx)
			return struct{}{}, err
		})
	})
	w.RunFor(time.Second)
	db.Disk().Faults.CrashLose = 1 // a crash loses every write not synced
	w.Crash(db)
	fmt.Println("down:", db.Down())
	w.Restart(db)
	w.RunFor(time.Second)
	log, _ := db.Disk().ReadFile("/log")
	fmt.Printf("%q\n", log)
	// Output:
	// boot: the log holds 0 bytes
	// down: true
	// boot: the log holds 7 bytes
	// "synced synced not synced "
}
