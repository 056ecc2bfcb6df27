package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// series is one line of a chart.
type series struct {
	name   string
	color  string
	xs, ys []float64
}

type chart struct {
	title, xlabel, ylabel string
	logX, logY            bool
	series                []series
}

const (
	chartW, chartH = 460.0, 320.0
	padL, padR     = 64.0, 16.0
	padT, padB     = 36.0, 48.0
)

// WriteSVG writes a chart of assemble latency (p50 and p99, engine and
// legacy) against history size, and of recall@k against k, side by side.
func WriteSVG(w io.Writer, rep *Report) error {
	var charts []chart
	if a := rep.Assemble; a != nil && len(a.P99Ms) > 0 {
		c := chart{title: "assemble latency vs history size", xlabel: "history (messages, log scale)", ylabel: "ms (log scale)", logX: true, logY: true}
		add := func(name, color string, m map[string]float64) {
			s := series{name: name, color: color}
			for _, k := range sortedKeys(m) {
				x, _ := strconv.Atoi(k)
				s.xs = append(s.xs, float64(x))
				s.ys = append(s.ys, m[k])
			}
			if len(s.xs) > 0 {
				c.series = append(c.series, s)
			}
		}
		add("engine p50", "#1f77b4", a.P50Ms)
		add("engine p99", "#0b3c73", a.P99Ms)
		add(legacyLabel("legacy", a.LegacyCounter)+" p50", "#ff7f0e", a.LegacyP50Ms)
		add(legacyLabel("legacy", a.LegacyCounter)+" p99", "#a64b00", a.LegacyP99Ms)
		add(legacyLabel("legacy", a.LegacyExactCounter)+" p50", "#d62728", a.LegacyExactP50Ms)
		charts = append(charts, c)
	}
	if r := rep.Recall; r != nil && len(r.RecallAt) > 0 {
		c := chart{title: "LoCoMo recall@k", xlabel: "k", ylabel: "recall %"}
		s := series{name: "recall@k", color: "#2ca02c"}
		for _, k := range sortedKeys(r.RecallAt) {
			x, _ := strconv.Atoi(k)
			s.xs = append(s.xs, float64(x))
			s.ys = append(s.ys, r.RecallAt[k])
		}
		c.series = append(c.series, s)
		if len(r.RecallAtNoSpeaker) > 0 {
			s := series{name: "without the speaker prefix", color: "#9467bd"}
			for _, k := range sortedKeys(r.RecallAtNoSpeaker) {
				x, _ := strconv.Atoi(k)
				s.xs = append(s.xs, float64(x))
				s.ys = append(s.ys, r.RecallAtNoSpeaker[k])
			}
			c.series = append(c.series, s)
		}
		charts = append(charts, c)
	}
	var b strings.Builder
	total := math.Max(1, float64(len(charts))) * chartW
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n",
		total, chartH+20, total, chartH+20)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="8" y="%.0f" fill="#666">lossless-bench %s, %d cores, %s</text>`+"\n", chartH+14,
		html.EscapeString(rep.Meta.Date), rep.Meta.Cores, html.EscapeString(rep.Meta.Go))
	if len(charts) == 0 {
		b.WriteString(`<text x="20" y="40">no assemble or recall figures in this run</text>` + "\n")
	}
	for i, c := range charts {
		drawChart(&b, float64(i)*chartW, c)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawChart(b *strings.Builder, ox float64, c chart) {
	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := math.Inf(1), 0.0
	for _, s := range c.series {
		for i := range s.xs {
			minX, maxX = math.Min(minX, s.xs[i]), math.Max(maxX, s.xs[i])
			maxY = math.Max(maxY, s.ys[i])
			if s.ys[i] > 0 {
				minY = math.Min(minY, s.ys[i])
			}
		}
	}
	if maxY <= 0 {
		maxY = 1
	}
	var yTicks []float64
	var fy func(float64) float64
	if c.logY {
		lo := math.Floor(math.Log10(math.Min(minY, maxY)))
		hi := math.Ceil(math.Log10(maxY))
		if hi <= lo {
			hi = lo + 1
		}
		for e := lo; e <= hi; e++ {
			yTicks = append(yTicks, math.Pow(10, e))
		}
		fy = func(y float64) float64 {
			v := math.Log10(math.Max(y, math.Pow(10, lo)))
			return padT + (1-(v-lo)/(hi-lo))*(chartH-padT-padB)
		}
	} else {
		maxY = niceCeil(maxY * 1.05)
		for i := 0; i <= 4; i++ {
			yTicks = append(yTicks, maxY*float64(i)/4)
		}
		fy = func(y float64) float64 { return padT + (1-y/maxY)*(chartH-padT-padB) }
	}
	fx := func(x float64) float64 {
		lo, hi, v := minX, maxX, x
		if c.logX {
			lo, hi, v = math.Log10(math.Max(minX, 1)), math.Log10(math.Max(maxX, 1)), math.Log10(math.Max(x, 1))
		}
		if hi == lo {
			return ox + padL + (chartW-padL-padR)/2
		}
		return ox + padL + (v-lo)/(hi-lo)*(chartW-padL-padR)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", ox+padL, html.EscapeString(c.title))
	// Axes and grid.
	bottom := chartH - padB
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", ox+padL, bottom, ox+chartW-padR, bottom)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", ox+padL, padT, ox+padL, bottom)
	for _, y := range yTicks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", ox+padL, fy(y), ox+chartW-padR, fy(y))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ox+padL-4, fy(y)+4, trimFloat(y))
	}
	ticks := map[float64]bool{}
	for _, s := range c.series {
		for _, x := range s.xs {
			ticks[x] = true
		}
	}
	for x := range ticks {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", fx(x), bottom+14, html.EscapeString(countLabel(x)))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", ox+padL+(chartW-padL-padR)/2, chartH-padB+30, html.EscapeString(c.xlabel))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" transform="rotate(-90 %.1f %.1f)" text-anchor="middle">%s</text>`+"\n",
		ox+14, padT+(chartH-padT-padB)/2, ox+14, padT+(chartH-padT-padB)/2, html.EscapeString(c.ylabel))
	for i, s := range c.series {
		var pts []string
		for j := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", fx(s.xs[j]), fy(s.ys[j])))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		for j := range s.xs {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s = %s</title></circle>`+"\n",
				fx(s.xs[j]), fy(s.ys[j]), s.color, html.EscapeString(s.name), trimFloat(s.xs[j]), trimFloat(s.ys[j]))
		}
		ly := padT + 4 + float64(i)*14
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			ox+chartW-padR-110, ly, s.color, ox+chartW-padR-96, ly+4, html.EscapeString(s.name))
	}
}

// countLabel writes 1000 as 1K and 1000000 as 1M.
func countLabel(x float64) string {
	switch {
	case x >= 1e6 && math.Mod(x, 1e5) == 0:
		return trimFloat(x/1e6) + "M"
	case x >= 1e3 && math.Mod(x, 100) == 0:
		return trimFloat(x/1e3) + "K"
	}
	return trimFloat(x)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
