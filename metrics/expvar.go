package metrics

import (
	"encoding/json"
	"expvar"
	"strconv"
	"strings"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// Var returns an expvar.Var that shows ex's figures (Figures) as a JSON
// object with their Key names, read from ex.Stats() each time it is shown.
// It may be read from any goroutine, before, while and after ex runs.
func Var(ex *executor.Executor) expvar.Var {
	if ex == nil {
		panic("metrics: Var of nil executor")
	}
	return statsVar{ex}
}

// GroupVar returns an expvar.Var that shows a shard group's figures: a
// JSON object with the figures summed over the shards under "Total"
// (shard.Group.Stats) and each shard's own under "Shards", keyed by the
// shard's executor name.
func GroupVar(g *shard.Group) expvar.Var {
	if g == nil {
		panic("metrics: GroupVar of nil group")
	}
	return groupVar{g}
}

// Publish publishes Var(ex) as the expvar variable name. Like
// expvar.Publish it panics if the name is already taken.
func Publish(name string, ex *executor.Executor) { publish(name, Var(ex)) }

// PublishGroup publishes GroupVar(g) as the expvar variable name. Like
// expvar.Publish it panics if the name is already taken.
func PublishGroup(name string, g *shard.Group) { publish(name, GroupVar(g)) }

func publish(name string, v expvar.Var) {
	if expvar.Get(name) != nil {
		panic("metrics: Publish of expvar name " + strconv.Quote(name) + ", which is already taken")
	}
	expvar.Publish(name, v)
}

// statsVar shows an executor's figures.
type statsVar struct{ ex *executor.Executor }

func (v statsVar) String() string {
	var b strings.Builder
	writeStats(&b, v.ex.Stats(), netio.StatsOf(v.ex))
	return b.String()
}

type groupVar struct{ g *shard.Group }

func (v groupVar) String() string {
	var b strings.Builder
	b.WriteString(`{"Total": `)
	shards := make([]*executor.Executor, v.g.Len())
	for i := range shards {
		shards[i] = v.g.Shard(i)
	}
	writeStats(&b, v.g.Stats(), connStats(shards...))
	b.WriteString(`, "Shards": {`)
	for i, ex := range shards {
		if i > 0 {
			b.WriteString(", ")
		}
		name, _ := json.Marshal(ex.Name())
		b.Write(name)
		b.WriteString(": ")
		writeStats(&b, ex.Stats(), netio.StatsOf(ex))
	}
	b.WriteString("}}")
	return b.String()
}

// writeStats writes s and n as a JSON object of the figures.
func writeStats(b *strings.Builder, s executor.Stats, n netio.Stats) {
	b.WriteByte('{')
	for i, f := range figures {
		if i > 0 {
			b.WriteString(", ")
		}
		writeFigure(b, f.Key, f.Value(s))
	}
	for _, f := range connFigures {
		b.WriteString(", ")
		writeFigure(b, f.Key, f.Value(n))
	}
	b.WriteByte('}')
}

func writeFigure(b *strings.Builder, key string, v float64) {
	b.WriteByte('"')
	b.WriteString(key)
	b.WriteString(`": `)
	j, _ := json.Marshal(v) // a finite float64: cannot fail
	b.Write(j)
}
