package hooks_test

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/hooks"
)

// A handler's request id reaches the loop code it calls and every record
// that code logs, with no glue: the middleware puts the id in the request's
// context, future.Do carries it onto the loop, and LogHandler adds it (and
// the executor's name) to the records, also in a callback that runs later.
func ExampleLogHandler() {
	requestID := hooks.NewStorage[string]()
	text := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: withoutTime})
	logger := slog.New(hooks.NewLogHandler(text, hooks.Log("request_id", requestID)))
	ex := executor.New(executor.WithName("api"))
	ex.Start()
	defer ex.Close()

	ctx := requestID.WithValue(context.Background(), "req-42") // in a middleware
	later, _ := future.Do(ctx, ex, func() (*future.Future[struct{}], error) {
		logger.Info("on the loop")
		return future.Then(future.Sleep(ex, time.Millisecond), func(struct{}) (struct{}, error) {
			logger.Info("a millisecond later")
			return struct{}{}, nil
		}), nil
	})
	later.Await(ctx)
	// Output:
	// level=INFO msg="on the loop" executor=api request_id=req-42
	// level=INFO msg="a millisecond later" executor=api request_id=req-42
}

// withoutTime drops the time from records, so that the output is the same
// on every run.
func withoutTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
