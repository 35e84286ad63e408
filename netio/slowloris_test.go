package netio_test

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"testing"
)

// Slow peers that send one byte at a time, each waiting for its echo
// before the next, beside good clients making whole round trips on the
// same loop: every slow peer gets every byte back in order, and every
// good client every reply; a set of peers that stall halfway through
// (holding their connection open with bytes sent and none more coming)
// holds nobody up. No timing is asserted: the bytes and their order are.
func TestSlowSendersAndGoodClients(t *testing.T) {
	cases := []struct {
		name                     string
		slow, bytes, stall, good int
		trips                    int
	}{
		{"few", 4, 64, 0, 2, 50},
		{"many", 100, 32, 100, 10, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := started(t)
			l := listen(t, ex)
			echo(l)
			// Stalled peers: each sends half a request and waits.
			for i := range tc.stall {
				nc := dialNet(t, l)
				if _, err := nc.Write([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			errs := make(chan error, tc.slow+tc.good)
			var wg sync.WaitGroup
			for i := range tc.slow {
				nc := dialNet(t, l)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- trickle(nc, i, tc.bytes)
				}()
			}
			for i := range tc.good {
				nc := dialNet(t, l)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- roundTrips(nc, i, tc.trips)
				}()
			}
			wg.Wait()
			close(errs)
			n := 0
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
				n++
			}
			if n != tc.slow+tc.good {
				t.Fatalf("%d peers reported, want %d", n, tc.slow+tc.good)
			}
		})
	}
}

// trickle sends n bytes on nc one at a time, reading each one's echo
// before it sends the next.
func trickle(nc net.Conn, id, n int) error {
	var b [1]byte
	for k := range n {
		want := byte(id + k)
		if _, err := nc.Write([]byte{want}); err != nil {
			return fmt.Errorf("slow peer %d, byte %d: %w", id, k, err)
		}
		if _, err := ioReadFull(nc, b[:]); err != nil {
			return fmt.Errorf("slow peer %d, echo of byte %d: %w", id, k, err)
		}
		if b[0] != want {
			return fmt.Errorf("slow peer %d, byte %d: echoed %d, want %d", id, k, b[0], want)
		}
	}
	return nil
}

// roundTrips makes n round trips of 64 bytes on nc, each with its own
// content.
func roundTrips(nc net.Conn, id, n int) error {
	req, got := make([]byte, 64), make([]byte, 64)
	for k := range n {
		for j := range req {
			req[j] = byte(id + k + j)
		}
		if _, err := nc.Write(req); err != nil {
			return fmt.Errorf("client %d, request %d: %w", id, k, err)
		}
		if _, err := ioReadFull(nc, got); err != nil {
			return fmt.Errorf("client %d, reply %d: %w", id, k, err)
		}
		if !bytes.Equal(got, req) {
			return fmt.Errorf("client %d, reply %d differs from its request", id, k)
		}
	}
	return nil
}
