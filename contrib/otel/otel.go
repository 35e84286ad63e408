package spindleotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/metrics"
	"github.com/spindle-rt/spindle/shard"
)

// ScopeName is the instrumentation scope of the meter the instruments
// belong to.
const ScopeName = "github.com/spindle-rt/spindle/contrib/otel"

// Register makes the instruments of the figures (metrics.Figures) on the
// meter ScopeName of mp and registers one callback that observes the
// figures of every executor of exs at each collection, reading each one's
// Stats once. Unregister the returned registration to stop observing. The
// executors need distinct names (executor.WithName), which their
// measurements carry in the attribute metrics.OTelAttribute.
func Register(mp metric.MeterProvider, exs ...*executor.Executor) (metric.Registration, error) {
	if mp == nil {
		panic("spindleotel: Register with nil MeterProvider")
	}
	for _, ex := range exs {
		if ex == nil {
			panic("spindleotel: Register of nil executor")
		}
	}
	m := mp.Meter(ScopeName)
	figures := metrics.Figures()
	insts := make([]metric.Observable, len(figures))
	for i, f := range figures {
		inst, err := instrument(m, f)
		if err != nil {
			return nil, fmt.Errorf("spindleotel: instrument %s: %w", f.OTel, err)
		}
		insts[i] = inst
	}
	attrs := make([]metric.MeasurementOption, len(exs))
	for i, ex := range exs {
		attrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String(metrics.OTelAttribute, ex.Name())))
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i, ex := range exs {
			st := ex.Stats()
			for j, f := range figures {
				v := f.Value(st)
				switch inst := insts[j].(type) {
				case metric.Int64Observable:
					o.ObserveInt64(inst, int64(v), attrs[i])
				case metric.Float64Observable:
					o.ObserveFloat64(inst, v, attrs[i])
				}
			}
		}
		return nil
	}, insts...)
}

// RegisterGroup is Register of every shard of g.
func RegisterGroup(mp metric.MeterProvider, g *shard.Group) (metric.Registration, error) {
	if g == nil {
		panic("spindleotel: RegisterGroup of nil group")
	}
	exs := make([]*executor.Executor, g.Len())
	for i := range exs {
		exs[i] = g.Shard(i)
	}
	return Register(mp, exs...)
}

// instrument makes f's observable instrument: a counter, an up-down
// counter or a gauge by f's kind, integer or float as f's values are.
func instrument(m metric.Meter, f metrics.Figure) (metric.Observable, error) {
	desc, unit := metric.WithDescription(f.Help), metric.WithUnit(f.Unit)
	switch {
	case f.Kind == metrics.Counter && f.Integer:
		return m.Int64ObservableCounter(f.OTel, desc, unit)
	case f.Kind == metrics.Counter:
		return m.Float64ObservableCounter(f.OTel, desc, unit)
	case f.Kind == metrics.UpDownCounter && f.Integer:
		return m.Int64ObservableUpDownCounter(f.OTel, desc, unit)
	case f.Kind == metrics.UpDownCounter:
		return m.Float64ObservableUpDownCounter(f.OTel, desc, unit)
	case f.Integer:
		return m.Int64ObservableGauge(f.OTel, desc, unit)
	default:
		return m.Float64ObservableGauge(f.OTel, desc, unit)
	}
}
