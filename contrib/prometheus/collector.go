package spindleprom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/netio"
	"github.com/spindle-rt/spindle/shard"
)

// Collector is a prometheus.Collector of the figures of spindle
// executors and of their netio connections (metrics.Figures and
// metrics.ConnFigures, and the info metric metrics.BackendInfo). Make one with NewCollector; its methods may be called from
// any goroutine, and it reads each executor's Stats at every scrape.
// A registry takes one Collector (a second one describes the same metrics,
// and Register refuses it as a duplicate): add every executor to it.
type Collector struct {
	figures []metrics.Figure
	descs   []*prometheus.Desc // descs[i] describes figures[i]
	conns   []metrics.ConnFigure
	cdescs  []*prometheus.Desc // cdescs[i] describes conns[i]
	backend *prometheus.Desc   // metrics.BackendInfo

	mu  sync.Mutex
	exs []*executor.Executor
}

// NewCollector returns a collector of the figures of exs (more may be
// added with Add and AddGroup).
func NewCollector(exs ...*executor.Executor) *Collector {
	c := &Collector{figures: metrics.Figures(), conns: metrics.ConnFigures(),
		backend: prometheus.NewDesc(metrics.BackendInfo, metrics.BackendHelp, []string{metrics.PrometheusLabel, metrics.BackendLabel}, nil)}
	for _, f := range c.figures {
		c.descs = append(c.descs, prometheus.NewDesc(f.Prometheus, f.Help, []string{metrics.PrometheusLabel}, nil))
	}
	for _, f := range c.conns {
		c.cdescs = append(c.cdescs, prometheus.NewDesc(f.Prometheus, f.Help, []string{metrics.PrometheusLabel}, nil))
	}
	c.Add(exs...)
	return c
}

// Add adds executors to the collector, from the next scrape on. It panics
// on a nil executor.
func (c *Collector) Add(exs ...*executor.Executor) {
	for _, ex := range exs {
		if ex == nil {
			panic("spindleprom: Add of nil executor")
		}
	}
	c.mu.Lock()
	c.exs = append(c.exs, exs...)
	c.mu.Unlock()
}

// AddGroup adds every shard of g to the collector, each under its
// executor's name.
func (c *Collector) AddGroup(g *shard.Group) {
	if g == nil {
		panic("spindleprom: AddGroup of nil group")
	}
	for i := range g.Len() {
		c.Add(g.Shard(i))
	}
}

// Describe sends the descriptors of every metric the collector makes.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	for _, d := range c.cdescs {
		ch <- d
	}
	ch <- c.backend
}

// Collect sends the current figures of every executor.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	exs := c.exs[:len(c.exs):len(c.exs)]
	c.mu.Unlock()
	for _, ex := range exs {
		st, name := ex.Stats(), ex.Name()
		for i, f := range c.figures {
			typ := prometheus.GaugeValue
			if f.Kind == metrics.Counter {
				typ = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(c.descs[i], typ, f.Value(st), name)
		}
		ns := netio.StatsOf(ex)
		for i, f := range c.conns {
			typ := prometheus.GaugeValue
			if f.Kind == metrics.Counter {
				typ = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(c.cdescs[i], typ, f.Value(ns), name)
		}
		if ns.Backend != "" {
			ch <- prometheus.MustNewConstMetric(c.backend, prometheus.GaugeValue, 1, name, ns.Backend)
		}
	}
}
