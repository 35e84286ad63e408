// Command plot draws the charts of a report of the bench runner (go run
// ./bench -json FILE) with gonum.org/v1/plot: one SVG per group, with a
// panel per (group, unit) section (each case's median as a bar, coloured
// by kind, with a whisker from the fastest to the slowest run) and a panel
// of each case's ratio to its baseline on a log scale (right of 1: better
// than the baseline).
//
// Usage:
//
//	go run . -in REPORT.json -out DIR
//
// The runner runs it for -plot DIR. It is a module of its own so that the
// library's go.mod never names a plotting library.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// report is the part of the runner's -json report the charts use.
type report struct {
	Go         string `json:"go"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Date       string `json:"date"`
	Cases      []struct {
		Group, Case, Unit, Metric, Kind, Baseline, Status string
		Median                                            *float64 `json:"median_ns"`
		Min                                               *float64 `json:"min_ns"`
		Max                                               *float64 `json:"max_ns"`
		VsBaseline                                        *float64 `json:"vs_baseline"`
	} `json:"cases"`
}

// kindColors are the bar colours of each kind: spindle in the accent colour.
var kindColors = map[string]color.Color{
	"spindle": color.RGBA{0xd9, 0x48, 0x0f, 0xff},
	"go":      color.RGBA{0x86, 0x8e, 0x96, 0xff},
	"peer":    color.RGBA{0x1c, 0x7e, 0xd6, 0xff},
	"variant": color.RGBA{0xce, 0xd4, 0xda, 0xff},
}

// bar is one case of a panel.
type bar struct {
	label, kind      string
	value, low, high float64
}

// panel is one chart panel: a title, its bars and whether its axis is the
// ratio's.
type panel struct {
	title string
	ratio bool
	bars  []bar
}

func main() {
	in := flag.String("in", "", "the runner's -json `report`")
	out := flag.String("out", "", "`directory` to write the charts into")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run . -in REPORT.json -out DIR")
		os.Exit(2)
	}
	n, err := writeCharts(*in, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "plot: wrote %d charts into %s\n", n, *out)
}

// writeCharts writes one chart per group of the report at in into dir
// and returns how many it wrote.
func writeCharts(in, dir string) (int, error) {
	data, err := os.ReadFile(in)
	if err != nil {
		return 0, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return 0, fmt.Errorf("reading %s: %w", in, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	var groups []string
	panels := map[string][]panel{}
	for _, c := range rep.Cases {
		if c.Status != "ok" || c.Median == nil || c.Min == nil || c.Max == nil {
			continue
		}
		metric := c.Metric
		if metric == "" {
			metric = "ns"
		}
		ps := panels[c.Group]
		if ps == nil {
			groups = append(groups, c.Group)
			ps = []panel{{title: "ratio to the baseline (log scale; right of 1: better)", ratio: true}}
		}
		title := fmt.Sprintf("%s/%s: median, whisker from min to max", metric, c.Unit)
		if len(ps) == 1 || ps[len(ps)-2].title != title {
			ps = append(ps[:len(ps)-1], panel{title: title}, ps[len(ps)-1])
		}
		ps[len(ps)-2].bars = append(ps[len(ps)-2].bars, bar{c.Case, c.Kind, *c.Median, *c.Min, *c.Max})
		if c.VsBaseline != nil {
			ps[len(ps)-1].bars = append(ps[len(ps)-1].bars, bar{c.Case + " vs " + c.Baseline, c.Kind, *c.VsBaseline, *c.VsBaseline, *c.VsBaseline})
		}
		panels[c.Group] = ps
	}
	subtitle := fmt.Sprintf("%s, %d cores (GOMAXPROCS %d)", rep.Go, rep.NumCPU, rep.GOMAXPROCS)
	if len(rep.Date) >= 10 {
		subtitle += ", " + rep.Date[:10]
	}
	for _, g := range groups {
		path := filepath.Join(dir, strings.ToLower(strings.NewReplacer("/", "-", " ", "_").Replace(g))+".svg")
		if err := writeChart(path, g+" — "+subtitle, panels[g]); err != nil {
			return 0, err
		}
	}
	return len(groups), nil
}

// Chart geometry.
const (
	chartWidth = 9 * vg.Inch
	rowHeight  = 0.25 * vg.Inch
	panelExtra = 0.9 * vg.Inch // title, axis and tick labels of a panel
)

// writeChart draws the panels one under the other into an SVG at path.
func writeChart(path, title string, ps []panel) error {
	if len(ps[len(ps)-1].bars) == 0 {
		ps = ps[:len(ps)-1] // no case has a baseline
	}
	height := vg.Length(0.4 * vg.Inch)
	for _, p := range ps {
		height += panelExtra + rowHeight*vg.Length(len(p.bars))
	}
	canvas := vgsvg.New(chartWidth, height)
	dc := draw.New(canvas)
	font := plot.DefaultFont
	font.Size = vg.Points(13)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: font, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
		vg.Point{X: chartWidth / 2, Y: height - 0.3*vg.Inch}, title)
	top := vg.Length(0.4 * vg.Inch)
	for _, p := range ps {
		h := panelExtra + rowHeight*vg.Length(len(p.bars))
		plt, err := panelPlot(p)
		if err != nil {
			return err
		}
		plt.Draw(draw.Crop(dc, 0.1*vg.Inch, -0.2*vg.Inch, height-top-h, -top))
		top += h
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// panelPlot builds the plot of one panel: horizontal bars, first case at
// the top, a whisker and the value beside each bar.
func panelPlot(p panel) (*plot.Plot, error) {
	plt := plot.New()
	plt.Title.Text = p.title
	n := len(p.bars)
	names := make([]string, n)
	var whiskers spans
	labels := plotter.XYLabels{}
	lo, hi := p.bars[0].low, p.bars[0].high
	for i, b := range p.bars {
		names[n-1-i] = b.label
		whiskers = append(whiskers, b)
		at := b.high
		if p.ratio {
			at = max(at, 1) // right of the line at 1
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: at, Y: float64(n - 1 - i)})
		labels.Labels = append(labels.Labels, " "+valueText(p.ratio, b.value))
		lo, hi = min(lo, b.low), max(hi, b.high)
	}
	logScale := p.ratio || (lo > 0 && hi/lo > 30)
	base := 0.0 // where the bars start: 0, the axis' minimum on a log scale, 1 for ratios
	switch {
	case p.ratio:
		lo, hi, base = min(lo, 1), max(hi, 1), 1
		plt.X.Min, plt.X.Max = lo/1.5, hi*3 // room for the value labels
	case logScale:
		plt.X.Min, plt.X.Max = lo/1.5, hi*3
		base = plt.X.Min
	default:
		plt.X.Min, plt.X.Max = 0, hi*1.35
	}
	if logScale {
		plt.X.Scale, plt.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	for i, b := range p.bars {
		y := float64(n - 1 - i)
		line, err := plotter.NewLine(plotter.XYs{{X: base, Y: y}, {X: b.value, Y: y}})
		if err != nil {
			return nil, err
		}
		line.LineStyle = draw.LineStyle{Color: kindColors[b.kind], Width: rowHeight * 0.6}
		plt.Add(line)
	}
	if !p.ratio {
		wb, err := plotter.NewXErrorBars(whiskers)
		if err != nil {
			return nil, err
		}
		plt.Add(wb)
	}
	lbl, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	plt.Add(lbl)
	plt.NominalY(names...)
	if p.ratio {
		one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: float64(n) - 0.5}})
		if err != nil {
			return nil, err
		}
		plt.Add(one)
	}
	return plt, nil
}

// valueText formats a bar's value: a ratio as "2.5x", else as the number.
func valueText(ratio bool, v float64) string {
	if ratio {
		return fmt.Sprintf("%.2fx", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// spans are the whiskers of a panel: XErrorBars' XYer and XErrorer.
type spans []bar

func (s spans) Len() int                        { return len(s) }
func (s spans) XY(i int) (float64, float64)     { return s[i].value, float64(len(s) - 1 - i) }
func (s spans) XError(i int) (float64, float64) { return s[i].value - s[i].low, s[i].high - s[i].value }
