package peers

// Net: the bundled suite's Net cases (see ../net.go and
// ../internal/netcase) on spindle's netio and on gnet v2, the event-loop
// library Go users pick for this job: TCP servers on 127.0.0.1 answering
// each 64-byte request with a 64-byte reply, loaded by clients in a child
// process. echo/: 64 connections, one request in flight on each;
// pipeline/: 16 requests per write; idle/: 10,000 connections used once,
// bytes the server's process holds per connection.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"syscall"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/spindle-rt/spindle/bench/internal/netcase"
	"github.com/spindle-rt/spindle/executor"
)

const gnetVersion = "panjf2000/gnet/v2 v2.9.7"

func init() {
	register(Group{
		Name: "Net",
		Note: "one loop each: spindle's executor, and gnet with one event loop (WithNumEventLoop(1); gnet's " +
			"acceptor runs on a goroutine of its own); gnet's handler writes the replies to one event with one " +
			"Write, as spindle's loop does at the end of its batch; the clients run in a child process, so the " +
			"figures are the server's process; idle/ counts live heap and stacks after GC",
	},
		Case{Name: "echo/spindle", Unit: "req", Baseline: "echo/gnet", Kind: kindSpindle, Fn: netRequests(1, serveSpindle)},
		Case{Name: "echo/gnet", Unit: "req", Kind: kindPeer, Version: gnetVersion, Fn: netRequests(1, serveGnet)},
		Case{Name: "pipeline/spindle", Unit: "req", Baseline: "pipeline/gnet", Kind: kindSpindle, Fn: netRequests(netcase.Depth, serveSpindle)},
		Case{Name: "pipeline/gnet", Unit: "req", Kind: kindPeer, Version: gnetVersion, Fn: netRequests(netcase.Depth, serveGnet)},
		Case{Name: "idle/spindle", Unit: "conn", Metric: "B", Baseline: "idle/gnet", Kind: kindSpindle, Fn: netIdle(serveSpindle)},
		Case{Name: "idle/gnet", Unit: "conn", Metric: "B", Kind: kindPeer, Version: gnetVersion, Fn: netIdle(serveGnet)},
	)
}

func serveSpindle() (netcase.Server, error) { return netcase.ServeSpindle(executor.New()) }

// netRequests returns a request case: depth requests per write.
func netRequests(depth int, start func() (netcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) {
		var m *meter
		netcase.Requests(b, start, depth, func(netcase.Server) { m = startMeter(b) },
			func(_ netcase.Server, n int) { m.stop(b, "req", float64(n)) })
	}
}

func netIdle(start func() (netcase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { netcase.Idle(b, start) }
}

// gnetServer is the gnet server: one event loop, whose OnTraffic answers
// every whole request buffered and leaves a partial one in gnet's inbound
// buffer.
type gnetServer struct {
	gnet.BuiltinEventEngine
	eng    gnet.Engine
	addr   string
	booted chan error
	done   chan error
	out    []byte // the replies of one event; owned by the one event loop
}

// serveGnet starts the gnet server on 127.0.0.1 and returns once it
// listens.
func serveGnet() (netcase.Server, error) {
	s := &gnetServer{booted: make(chan error, 1), done: make(chan error, 1)}
	go func() {
		s.done <- gnet.Run(s, "tcp://127.0.0.1:0",
			gnet.WithNumEventLoop(1), gnet.WithTCPNoDelay(gnet.TCPNoDelay), gnet.WithLogger(quietLogger{}))
	}()
	select {
	case err := <-s.booted:
		if err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("gnet.Run: %w", err)
	case <-time.After(10 * time.Second):
		return nil, errors.New("gnet did not boot in 10s")
	}
}

// OnBoot learns the address the listener was given (port 0: the kernel's
// pick) from a duplicate of its descriptor.
func (s *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	fd, err := eng.Dup()
	if err == nil {
		var sa syscall.Sockaddr
		sa, err = syscall.Getsockname(fd)
		syscall.Close(fd)
		if a, ok := sa.(*syscall.SockaddrInet4); ok && err == nil {
			s.addr = fmt.Sprintf("%d.%d.%d.%d:%d", a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3], a.Port)
		} else if err == nil {
			err = fmt.Errorf("listener address %v", sa)
		}
	}
	s.booted <- err
	return gnet.None
}

func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	s.out = s.out[:0]
	for range c.InboundBuffered() / netcase.Size {
		req, err := c.Next(netcase.Size)
		if err != nil {
			return gnet.Close
		}
		s.out = append(s.out, req...)
	}
	if len(s.out) > 0 {
		if _, err := c.Write(s.out); err != nil {
			return gnet.Close
		}
	}
	return gnet.None
}

func (s *gnetServer) Addr() string { return s.addr }

// Close stops the engine and waits for Run to return.
func (s *gnetServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.eng.Stop(ctx); err != nil {
		return err
	}
	select {
	case err := <-s.done:
		return err
	case <-ctx.Done():
		return errors.New("gnet.Run did not return in 10s")
	}
}

// quietLogger drops gnet's debug and info lines (one per engine started)
// and logs the rest.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)        {}
func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Warnf(f string, args ...any)  { log.Printf("gnet: "+f, args...) }
func (quietLogger) Errorf(f string, args ...any) { log.Printf("gnet: "+f, args...) }
func (quietLogger) Fatalf(f string, args ...any) { log.Fatalf("gnet: "+f, args...) }
