//go:build !linux

package netcase

// The portable client: a goroutine per connection on package net, for
// each round of a run.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

type driverNet struct {
	conns []net.Conn
}

func newDriver() driver { return &driverNet{} }

// roundTrip writes req on c and reads as many bytes back, which must equal
// it.
func roundTrip(c net.Conn, req, buf []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, buf[:len(req)]); err != nil {
		return err
	}
	if !bytes.Equal(buf[:len(req)], req) {
		return fmt.Errorf("the reply differs from the request")
	}
	return nil
}

func (d *driverNet) dial(addr string, n int) error {
	req, buf := pattern(1), make([]byte, Size)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		d.conns = append(d.conns, c)
		if err := roundTrip(c, req, buf); err != nil {
			return err
		}
	}
	return nil
}

func (d *driverNet) run(rounds, depth int) error {
	_, err := d.runTimed(rounds, depth, false)
	return err
}

func (d *driverNet) timed(rounds int) ([]time.Duration, error) {
	return d.runTimed(rounds, 1, true)
}

// runTimed makes rounds round trips of depth requests, a goroutine per
// connection; with timing it returns the time of each.
func (d *driverNet) runTimed(rounds, depth int, timing bool) ([]time.Duration, error) {
	req := pattern(depth)
	var mu sync.Mutex
	var lat []time.Duration
	var left atomic.Int64
	left.Store(int64(rounds))
	errs := make(chan error, len(d.conns))
	var wg sync.WaitGroup
	for _, c := range d.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, len(req))
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := roundTrip(c, req, buf); err != nil {
					errs <- err
					return
				}
				if timing {
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return lat, <-errs
}

func (d *driverNet) close() {
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// probe opens a connection to addr and makes n round trips of one request
// on it, one at a time, and returns the time of each.
func probe(addr string, n int) ([]time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req, buf := pattern(1), make([]byte, Size)
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := roundTrip(c, req, buf); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}
