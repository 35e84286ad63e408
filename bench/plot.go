package main

// -plot DIR: one SVG per group, written by hand with the standard library
// (no plotting dependency in the library's go.mod). Each chart has a panel
// of bars per (Group, Unit) section, the median per unit with a whisker
// from the fastest to the slowest run, and a panel of each case's ratio to
// its baseline on a log scale. Spindle's cases are drawn in the accent
// colour.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// kindColors are the bar colours of each kind.
var kindColors = map[string]string{
	kindSpindle: "#d9480f",
	kindGo:      "#868e96",
	kindPeer:    "#1c7ed6",
	kindVariant: "#ced4da",
}

// Chart geometry, in pixels.
const (
	chartWidth  = 960
	rowHeight   = 20
	barHeight   = 12
	charWidth   = 7.3 // of the 12px monospace font
	valueMargin = 190 // right of the plot area, for the value labels
	panelGap    = 36
	noteWidth   = 125 // characters of a note line
)

// plotFile returns the file name of group's chart: "peers-chain.svg" for
// "Peers/Chain".
func plotFile(group string) string {
	return strings.ToLower(strings.NewReplacer("/", "-", " ", "_").Replace(group)) + ".svg"
}

// writePlots writes one chart per group of sums into dir, creating it, and
// returns the files' paths.
func writePlots(dir string, env environment, sums []caseSummary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var order []string
	byGroup := map[string][]caseSummary{}
	for _, s := range sums {
		g := s.Case.Group
		if _, ok := byGroup[g]; !ok {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], s)
	}
	var paths []string
	for _, g := range order {
		p := filepath.Join(dir, plotFile(g))
		if err := os.WriteFile(p, groupChart(g, env, byGroup[g]), 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// svg accumulates an SVG document.
type svg struct {
	b bytes.Buffer
}

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// text writes a text element; anchor is "start", "middle" or "end".
func (s *svg) text(x, y float64, anchor, class, str string) {
	s.f(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`+"\n", x, y, anchor, class, esc(str))
}

// esc escapes text for XML.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// scale maps values to x pixels on [x0, x1].
type scale struct {
	log        bool
	lo, hi     float64 // domain: values for log scales, else values
	x0, x1     float64
	ticks      []float64
	tickLabels []string
}

func (sc scale) x(v float64) float64 {
	if sc.log {
		v = math.Max(v, sc.lo)
		return sc.x0 + (math.Log10(v)-math.Log10(sc.lo))/(math.Log10(sc.hi)-math.Log10(sc.lo))*(sc.x1-sc.x0)
	}
	return sc.x0 + (v-sc.lo)/(sc.hi-sc.lo)*(sc.x1-sc.x0)
}

// valueScale returns the scale of a bar panel whose figures span [lo, hi]:
// linear from 0 unless hi/lo exceeds 30, then logarithmic over whole
// decades (powers of 4 for bytes: 256B, 1KiB, 4KiB).
func valueScale(metric string, lo, hi, x0, x1 float64) scale {
	sc := scale{x0: x0, x1: x1}
	if lo > 0 && hi/lo > 30 {
		base := 10.0
		if metric == "B" {
			base = 4
		}
		logb := func(v float64) float64 { return math.Log(v) / math.Log(base) }
		sc.log = true
		sc.lo = math.Pow(base, math.Floor(logb(lo)+1e-9))
		sc.hi = math.Pow(base, math.Ceil(logb(hi)-1e-9))
		for v := sc.lo; v <= sc.hi*1.0001; v *= base {
			sc.ticks = append(sc.ticks, v)
			sc.tickLabels = append(sc.tickLabels, fmtTick(metric, v))
		}
		return sc
	}
	step := niceStep(hi / 5)
	sc.lo, sc.hi = 0, math.Max(step, math.Ceil(hi/step)*step)
	for v := 0.0; v <= sc.hi*1.0001; v += step {
		sc.ticks = append(sc.ticks, v)
		sc.tickLabels = append(sc.tickLabels, fmtTick(metric, v))
	}
	return sc
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick formats an axis label: short, without trailing zeros.
func fmtTick(metric string, v float64) string {
	s := fmtValue(metric, v)
	for _, u := range []string{"ns", "us", "ms", "s", "KiB", "MiB", "B"} {
		if num, ok := strings.CutSuffix(s, u); ok {
			if strings.Contains(num, ".") {
				num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
			}
			return num + u
		}
	}
	return s
}

// ratioScale returns the log scale of the ratio panel, symmetric around 1
// and covering every ratio in rs.
func ratioScale(rs []float64, x0, x1 float64) scale {
	m := math.Log10(2)
	for _, r := range rs {
		m = math.Max(m, math.Abs(math.Log10(r)))
	}
	// Round the reach up to 2, 5 or 10 times a power of ten.
	reach := niceStep(math.Pow(10, m))
	sc := scale{log: true, lo: 1 / reach, hi: reach, x0: x0, x1: x1}
	tick := func(t float64) {
		sc.ticks = append(sc.ticks, 1/t, t)
		sc.tickLabels = append(sc.tickLabels, "1/"+trimFloat(t), trimFloat(t))
	}
	for t := 10.0; t <= reach*1.0001; t *= 10 {
		tick(t)
	}
	if reach <= 20 {
		tick(2)
		if reach >= 5 {
			tick(5)
		}
	} else if d := math.Pow(10, math.Floor(math.Log10(reach))); reach > d*1.0001 {
		tick(reach) // the end of the axis, 20 or 50 times a power of ten
	}
	sc.ticks = append(sc.ticks, 1)
	sc.tickLabels = append(sc.tickLabels, "1")
	return sc
}

func trimFloat(v float64) string { return fmt.Sprintf("%g", v) }

// groupChart draws group's chart.
func groupChart(group string, env environment, sums []caseSummary) []byte {
	labelW := 0.0
	for _, s := range sums {
		labelW = math.Max(labelW, float64(len(s.Case.Name)))
		if s.Case.Baseline != "" {
			labelW = math.Max(labelW, float64(len(s.Case.Name)+len(" vs ")+len(s.Case.Baseline)))
		}
	}
	x0 := 20 + labelW*charWidth + 12
	x1 := float64(chartWidth - valueMargin)

	var body svg
	y := 30.0
	body.text(20, y, "start", "title", group)
	y += 20
	runs := fmt.Sprintf("%d runs", env.Runs)
	if env.PerRun > 0 {
		runs += fmt.Sprintf(" of %v", env.PerRun)
	}
	body.text(20, y, "start", "note", fmt.Sprintf("%s %s/%s, %d CPUs, %s%s", env.GoVersion, env.GOOS, env.GOARCH, env.NumCPU, runs, dateSuffix(env.Date)))
	y += 22
	// Legend.
	lx := 20.0
	for _, k := range []string{kindSpindle, kindGo, kindPeer, kindVariant} {
		body.f(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, y-10, kindColors[k])
		body.text(lx+16, y, "start", "note", k)
		lx += 16 + float64(len(k))*charWidth + 22
	}
	y += 14

	// One bar panel per (unit, metric) section.
	var ratios []caseSummary
	for i := 0; i < len(sums); {
		j := i
		for j < len(sums) && sums[j].Case.Unit == sums[i].Case.Unit && metricOf(sums[j].Case) == metricOf(sums[i].Case) {
			j++
		}
		y = barPanel(&body, sums[i:j], x0, x1, y+panelGap)
		i = j
	}
	for _, s := range sums {
		if s.VsBaseline != nil {
			ratios = append(ratios, s)
		}
	}
	if len(ratios) > 0 {
		y = ratioPanel(&body, ratios, x0, x1, y+panelGap)
	}
	if note := env.Notes[group]; note != "" {
		y += 26
		for _, l := range wrap(note, noteWidth) {
			body.text(20, y, "start", "note", l)
			y += 16
		}
	}
	height := y + 20

	var out svg
	out.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f">`+"\n", chartWidth, height, chartWidth, height)
	out.f(`<style>
text { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; fill: #212529; }
.title { font-size: 16px; font-weight: bold; }
.head { font-weight: bold; }
.note { fill: #495057; }
.tick { fill: #868e96; font-size: 11px; }
.spindle { font-weight: bold; fill: #d9480f; }
.value { fill: #495057; }
</style>
<rect width="100%%" height="100%%" fill="white"/>
`)
	out.b.Write(body.b.Bytes())
	out.f("</svg>\n")
	return out.b.Bytes()
}

// dateSuffix is ", <date>" for a date, else "".
func dateSuffix(date string) string {
	if date == "" {
		return ""
	}
	if len(date) >= 10 {
		date = date[:10]
	}
	return ", " + date
}

// axis draws a scale's grid lines and tick labels between y0 and y1, the
// labels under y1.
func axis(b *svg, sc scale, y0, y1 float64) {
	for i, t := range sc.ticks {
		x := sc.x(t)
		stroke := "#e9ecef"
		if sc.log && t == 1 && sc.lo < 1 {
			stroke = "#495057"
		}
		b.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, y0, x, y1, stroke)
		b.text(x, y1+14, "middle", "tick", sc.tickLabels[i])
	}
}

// barPanel draws the bars of one section from y and returns the y below it.
func barPanel(b *svg, sums []caseSummary, x0, x1, y float64) float64 {
	c := sums[0].Case
	metric := metricOf(c)
	lo, hi := math.Inf(1), 0.0
	for _, s := range sums {
		if s.Status == statusOK {
			lo, hi = math.Min(lo, math.Max(s.Min, 1e-9)), math.Max(hi, s.Max)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	sc := valueScale(metric, lo, hi, x0, x1)
	what := "time"
	switch metric {
	case "cpu-ns":
		what = "CPU time"
	case "B":
		what = "bytes"
	}
	scaleNote := ""
	if sc.log {
		scaleNote = ", log scale"
	}
	b.text(20, y, "start", "head", fmt.Sprintf("%s/%s: %s per %s, median (bar) and min-max of the runs (whisker)%s", metric, c.Unit, what, c.Unit, scaleNote))
	top := y + 10
	y = top
	axis(b, sc, top, top+float64(len(sums)*rowHeight))
	for _, s := range sums {
		cy := y + rowHeight/2
		rowLabel(b, s.Case, x0, cy, s.Case.Name)
		if s.Status != statusOK {
			b.text(x0+4, cy+4, "start", "value", s.Status)
			y += rowHeight
			continue
		}
		xm := sc.x(s.Median)
		b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
			x0, cy-barHeight/2, math.Max(xm-x0, 1), barHeight, kindColors[kindOf(s.Case)], esc(s.Case.Name), fmtValue(metric, s.Median))
		xa, xb := sc.x(s.Min), sc.x(s.Max)
		b.f(`<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" stroke="#212529" fill="none"/>`+"\n",
			xa, cy, xb, xa, cy-4, cy+4, xb, cy-4, cy+4)
		b.text(math.Max(xb, xm)+8, cy+4, "start", "value", fmtValue(metric, s.Median))
		y += rowHeight
	}
	return y + 18
}

// rowLabel writes a row's label left of x0, spindle's cases highlighted.
func rowLabel(b *svg, c Case, x0, cy float64, label string) {
	class := ""
	if kindOf(c) == kindSpindle {
		class = "spindle"
	}
	b.text(x0-10, cy+4, "end", class, label)
}

// ratioPanel draws each case's ratio to its baseline from y and returns the
// y below it.
func ratioPanel(b *svg, sums []caseSummary, x0, x1, y float64) float64 {
	var rs []float64
	for _, s := range sums {
		rs = append(rs, *s.VsBaseline)
	}
	sc := ratioScale(rs, x0, x1)
	b.text(20, y, "start", "head", "ratio to the baseline (baseline's median / the case's), log scale: right of 1 is better")
	top := y + 10
	y = top
	axis(b, sc, top, top+float64(len(sums)*rowHeight))
	for _, s := range sums {
		cy := y + rowHeight/2
		rowLabel(b, s.Case, x0, cy, s.Case.Name+" vs "+s.Case.Baseline)
		r := *s.VsBaseline
		xa, xb := sc.x(1), sc.x(r)
		b.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>`+"\n",
			math.Min(xa, xb), cy-barHeight/2, math.Max(math.Abs(xb-xa), 1), barHeight, kindColors[kindOf(s.Case)])
		b.text(math.Max(xa, xb)+8, cy+4, "start", "value", fmtRatioOf(metricOf(s.Case), r))
		y += rowHeight
	}
	return y + 18
}

// wrap splits s into lines of at most width characters at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
