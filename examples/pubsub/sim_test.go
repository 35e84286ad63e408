package main

// The server under simulation (package sim): subscribers that keep
// reading get every message of their topic, in each publisher's order;
// one that stops reading is disconnected by the output limit's rule
// (over the limit with nothing taken for a second, or past four times it).
//
//	go test ./examples/pubsub -run Sim -v
//	go test ./examples/pubsub -run Sim -sim.seed=7 -v
//
// The server keeps its subscribers in Go maps, whose iteration order no
// seed decides: a run is checked in full, but its trace is not replayed
// byte for byte (docs/simulation.md).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/sim"
)

// lineConn reads lines from a connection in a task.
type lineConn struct {
	c  *netio.Conn
	in []byte
}

func (l *lineConn) line(ctx context.Context) (string, error) {
	for {
		if i := bytes.IndexByte(l.in, '\n'); i >= 0 {
			s := string(l.in[:i])
			l.in = l.in[i+1:]
			return s, nil
		}
		b, err := l.c.Recv().Await(ctx)
		if err != nil {
			return "", err
		}
		l.in = append(l.in, b...)
	}
}

func simPubsub(w *sim.World) error {
	rng := w.Rand()
	f := w.Faults()
	f.ShortWrite = 0.1
	f.Window = 16 << 10
	f.MaxDelay = time.Duration(1+rng.Intn(1000)) * time.Microsecond

	const limit = 16 << 10
	srvH := w.Host("pubsub")
	ex := srvH.Executor(executor.WithName("pubsub"))
	s := New(ex)
	l, err := netio.Listen(ex, "tcp", ":7070", netio.WithOutputLimit(limit))
	if err != nil {
		return err
	}
	s.Serve(l)
	addr := srvH.Addr(7070)

	subH, pubH, slowH := w.Host("subs"), w.Host("pubs"), w.Host("slow")
	subEx, pubEx, slowEx := subH.Executor(), pubH.Executor(), slowH.Executor()
	topics := []string{"a", "b", "c"}
	nsubs, npubs, nmsgs := 3+rng.Intn(4), 1+rng.Intn(3), 60+rng.Intn(40)

	var errs []error
	subscribed, subsDone, pubsDone := 0, 0, 0
	slowCut, ended := false, false
	fail := func(err error) { errs = append(errs, err) }

	// Subscribers: one topic each; they read until they have every
	// message of it.
	subTopic := make([]string, nsubs)
	got := make([][]string, nsubs)
	for i := range nsubs {
		subTopic[i] = topics[rng.Intn(len(topics))]
		future.Spawn(subEx, func(ctx context.Context) (struct{}, error) {
			defer func() { subsDone++ }()
			c, err := netio.Dial(ctx, subEx, "tcp", addr).Await(ctx)
			if err != nil {
				fail(fmt.Errorf("subscriber %d: dial: %w", i, err))
				return struct{}{}, nil
			}
			defer c.Close()
			lc := &lineConn{c: c}
			c.Write([]byte("SUB " + subTopic[i] + "\n"))
			if ln, err := lc.line(ctx); err != nil || ln != "OK" {
				fail(fmt.Errorf("subscriber %d: SUB: %q, %v", i, ln, err))
				return struct{}{}, nil
			}
			subscribed++
			for {
				ln, err := lc.line(ctx)
				if err != nil {
					fail(fmt.Errorf("subscriber %d: after %d messages: %w", i, len(got[i]), err))
					return struct{}{}, nil
				}
				if ln == "MSG "+subTopic[i]+" end" {
					return struct{}{}, nil
				}
				got[i] = append(got[i], ln)
			}
		})
	}
	// The slow subscriber subscribes to every topic and never reads.
	future.Spawn(slowEx, func(ctx context.Context) (struct{}, error) {
		c, err := netio.Dial(ctx, slowEx, "tcp", addr).Await(ctx)
		if err != nil {
			fail(fmt.Errorf("slow subscriber: dial: %w", err))
			return struct{}{}, nil
		}
		defer c.Close()
		lc := &lineConn{c: c}
		for _, t := range topics {
			c.Write([]byte("SUB " + t + "\n"))
			if ln, err := lc.line(ctx); err != nil || ln != "OK" {
				fail(fmt.Errorf("slow subscriber: SUB: %q, %v", ln, err))
				return struct{}{}, nil
			}
		}
		subscribed++
		// Stop reading until the end is published, then read what is left:
		// the connection must have been cut.
		for !ended {
			if _, err := future.Sleep(slowEx, 10*time.Millisecond).Await(ctx); err != nil {
				return struct{}{}, nil
			}
		}
		for {
			if _, err := lc.line(ctx); err != nil {
				slowCut = true
				return struct{}{}, nil
			}
		}
	})
	// Publishers: wait for the subscriptions, then publish, each message
	// answered before the next.
	pad := strings.Repeat("x", 1024) // the slow subscriber is sent more than window and limit hold
	want := map[string][]string{}    // by topic, in publishing order per publisher
	for p := range npubs {
		msgs := make([]string, nmsgs)
		for k := range msgs {
			t := topics[rng.Intn(len(topics))]
			msgs[k] = t + " p" + fmt.Sprint(p) + "-" + fmt.Sprint(k) + " " + pad
			want[t] = append(want[t], msgs[k])
		}
		future.Spawn(pubEx, func(ctx context.Context) (struct{}, error) {
			defer func() { pubsDone++ }()
			for subscribed < nsubs+1 {
				if _, err := future.Sleep(pubEx, time.Millisecond).Await(ctx); err != nil {
					return struct{}{}, nil
				}
			}
			c, err := netio.Dial(ctx, pubEx, "tcp", addr).Await(ctx)
			if err != nil {
				fail(fmt.Errorf("publisher %d: dial: %w", p, err))
				return struct{}{}, nil
			}
			defer c.Close()
			lc := &lineConn{c: c}
			for _, m := range msgs {
				c.Write([]byte("PUB " + m + "\n"))
				if ln, err := lc.line(ctx); err != nil || !strings.HasPrefix(ln, "OK ") {
					fail(fmt.Errorf("publisher %d: PUB: %q, %v", p, ln, err))
					return struct{}{}, nil
				}
			}
			return struct{}{}, nil
		})
	}
	if !w.RunUntil(func() bool { return pubsDone == npubs || len(errs) > 0 }, time.Minute) {
		return fmt.Errorf("publishers not done after %v", w.Now())
	}
	// The end of each topic, once every publisher is done and the slow
	// subscriber's output has waited, over the limit and untaken, for
	// longer than netio lets it (a second of the loop's clock): writing the
	// end to it cuts it.
	future.Spawn(pubEx, func(ctx context.Context) (struct{}, error) {
		defer func() { ended = true }()
		if _, err := future.Sleep(pubEx, 2*time.Second).Await(ctx); err != nil {
			return struct{}{}, nil
		}
		c, err := netio.Dial(ctx, pubEx, "tcp", addr).Await(ctx)
		if err != nil {
			fail(err)
			return struct{}{}, nil
		}
		defer c.Close()
		lc := &lineConn{c: c}
		for _, t := range topics {
			c.Write([]byte("PUB " + t + " end\n"))
			if _, err := lc.line(ctx); err != nil {
				fail(err)
				return struct{}{}, nil
			}
		}
		return struct{}{}, nil
	})
	if !w.RunUntil(func() bool { return (ended && subsDone == nsubs && slowCut) || len(errs) > 0 }, time.Minute) {
		errs = append(errs, fmt.Errorf("after %v: end published %v, %d of %d subscribers done, slow subscriber cut %v", w.Now(), ended, subsDone, nsubs, slowCut))
	}
	for i := range nsubs {
		if err := samePerPublisher(want[subTopic[i]], got[i]); err != nil {
			errs = append(errs, fmt.Errorf("subscriber %d of %q: %w", i, subTopic[i], err))
		}
	}
	var st Stats
	read := false
	_ = ex.Submit(func() { st, read = s.snapshot(), true })
	w.RunUntil(func() bool { return read }, time.Second)
	if st.Dropped < 1 {
		errs = append(errs, fmt.Errorf("Stats.Dropped = %d, want the slow subscriber counted", st.Dropped))
	}
	return errors.Join(errs...)
}

