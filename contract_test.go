package spindle_test

import (
	"context"
	"expvar"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spindle-rt/spindle/channel"
	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
	"github.com/spindle-rt/spindle/merge"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/semaphore"
	"github.com/spindle-rt/spindle/shard"
)

// The public API contract of docs/design.md, name by name and shape by shape:
// this file stops compiling if any of them changes.
var (
	_ func(...executor.Option) *executor.Executor                     = executor.New
	_ func(string) executor.Option                                    = executor.WithName
	_ func(hooks.Hooks) executor.Option                               = executor.WithHooks
	_ func(func(any)) executor.Option                                 = executor.WithPanicHandler
	_ func(*executor.Executor, context.Context) error                 = (*executor.Executor).Run
	_ func(*executor.Executor)                                        = (*executor.Executor).Start
	_ func(*executor.Executor, context.Context) error                 = (*executor.Executor).Shutdown
	_ func(*executor.Executor) error                                  = (*executor.Executor).Close
	_ func(*executor.Executor, func()) error                          = (*executor.Executor).Submit
	_ func(*executor.Executor, func())                                = (*executor.Executor).Post
	_ func(*executor.Executor, time.Duration, func()) *executor.Timer = (*executor.Executor).AfterFunc
	_ func(*executor.Timer) bool                                      = (*executor.Timer).Stop
	_ func(*executor.Executor, hooks.Hooks) func()                    = (*executor.Executor).AddHooks
	_ func(*executor.Executor) hooks.ID                               = (*executor.Executor).CurrentID
	_ func(*executor.Executor) bool                                   = (*executor.Executor).OnLoop
	_ func(*executor.Executor) executor.Stats                         = (*executor.Executor).Stats
	_ func(*executor.Executor) time.Time                              = (*executor.Executor).Now
	_ error                                                           = executor.ErrClosed
	_ executor.Waker                                                  = waker{}

	_ func(*executor.Executor) *future.Promise[int]                                      = future.NewPromise[int]
	_ func(*future.Promise[int]) *future.Future[int]                                     = (*future.Promise[int]).Future
	_ func(*future.Promise[int], int) bool                                               = (*future.Promise[int]).Resolve
	_ func(*future.Promise[int], error) bool                                             = (*future.Promise[int]).Reject
	_ func(*future.Promise[int], int, error) bool                                        = (*future.Promise[int]).Complete
	_ func(*future.Promise[int], func())                                                 = (*future.Promise[int]).OnCancel
	_ func(*executor.Executor, int) *future.Future[int]                                  = future.Resolved[int]
	_ func(*executor.Executor, error) *future.Future[int]                                = future.Failed[int]
	_ func(*future.Future[int], func(int) (string, error)) *future.Future[string]        = future.Then[int, string]
	_ func(*future.Future[int], func(int, error) (string, error)) *future.Future[string] = future.Transform[int, string]
	_ func(*future.Future[int], func(int, error))                                        = (*future.Future[int]).OnComplete
	_ func(*future.Future[int]) bool                                                     = (*future.Future[int]).Ready
	_ func(*future.Future[int], context.Context) (int, error)                            = (*future.Future[int]).Await
	_ func(*future.Future[int]) bool                                                     = (*future.Future[int]).Cancel
	_ func(*future.Future[int]) *executor.Executor                                       = (*future.Future[int]).Executor
	_ func(*executor.Executor, func(context.Context) (int, error)) *future.Future[int]   = future.Spawn[int]
	_ func(context.Context) error                                                        = future.Yield
	_ func(*executor.Executor, func() (int, error)) *future.Future[int]                  = future.Call[int]
	_ func(*executor.Executor, time.Duration) *future.Future[struct{}]                   = future.Sleep
	_ func(...*future.Future[int]) *future.Future[[]int]                                 = future.All[int]
	_ func(...*future.Future[int]) *future.Future[[]future.Result[int]]                  = future.AllSettled[int]
	_ func(...*future.Future[int]) *future.Future[int]                                   = future.Race[int]
	_ func(...*future.Future[int]) *future.Future[int]                                   = future.Any[int]
	_                                                                                    = future.Result[int]{Value: 1, Err: nil}
	_ error                                                                              = &future.PanicError{Value: 1, Stack: nil}
	_ error                                                                              = future.ErrDeadlock

	_ func(*executor.Executor, int) *channel.Chan[int]            = channel.New[int]
	_ func(*channel.Chan[int], int) *future.Future[struct{}]      = (*channel.Chan[int]).Send
	_ func(*channel.Chan[int]) *future.Future[int]                = (*channel.Chan[int]).Recv
	_ func(*channel.Chan[int], int) bool                          = (*channel.Chan[int]).TrySend
	_ func(*channel.Chan[int]) (int, bool)                        = (*channel.Chan[int]).TryRecv
	_ func(*channel.Chan[int], executor.Waker) (int, bool, error) = (*channel.Chan[int]).PollRecv
	_ func(*channel.Chan[int])                                    = (*channel.Chan[int]).Close
	_ func(*channel.Chan[int]) int                                = (*channel.Chan[int]).Len
	_ func(*channel.Chan[int]) int                                = (*channel.Chan[int]).Cap
	_ error                                                       = channel.ErrClosed

	_ merge.Stream[int]                                                 = (*channel.Chan[int])(nil)
	_ func(*executor.Executor, ...merge.Stream[int]) *merge.Merged[int] = merge.Merge[int]
	_ func(*merge.Merged[int], executor.Waker) (int, bool, error)       = (*merge.Merged[int]).PollRecv
	_ func(*merge.Merged[int]) *future.Future[int]                      = (*merge.Merged[int]).Recv

	_ = hooks.Hooks{
		Init:    func(id hooks.ID, kind hooks.Kind, trigger hooks.ID) {},
		Before:  func(hooks.ID) {},
		After:   func(hooks.ID) {},
		Resolve: func(hooks.ID) {},
		Destroy: func(hooks.ID) {},
	}
	_ func() *hooks.Storage[int]                                 = hooks.NewStorage[int]
	_ func(*hooks.Storage[int], *executor.Executor, int, func()) = func(s *hooks.Storage[int], ex *executor.Executor, v int, fn func()) { s.Run(ex, v, fn) }
	_ func(*hooks.Storage[int], *executor.Executor) (int, bool)  = func(s *hooks.Storage[int], ex *executor.Executor) (int, bool) { return s.Get(ex) }

	_ func(*executor.Executor, func(context.Context) (int, error)) *future.Future[int] = future.Go[int]
	_ func(*future.Future[int], time.Duration) *future.Future[int]                     = future.Timeout[int]
	_ func(context.Context, *executor.Executor) *future.Group                          = future.NewGroup
	_ func(*future.Group, int)                                                         = (*future.Group).SetLimit
	_ func(*future.Group, func(context.Context) error)                                 = (*future.Group).Go
	_ func(*future.Group, context.Context) error                                       = (*future.Group).Wait

	_ func(*executor.Executor, int64) *semaphore.Semaphore     = semaphore.New
	_ func(*semaphore.Semaphore, context.Context, int64) error = (*semaphore.Semaphore).Acquire
	_ func(*semaphore.Semaphore, int64) bool                   = (*semaphore.Semaphore).TryAcquire
	_ func(*semaphore.Semaphore, int64)                        = (*semaphore.Semaphore).Release

	_ func(int, ...executor.Option) *shard.Group                                  = shard.New
	_ func(*shard.Group)                                                          = (*shard.Group).Start
	_ func(*shard.Group) int                                                      = (*shard.Group).Len
	_ func(*shard.Group, int) *executor.Executor                                  = (*shard.Group).Shard
	_ func(*shard.Group, uint64) int                                              = (*shard.Group).Of
	_ func(*shard.Group, context.Context) error                                   = (*shard.Group).Shutdown
	_ func(*shard.Group) error                                                    = (*shard.Group).Close
	_ func(*shard.Group, int, func() (int, error)) *future.Future[int]            = shard.Call[int]
	_ func(*shard.Group, func(int) *int) *shard.Sharded[int]                      = shard.NewSharded[int]
	_ func(*shard.Sharded[int]) *int                                              = (*shard.Sharded[int]).Local
	_ func(*shard.Sharded[int], int, func(*int) (int, error)) *future.Future[int] = shard.Invoke[int, int]

	_                                                           = executor.Stats{TasksRun: 1, Queued: 1, Timers: 1, Suspended: 1, Busy: time.Second, Idle: time.Second, Stalls: 1}
	_ func(time.Duration, func(executor.Stall)) executor.Option = executor.WithStallHandler
	_                                                           = executor.Stall{Executor: "e", Duration: time.Second, Stack: []byte{}}

	_ func(*executor.Executor, string, string, ...netio.ListenOption) (*netio.Listener, error) = netio.Listen
	_ func() netio.ListenOption                                                                = netio.WithReusePort
	_ func(*netio.Listener) *future.Future[*netio.Conn]                                        = (*netio.Listener).Accept
	_ func(*netio.Listener) net.Addr                                                           = (*netio.Listener).Addr
	_ func(*netio.Listener) error                                                              = (*netio.Listener).Close
	_ func(context.Context, *executor.Executor, string, string) *future.Future[*netio.Conn]    = netio.Dial
	_ func(*netio.Conn) *future.Future[[]byte]                                                 = (*netio.Conn).Recv
	_ func(*netio.Conn) ([]byte, bool)                                                         = (*netio.Conn).TryRecv
	_ func(*netio.Conn, executor.Waker) ([]byte, bool, error)                                  = (*netio.Conn).PollRecv
	_ func(*netio.Conn, []byte) (int, error)                                                   = (*netio.Conn).Write
	_ func(*netio.Conn) int                                                                    = (*netio.Conn).Buffered
	_ func(*netio.Conn) *future.Future[struct{}]                                               = (*netio.Conn).Flush
	_ func(*netio.Conn) error                                                                  = (*netio.Conn).CloseWrite
	_ func(*netio.Conn) error                                                                  = (*netio.Conn).Close
	_ func(*netio.Conn) net.Addr                                                               = (*netio.Conn).LocalAddr
	_ func(*netio.Conn) net.Addr                                                               = (*netio.Conn).RemoteAddr
	_ func(*netio.Conn) *executor.Executor                                                     = (*netio.Conn).Executor
	_ merge.Stream[[]byte]                                                                     = (*netio.Conn)(nil)
	_ future.Poller[[]byte]                                                                    = (*netio.Conn)(nil)
	_ io.Writer                                                                                = (*netio.Conn)(nil)
	_ func(*executor.Executor) netio.Stats                                                     = netio.StatsOf
	_                                                                                          = netio.Stats{Open: 1, Accepted: 1, Closed: 1, AcceptErrors: 1, OutputLimitDisconnects: 1, Backend: "epoll"}

	_ func(*executor.Executor) expvar.Var          = metrics.Var
	_ func(*shard.Group) expvar.Var                = metrics.GroupVar
	_ func(string, *executor.Executor)             = metrics.Publish
	_ func(string, *shard.Group)                   = metrics.PublishGroup
	_ func(io.Writer, ...*executor.Executor) error = metrics.WriteText
	_ func(...*executor.Executor) http.Handler     = metrics.Handler
	_ func() []metrics.Figure                      = metrics.Figures
	_ func(metrics.Kind) string                    = metrics.Kind.String
	_                                              = metrics.Figure{
		Key: "k", Prometheus: "p", OTel: "o", Unit: "s", Help: "h",
		Kind: metrics.Counter, Integer: true, Value: func(executor.Stats) float64 { return 0 },
	}
	_        = [...]metrics.Kind{metrics.Counter, metrics.UpDownCounter, metrics.Gauge}
	_ string = metrics.PrometheusLabel
	_ string = metrics.OTelAttribute
)

type waker struct{}

func (waker) Wake() {}
