package metrics

import (
	"encoding/json"
	"expvar"
	"strconv"
	"strings"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/shard"
)

// Var returns an expvar.Var that shows ex's figures (Figures) as a JSON
// object with their Key names, read from ex.Stats() each time it is shown.
// It may be read from any goroutine, before, while and after ex runs.
func Var(ex *executor.Executor) expvar.Var {
	if ex == nil {
		panic("metrics: Var of nil executor")
	}
	return statsVar(ex.Stats)
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

// statsVar shows the Stats its func returns.
type statsVar func() executor.Stats

func (v statsVar) String() string {
	var b strings.Builder
	writeStats(&b, v())
	return b.String()
}

type groupVar struct{ g *shard.Group }

func (v groupVar) String() string {
	var b strings.Builder
	b.WriteString(`{"Total": `)
	writeStats(&b, v.g.Stats())
	b.WriteString(`, "Shards": {`)
	for i := range v.g.Len() {
		ex := v.g.Shard(i)
		if i > 0 {
			b.WriteString(", ")
		}
		name, _ := json.Marshal(ex.Name())
		b.Write(name)
		b.WriteString(": ")
		writeStats(&b, ex.Stats())
	}
	b.WriteString("}}")
	return b.String()
}

// writeStats writes s as a JSON object of the figures.
func writeStats(b *strings.Builder, s executor.Stats) {
	b.WriteByte('{')
	for i, f := range figures {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('"')
		b.WriteString(f.Key)
		b.WriteString(`": `)
		v, _ := json.Marshal(f.Value(s)) // a finite float64: cannot fail
		b.Write(v)
	}
	b.WriteByte('}')
}
