// Package spindleprom exports the figures of spindle executors and shard
// groups to Prometheus: a prometheus.Collector that reads executor.Stats
// at each scrape.
//
//	ex := executor.New(executor.WithName("api"))
//	prometheus.MustRegister(spindleprom.NewCollector(ex))
//	http.Handle("/metrics", promhttp.Handler())
//
// A scrape then shows, for each executor, the series of the figures that
// package github.com/spindle-rt/spindle/metrics lists (metrics.Figures),
// labelled with the executor's name:
//
//	# HELP spindle_loop_busy_seconds_total Time the loop has spent awake, running tasks.
//	# TYPE spindle_loop_busy_seconds_total counter
//	spindle_loop_busy_seconds_total{executor="api"} 0.25
//
// Counters (spindle_loop_tasks_total, spindle_loop_busy_seconds_total,
// spindle_loop_idle_seconds_total, spindle_loop_stalls_total) only grow;
// rate(spindle_loop_busy_seconds_total[1m]) is the loop's utilization over
// the last minute. Gauges give the queue (spindle_loop_queued), the
// pending timers, the suspended tasks, and the delay that scheduled work
// waits before it runs (spindle_loop_delay_p50_seconds, _p99_, _max_).
// AddGroup adds every shard of a shard.Group, each under its own name
// ("<name>-<i>"); sum by the label for the group.
//
// The executors of one collector (and of one registry) need distinct
// names (executor.WithName): two with one name make the scrape fail with
// a duplicate-series error, as any collector would.
//
// This package is a module of its own (its go.mod requires
// client_golang), so that the library does not depend on it.
package spindleprom
