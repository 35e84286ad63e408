package metrics

import (
	"strconv"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// Kind says how a figure behaves over time, which decides its type in each
// monitoring system.
type Kind uint8

const (
	// Counter only grows, from 0 when the executor is made: a Prometheus
	// counter, an OpenTelemetry observable counter.
	Counter Kind = iota
	// UpDownCounter is a number of things that exist now, up or down
	// (tasks queued, timers pending), which adds up across executors: a
	// Prometheus gauge, an OpenTelemetry observable up-down counter.
	UpDownCounter
	// Gauge is a measurement that does not add up across executors (a
	// percentile of the delay): a Prometheus gauge, an OpenTelemetry
	// observable gauge.
	Gauge
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case UpDownCounter:
		return "up-down counter"
	case Gauge:
		return "gauge"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Figure is one figure of an executor's Stats, as the exporters publish it.
type Figure struct {
	// Key is the figure's key in the expvar JSON object.
	Key string
	// Prometheus is the metric's name in Prometheus' conventions (unit
	// suffix, _total on counters).
	Prometheus string
	// OTel is the instrument's name in OpenTelemetry's conventions.
	OTel string
	// Unit is the unit in UCUM form, as OpenTelemetry wants it: "s" for
	// seconds, "{task}" for a count of tasks.
	Unit string
	// Help describes the figure.
	Help string
	// Kind says how the figure behaves over time.
	Kind Kind
	// Integer reports whether the figure is a whole number (a count of
	// tasks), for systems that tell integer instruments from float ones.
	Integer bool
	// Value reads the figure from a Stats: seconds for durations.
	Value func(executor.Stats) float64
}

// figures is the one table every exporter reads: a figure added here
// reaches expvar, the text format, Prometheus and OpenTelemetry at once.
// The figures of other parts of the library that keep counters per
// executor are in tables of their own beside it (connFigures: netio's).
var figures = []Figure{
	{"TasksRun", "spindle_loop_tasks_total", "spindle.loop.tasks", "{task}",
		"Tasks the loop has run: callbacks, continuations, timer callbacks and slices of spawned tasks.",
		Counter, true, func(s executor.Stats) float64 { return float64(s.TasksRun) }},
	{"Queued", "spindle_loop_queued", "spindle.loop.queued", "{task}",
		"Tasks waiting to run, submitted ones included.",
		UpDownCounter, true, func(s executor.Stats) float64 { return float64(s.Queued) }},
	{"Timers", "spindle_loop_timers", "spindle.loop.timers", "{timer}",
		"Timers pending: not fired, not stopped.",
		UpDownCounter, true, func(s executor.Stats) float64 { return float64(s.Timers) }},
	{"Suspended", "spindle_loop_suspended_tasks", "spindle.loop.suspended", "{task}",
		"Spawned tasks suspended in Await or Yield.",
		UpDownCounter, true, func(s executor.Stats) float64 { return float64(s.Suspended) }},
	{"BusySeconds", "spindle_loop_busy_seconds_total", "spindle.loop.busy.time", "s",
		"Time the loop has spent awake, running tasks.",
		Counter, false, func(s executor.Stats) float64 { return s.Busy.Seconds() }},
	{"IdleSeconds", "spindle_loop_idle_seconds_total", "spindle.loop.idle.time", "s",
		"Time the loop has spent waiting for work.",
		Counter, false, func(s executor.Stats) float64 { return s.Idle.Seconds() }},
	{"Stalls", "spindle_loop_stalls_total", "spindle.loop.stalls", "{stall}",
		"Stalls reported: a task held the loop for longer than the stall threshold.",
		Counter, true, func(s executor.Stats) float64 { return float64(s.Stalls) }},
	{"DelayP50Seconds", "spindle_loop_delay_p50_seconds", "spindle.loop.delay.p50", "s",
		"Median time scheduled work waited before it ran, over the delay probe's window.",
		Gauge, false, func(s executor.Stats) float64 { return seconds(s.Delay.P50) }},
	{"DelayP99Seconds", "spindle_loop_delay_p99_seconds", "spindle.loop.delay.p99", "s",
		"99th percentile of the time scheduled work waited before it ran, over the delay probe's window.",
		Gauge, false, func(s executor.Stats) float64 { return seconds(s.Delay.P99) }},
	{"DelayMaxSeconds", "spindle_loop_delay_max_seconds", "spindle.loop.delay.max", "s",
		"Longest time scheduled work waited before it ran, over the delay probe's window.",
		Gauge, false, func(s executor.Stats) float64 { return seconds(s.Delay.Max) }},
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// ConnFigure is one of netio's connection counts of an executor
// (netio.StatsOf), as the exporters publish it: the fields are Figure's,
// Value reads the figure from a netio.Stats.
type ConnFigure struct {
	Key, Prometheus, OTel, Unit, Help string
	Kind                              Kind
	Value                             func(netio.Stats) float64
}

// connFigures is netio's table: Var, GroupVar and WriteText publish it
// after the executor's figures.
var connFigures = []ConnFigure{
	{"NetOpen", "spindle_netio_open_connections", "spindle.netio.open", "{connection}",
		"Connections open now: accepted or dialled, not yet closed.",
		UpDownCounter, func(s netio.Stats) float64 { return float64(s.Open) }},
	{"NetAccepted", "spindle_netio_accepted_total", "spindle.netio.accepted", "{connection}",
		"Connections the executor's listeners have accepted.",
		Counter, func(s netio.Stats) float64 { return float64(s.Accepted) }},
	{"NetClosed", "spindle_netio_closed_total", "spindle.netio.closed", "{connection}",
		"Connections whose socket has been closed, for whatever reason.",
		Counter, func(s netio.Stats) float64 { return float64(s.Closed) }},
	{"NetAcceptErrors", "spindle_netio_accept_errors_total", "spindle.netio.accept.errors", "{error}",
		"Accepts that failed other than by the listener closing (EMFILE, ENFILE, ...); Serve backs off and retries.",
		Counter, func(s netio.Stats) float64 { return float64(s.AcceptErrors) }},
	{"NetOutputLimitDisconnects", "spindle_netio_output_limit_disconnections_total", "spindle.netio.output_limit.disconnections", "{connection}",
		"Connections failed by the output limit: peers that stopped reading while their output grew past it.",
		Counter, func(s netio.Stats) float64 { return float64(s.OutputLimitDisconnects) }},
}

// The info metric that names what serves each executor's sockets
// (netio.Stats.Backend), in the Prometheus exporters (WriteText, Handler
// and contrib/prometheus): a gauge of value 1 per executor that has
// served a socket, labelled with the executor's name (PrometheusLabel)
// and the backend's (BackendLabel): "epoll", "io_uring", "portable" or
// "sim". An executor that has served none has no series.
const (
	BackendInfo  = "spindle_netio_backend_info"
	BackendLabel = "backend"
	BackendHelp  = "The netio backend serving the executor's sockets, in label backend (epoll, io_uring, portable or sim): 1 once the executor has served a socket."
)

// ConnFigures returns netio's figures, in a fixed order. The slice is the
// caller's.
func ConnFigures() []ConnFigure { return append([]ConnFigure(nil), connFigures...) }

// connStats sums netio's counts over exs.
func connStats(exs ...*executor.Executor) netio.Stats {
	var t netio.Stats
	for _, ex := range exs {
		s := netio.StatsOf(ex)
		t.Open += s.Open
		t.Accepted += s.Accepted
		t.Closed += s.Closed
		t.AcceptErrors += s.AcceptErrors
		t.OutputLimitDisconnects += s.OutputLimitDisconnects
	}
	return t
}

// Figures returns the figures the exporters publish for each executor, in
// a fixed order. The slice is the caller's.
func Figures() []Figure { return append([]Figure(nil), figures...) }

// PrometheusLabel is the label that carries the executor's name on every
// Prometheus metric.
const PrometheusLabel = "executor"

// OTelAttribute is the attribute that carries the executor's name on every
// OpenTelemetry measurement: the key of the executor's pprof label.
const OTelAttribute = executor.ProfileLabel
