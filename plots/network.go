package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// NetworkLatency draws a network's latency against the measured trials it
// cost, on log-log axes: the search's curve (search: X the measured trials
// over all subgraphs at each budget, Y the network latency in µs) as a
// line with markers, and each policy's points (one Series per policy, its
// best of k for each k) as markers of their own. A dashed line marks the
// search's best (its last point). network names the network ("resnet-18,
// batch=1,r=224"); source is the latency source, in the y axis label.
func NetworkLatency(network string, search Series, policies []Series, source string, st Style) (*Figure, error) {
	const name = "network_latency"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSource(source); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if network == "" {
		return nil, figErr(name, "no network name")
	}
	all := append([]Series{search}, policies...)
	if err := checkSeries("network", all); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	lox, hix, loy, hiy := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range all {
		for i := range s.X {
			if s.X[i] <= 0 || s.Y[i] <= 0 {
				return nil, figErr(name, "series %q point %d is (%g, %g); trials and latencies are above 0", s.Name, i, s.X[i], s.Y[i])
			}
			lox, hix = math.Min(lox, s.X[i]), math.Max(hix, s.X[i])
			loy, hiy = math.Min(loy, s.Y[i]), math.Max(hiy, s.Y[i])
		}
	}
	logs := func(vs []float64) []float64 {
		out := make([]float64, len(vs))
		for i, v := range vs {
			out[i] = math.Log10(v)
		}
		return out
	}
	l := st.look()
	title := "Network latency: " + network
	p := newPlot(l, title, "measured trials (all subgraphs)", fmt.Sprintf("network latency, µs (%s)", sourceLabel(source)))
	setLog(&p.X, lox/1.5, hix*1.5)
	setLog(&p.Y, loy/1.2, hiy*1.2)
	leg := newLegend(l)

	best := search.Y[len(search.Y)-1]
	ref, err := plotter.NewLine(plotter.XYs{{X: math.Log10(lox / 1.5), Y: math.Log10(best)}, {X: math.Log10(hix * 1.5), Y: math.Log10(best)}})
	if err != nil {
		return nil, figErr(name, "reference: %w", err)
	}
	ref.LineStyle = draw.LineStyle{Color: neutral, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	p.Add(ref)

	line, pts, err := plotter.NewLinePoints(xys(logs(search.X), logs(search.Y)))
	if err != nil {
		return nil, figErr(name, "search: %w", err)
	}
	line.LineStyle = l.lineStyle(0)
	pts.GlyphStyle = l.glyphStyle(0)
	p.Add(line, pts)
	leg.Add(search.Name, line, pts)
	for i, s := range policies {
		sc, err := plotter.NewScatter(xys(logs(s.X), logs(s.Y)))
		if err != nil {
			return nil, figErr(name, "%s: %w", s.Name, err)
		}
		sc.GlyphStyle = l.glyphStyle(i + 1)
		sc.GlyphStyle.Radius = vg.Points(3.5)
		p.Add(sc)
		leg.Add(s.Name, sc)
	}
	leg.Add("the search's best", ref)

	svg, png, err := render(name, l, func(c draw.Canvas) { drawWithLegend(c, p, &leg) })
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("Latency of %s (the sum of count x latency over its distinct subgraphs) against the measured trials it took over all subgraphs, %s; log-log axes. "+
		"The line is the search at each budget, the dashed line its best; each other marker is a policy's best of k attempts (%d policies).",
		network, sourceWords(source), len(policies))
	return &Figure{Name: name, Title: title, Caption: caption, SVG: svg, PNG: png}, nil
}
