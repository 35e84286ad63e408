package executor

import (
	"time"

	"github.com/spindle-rt/spindle/internal/loop"
)

// ProfileLabel is the pprof label that an executor's goroutines carry while
// they run its work, with the executor's name as the value: the goroutine
// running the loop (Run or Start) and the goroutines of spawned tasks.
// `go tool pprof -tagfocus=spindle.executor=NAME` keeps one loop's samples.
const ProfileLabel = loop.LabelKey

// DefaultStallThreshold is the stall threshold of an executor made without
// WithStallHandler; its stalls are logged with log/slog.
const DefaultStallThreshold = time.Second

// The delay probe of an executor made without WithDelayProbe.
const (
	defaultProbeInterval = 100 * time.Millisecond
	defaultProbeWindow   = time.Minute
)

// Stall describes a task that has held the loop for longer than the stall
// threshold. It is reported while the task still runs.
type Stall struct {
	// Executor is the executor's name (WithName).
	Executor string
	// Duration is how long the task had held the loop when the stall was
	// reported: at least the threshold, and short of the truth by less than
	// an eighth of it (the watchdog looks that often).
	Duration time.Duration
	// Stack is the stack of the goroutine holding the loop, in the format
	// of runtime.Stack: the loop goroutine when a callback stalls, the
	// task's goroutine when a spawned task does.
	Stack []byte
}

// Delay summarises how long scheduled work waited before it ran. Every
// probe period (WithDelayProbe) the watchdog submits a probe to the loop and
// measures how late it runs: the time a Submit waits, behind the work queued
// before it, for its turn. It is the twin of Node's monitorEventLoopDelay.
// While the loop is behind, no further probe is sent, so a stall shows as
// one sample as long as the stall. All fields are zero until the first
// probe has run.
type Delay struct {
	// P50, P99 and Max are the percentiles (nearest rank) and the maximum
	// of the samples.
	P50, P99, Max time.Duration
	// Samples is how many samples the window holds.
	Samples int
	// Window is the time they span, from the oldest probe to the newest.
	Window time.Duration
}

// WithStallHandler sets how stalls are reported: fn is called, off the loop
// (on the executor's watchdog goroutine), while one task (a callback, or one
// slice of a spawned task between two suspensions) has held the loop for
// longer than threshold, once per stall. With fn nil the stall is logged
// with log/slog. threshold <= 0 turns detection off. Without this option,
// stalls over DefaultStallThreshold are logged.
//
// The watchdog runs while the loop runs under Run or Start (and while
// Shutdown drains an executor nobody runs); RunUntilIdle and Drive are not
// watched. Many short tasks in a row are not a stall. Taking the stack
// stops the world for a moment, in proportion to the number of goroutines,
// once per stall. Close waits for a running fn to return, so fn must not
// wait for the loop; it may call Shutdown or Close, which then begin
// closing and return without waiting.
func WithStallHandler(threshold time.Duration, fn func(Stall)) Option {
	return optionFunc(func(c *loop.Config) {
		c.StallThreshold, c.OnStall = threshold, nil
		if fn != nil {
			c.OnStall = func(name string, held time.Duration, stack []byte) {
				fn(Stall{Executor: name, Duration: held, Stack: stack})
			}
		}
	})
}

// WithDelayProbe sets how Stats.Delay is sampled: a probe every interval,
// summarised over the probes of the last window (at most 10,000 probes).
// interval <= 0 turns the probe off. Without this option the probe runs
// every 100 ms over a one-minute window. Like stall detection, the probe runs
// while the loop runs under Run or Start; it wakes a sleeping loop, and does
// not count in TasksRun.
func WithDelayProbe(interval, window time.Duration) Option {
	return optionFunc(func(c *loop.Config) { c.ProbeInterval, c.ProbeWindow = interval, window })
}

// Utilization returns Busy/(Busy+Idle), the share of its time the loop has
// spent awake (Node's event-loop utilization), or 0 before the loop has run.
func (s Stats) Utilization() float64 {
	if s.Busy+s.Idle <= 0 {
		return 0
	}
	return float64(s.Busy) / float64(s.Busy+s.Idle)
}