// samePerPublisher reports how got ("MSG topic pP-K pad" lines) differs
// from want ("topic pP-K pad"): the same messages, each publisher's in
// its order.
func samePerPublisher(want, got []string) error {
	if len(want) != len(got) {
		return fmt.Errorf("got %d messages, want %d", len(got), len(want))
	}
	split := func(lines []string, prefix string) (map[string][]string, error) {
		m := map[string][]string{}
		for _, ln := range lines {
			f := strings.Fields(strings.TrimPrefix(ln, prefix))
			if !strings.HasPrefix(ln, prefix) || len(f) != 3 {
				return nil, fmt.Errorf("malformed message %.40q", ln)
			}
			pub, _, _ := strings.Cut(f[1], "-")
			m[pub] = append(m[pub], f[1])
		}
		return m, nil
	}
	w, _ := split(want, "")
	g, err := split(got, "MSG ")
	if err != nil {
		return err
	}
	for pub, ws := range w {
		gs := g[pub]
		if len(gs) != len(ws) {
			return fmt.Errorf("publisher %s: got %d messages, want %d", pub, len(gs), len(ws))
		}
		for k := range ws {
			if gs[k] != ws[k] {
				return fmt.Errorf("publisher %s: message %d is %s, want %s", pub, k, gs[k], ws[k])
			}
		}
	}
	return nil
}

// TestSimPubsub: a subscriber that keeps reading loses nothing, in every
// publisher's order; a slow one is disconnected at the output limit.
func TestSimPubsub(t *testing.T) {
	sim.Check(t, 20, func(t *testing.T, w *sim.World) {
		if err := simPubsub(w); err != nil {
			t.Fatal(err)
		}
	})
}
