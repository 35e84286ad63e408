package metrics

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/netio"
)

// WriteText writes the figures of exs to w in Prometheus' text exposition
// format (version 0.0.4), with the names, help, types and label that
// contrib/prometheus's collector uses: what a service with no Prometheus
// client library serves on /metrics for a Prometheus server to scrape.
// Each executor's Stats is read once. The executors need distinct names.
func WriteText(w io.Writer, exs ...*executor.Executor) error {
	stats := make([]executor.Stats, len(exs))
	conns := make([]netio.Stats, len(exs))
	for i, ex := range exs {
		stats[i] = ex.Stats()
		conns[i] = netio.StatsOf(ex)
	}
	b := bufio.NewWriter(w)
	for _, f := range figures {
		typ := "gauge"
		if f.Kind == Counter {
			typ = "counter"
		}
		b.WriteString("# HELP " + f.Prometheus + " " + f.Help + "\n")
		b.WriteString("# TYPE " + f.Prometheus + " " + typ + "\n")
		for i, ex := range exs {
			b.WriteString(f.Prometheus + "{" + PrometheusLabel + "=\"" + labelEscaper.Replace(ex.Name()) + "\"} ")
			b.WriteString(strconv.FormatFloat(f.Value(stats[i]), 'g', -1, 64) + "\n")
		}
	}
	for _, f := range connFigures {
		typ := "gauge"
		if f.Kind == Counter {
			typ = "counter"
		}
		b.WriteString("# HELP " + f.Prometheus + " " + f.Help + "\n")
		b.WriteString("# TYPE " + f.Prometheus + " " + typ + "\n")
		for i, ex := range exs {
			b.WriteString(f.Prometheus + "{" + PrometheusLabel + "=\"" + labelEscaper.Replace(ex.Name()) + "\"} ")
			b.WriteString(strconv.FormatFloat(f.Value(conns[i]), 'g', -1, 64) + "\n")
		}
	}
	described := false
	for i, ex := range exs {
		if conns[i].Backend == "" {
			continue // no socket served yet: no series (and no family without one)
		}
		if !described {
			described = true
			b.WriteString("# HELP " + BackendInfo + " " + BackendHelp + "\n")
			b.WriteString("# TYPE " + BackendInfo + " gauge\n")
		}
		// Labels in name order, as client_golang writes them.
		b.WriteString(BackendInfo + "{" + BackendLabel + "=\"" + labelEscaper.Replace(conns[i].Backend) + "\"," +
			PrometheusLabel + "=\"" + labelEscaper.Replace(ex.Name()) + "\"} 1\n")
	}
	return b.Flush()
}

// labelEscaper escapes a label value as the text format wants.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Handler returns an http.Handler that serves the figures of exs in
// Prometheus' text format (WriteText), for a /metrics route.
func Handler(exs ...*executor.Executor) http.Handler {
	for _, ex := range exs {
		if ex == nil {
			panic("metrics: Handler of nil executor")
		}
	}
	exs = append([]*executor.Executor(nil), exs...)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = WriteText(w, exs...)
	})
}
