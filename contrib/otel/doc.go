// Package spindleotel exports the figures of spindle executors and shard
// groups as OpenTelemetry metrics: observable instruments whose callback
// reads executor.Stats at each collection.
//
//	reg, err := spindleotel.Register(otel.GetMeterProvider(), ex)
//	if err != nil { ... }
//	defer reg.Unregister()
//
// Each figure that package github.com/spindle-rt/spindle/metrics lists
// (metrics.Figures) becomes one instrument of the meter named ScopeName,
// in OpenTelemetry's naming style, with the executor's name in the
// attribute "spindle.executor" (metrics.OTelAttribute):
//
//	spindle.loop.tasks        counter         {task}   tasks run
//	spindle.loop.busy.time    counter         s        time awake, running tasks
//	spindle.loop.idle.time    counter         s        time waiting for work
//	spindle.loop.stalls       counter         {stall}  stalls reported
//	spindle.loop.queued       up-down counter {task}   tasks waiting to run
//	spindle.loop.timers       up-down counter {timer}  timers pending
//	spindle.loop.suspended    up-down counter {task}   spawned tasks suspended
//	spindle.loop.delay.p50    gauge           s        delay before scheduled work runs,
//	spindle.loop.delay.p99    gauge           s        over the delay probe's window
//	spindle.loop.delay.max    gauge           s
//
// RegisterGroup registers every shard of a shard.Group, each under its own
// name ("<name>-<i>").
//
// This package is a module of its own (its go.mod requires the
// OpenTelemetry API), so that the library does not depend on it.
package spindleotel
