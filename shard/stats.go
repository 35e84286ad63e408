package shard

import "github.com/spindle-rt/spindle/executor"

// Stats returns the group's figures summed over its shards: TasksRun,
// Queued, Timers, Suspended, Busy, Idle and Stalls are sums (so
// Utilization is the group's average), and Delay is the worst shard's:
// the largest P50, P99 and Max of any shard, its samples added up and the
// longest window. Each shard's own figures are Shard(i).Stats(). It may
// be called from any goroutine, with the precision of executor.Stats.
func (g *Group) Stats() executor.Stats {
	var sum executor.Stats
	for _, s := range g.shards {
		st := s.exe.Stats()
		sum.TasksRun += st.TasksRun
		sum.Queued += st.Queued
		sum.Timers += st.Timers
		sum.Suspended += st.Suspended
		sum.Busy += st.Busy
		sum.Idle += st.Idle
		sum.Stalls += st.Stalls
		d := &sum.Delay
		d.P50 = max(d.P50, st.Delay.P50)
		d.P99 = max(d.P99, st.Delay.P99)
		d.Max = max(d.Max, st.Delay.Max)
		d.Samples += st.Delay.Samples
		d.Window = max(d.Window, st.Delay.Window)
	}
	return sum
}
