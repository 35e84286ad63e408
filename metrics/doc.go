// Package metrics publishes the figures of spindle executors and shard
// groups (executor.Stats) to monitoring systems: through expvar, from the
// standard library, here; through Prometheus and OpenTelemetry in the
// nested modules github.com/spindle-rt/spindle/contrib/prometheus and
// github.com/spindle-rt/spindle/contrib/otel, which have go.mod files of
// their own so that the library pulls in no client library.
//
// # expvar
//
// Publish makes an executor's figures an expvar variable, shown as a JSON
// object by expvar.Handler (the /debug/vars page of net/http's default
// mux, or any mux that mounts the handler), read afresh each time:
//
//	ex := executor.New(executor.WithName("api"))
//	metrics.Publish("spindle.api", ex)
//	mux.Handle("GET /debug/vars", expvar.Handler())
//
// shows, among the process's other variables,
//
//	"spindle.api": {"TasksRun": 1042, "Queued": 0, ..., "BusySeconds": 0.25, ...}
//
// PublishGroup does the same for a shard group: its figures summed over
// the shards (shard.Group.Stats) and each shard's own. Var and GroupVar
// return the variables without publishing them, for an expvar.Map of your
// own. This package imports expvar, which registers /debug/vars on
// net/http's default mux: the reason it is a package apart from executor.
//
// # Prometheus' text format
//
// Handler serves the figures of some executors in Prometheus' text
// exposition format, for a /metrics route that a Prometheus server
// scrapes, with no client library (WriteText writes the same to any
// io.Writer):
//
//	mux.Handle("GET /metrics", metrics.Handler(ex))
//
// A service that already has a Prometheus registry registers the collector
// of contrib/prometheus instead; both write the same names, help, types
// and label.
//
// # The figures
//
// Figures lists what the exporters publish for each executor: one entry
// per figure, with its name in each ecosystem's convention, its help text,
// kind and unit. The expvar keys are the Key names; the Prometheus names
// are snake case with the unit as suffix and _total on counters
// (spindle_loop_busy_seconds_total), labelled with the executor's name
// (label "executor"); the OpenTelemetry names are dotted
// (spindle.loop.busy.time, unit "s"), with the executor's name in the
// attribute "spindle.executor" (the same key as its pprof label,
// executor.ProfileLabel). Executors published side by side need distinct
// names (executor.WithName); a shard group's are ("<name>-<i>").
//
// ConnFigures lists netio's connection counts of each executor
// (netio.StatsOf: open, accepted, closed, failed accepts) the same way;
// Var, GroupVar, WriteText and Handler publish them after the executor's
// figures (spindle_netio_open_connections, spindle_netio_accepted_total,
// ...). WriteText and Handler also name the backend that serves each
// executor's sockets, in the info metric BackendInfo
// (spindle_netio_backend_info{backend="epoll",executor="api"} 1).
package metrics
