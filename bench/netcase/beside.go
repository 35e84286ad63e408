package netcase

// Plain requests beside TLS handshakes: one loop serves a plain echo
// listener and a TLS echo listener; one child process times plain requests
// on the first (Latency) while another opens TLS connections to the second
// at a steady rate (StartHandshakeLoad). So the server's process holds
// the loop and its handshake pool only, and the two clients are processes
// of their own.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// SpindleBeside is a plain spindle echo server and a TLS one on the same
// executor.
type SpindleBeside struct {
	*Spindle          // the plain listener, and the executor
	TLS      *Spindle // the TLS listener on the same executor
}

// ServeSpindleBeside starts both servers on 127.0.0.1, served by ex, which
// must not be running yet.
func ServeSpindleBeside(ex *executor.Executor) (*SpindleBeside, error) {
	plain, err := listenSpindle(ex)
	if err != nil {
		return nil, err
	}
	sec, err := listenSpindle(ex, netio.WithTLS(ServerTLSConfig()))
	if err != nil {
		plain.ln.Close()
		ex.Close()
		return nil, err
	}
	ex.Start()
	return &SpindleBeside{Spindle: plain, TLS: sec}, nil
}

// TLSAddr returns the address of the TLS listener.
func (s *SpindleBeside) TLSAddr() string { return s.TLS.Addr() }

// Close closes both listeners and the executor. It returns the error that
// stopped either accepting early, if one did.
func (s *SpindleBeside) Close() error {
	s.TLS.ln.Close()
	err := s.Spindle.Close()
	s.TLS.mu.Lock()
	defer s.TLS.mu.Unlock()
	return errors.Join(err, s.TLS.err)
}

// Latency is what a latency probe saw: quantiles of the round-trip times.
type Latency struct {
	P50, P99, P999, Max time.Duration
}

// Latency opens a connection of its own to addr, makes n round trips of
// one request on it, one at a time, and closes it.
func (c *Clients) Latency(addr string, n int) (Latency, error) {
	f, err := c.ask("latency %s %d", addr, n)
	if err != nil {
		return Latency{}, err
	}
	v, err := durations(f, 4)
	if err != nil {
		return Latency{}, err
	}
	return Latency{P50: v[0], P99: v[1], P999: v[2], Max: v[3]}, nil
}

// StartHandshakeLoad makes a TLS client (StartTLSClients) open connections
// to the TLS server at addr at rate a second, at most par in flight, each
// closed once its handshake is done, until StopHandshakeLoad.
func (c *Clients) StartHandshakeLoad(addr string, rate, par int) error {
	return c.do("hsload %s %d,%d", addr, rate, par)
}

// StopHandshakeLoad stops the load, waits for its last handshakes, and
// returns how many were made and failed, and over how long.
func (c *Clients) StopHandshakeLoad() (made, failed int, elapsed time.Duration, err error) {
	f, err := c.ask("hsstop")
	if err != nil {
		return 0, 0, 0, err
	}
	v, err := durations(f, 3)
	if err != nil {
		return 0, 0, 0, err
	}
	return int(v[0]), int(v[1]), v[2], nil
}

// durations parses n integers of an answer.
func durations(f []string, n int) ([]time.Duration, error) {
	if len(f) != n {
		return nil, fmt.Errorf("netcase: clients: answer %q: want %d numbers", f, n)
	}
	v := make([]time.Duration, n)
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("netcase: clients: answer %q: %v", f, err)
		}
		v[i] = time.Duration(x)
	}
	return v, nil
}
