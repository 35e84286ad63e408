package main

// BenchmarkHTTP: the httpserver example's handlers (examples/httpserver/
// counters) served in-process on 127.0.0.1, their state on a spindle loop
// (spindle) or behind a sync.Mutex (mutex). 64 client goroutines with
// keep-alive connections send b.N POST /incr requests in all; ns/req is
// wall time per request over all clients, p99-ns/req the 99th percentile of
// one request's round trip.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/examples/httpserver/counters"
)

func init() {
	register(
		benchCase{Group: "HTTP", Name: "spindle", Unit: "req", Baseline: "mutex", Fn: func(b *testing.B) {
			ex := newExecutor()
			ex.Start()
			defer ex.Close()
			serveHTTP(b, counters.NewLoop(ex))
		}},
		benchCase{Group: "HTTP", Name: "mutex", Unit: "req", Fn: func(b *testing.B) { serveHTTP(b, counters.NewMutex()) }},
	)
}

// httpClients is how many client goroutines (and connections) load the
// server.
const httpClients = 64

// serveHTTP serves c's routes on a loopback listener and sends b.N requests
// from httpClients goroutines.
func serveHTTP(b *testing.B, c counters.Counters) {
	mux := http.NewServeMux()
	counters.Routes(mux, c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tr := &http.Transport{MaxIdleConnsPerHost: httpClients, MaxConnsPerHost: httpClients}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer func() {
		srv.Close()
		<-served
		tr.CloseIdleConnections()
	}()
	url := "http://" + ln.Addr().String() + "/incr?key="
	lat := make([][]time.Duration, httpClients)
	send := func(cl, i int) error {
		t0 := time.Now()
		resp, err := client.Post(url+fmt.Sprint(i%256), "", nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		lat[cl] = append(lat[cl], time.Since(t0))
		return err
	}
	var wg sync.WaitGroup
	run := func(n int) {
		for cl := range httpClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := cl; i < n; i += httpClients {
					if err := send(cl, i); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(httpClients) // open the connections
	for i := range lat {
		lat[i] = lat[i][:0]
	}
	m := startMeter(b)
	run(b.N)
	m.Stop(b, "req", float64(b.N), -1)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[(len(all)-1)*99/100].Nanoseconds()), "p99-ns/req")
}
