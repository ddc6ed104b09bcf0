package plots

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// checkSource refuses an empty latency source: a latency-derived figure
// must say where its latencies come from.
func checkSource(source string) error {
	if source == "" {
		return fmt.Errorf("latency source is empty; give the bench's source, e.g. \"model:h100\"")
	}
	return nil
}

// checkSpeedups reports the first value of vs that is not a positive
// finite speedup.
func checkSpeedups(what string, vs []float64) error {
	for i, v := range vs {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("%s: speedup %d is %g; it must be a finite number", what, i, v)
		case v < 0:
			return fmt.Errorf("%s: speedup %d is negative (%g); a speedup is a ratio of latencies, above 0", what, i, v)
		case v == 0:
			return fmt.Errorf("%s: speedup %d is 0; a speedup is a ratio of latencies, above 0", what, i)
		}
	}
	return nil
}

// SpeedupCDF draws, for each series, the empirical cumulative distribution
// of its speedups (Series.X; Y is not read): at x, the share of the
// series' values at or below x. The x axis is logarithmic and a vertical
// line marks speedup 1 (as fast as the baseline). source is the latency
// source ("model:h100"), written in the x axis label.
func SpeedupCDF(series []Series, source string, st Style) (*Figure, error) {
	const name = "speedup_cdf"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSource(source); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if len(series) == 0 {
		return nil, figErr(name, "no series")
	}
	seen := map[string]bool{}
	lo, hi := 1.0, 1.0 // the axis always shows speedup 1
	for i, s := range series {
		switch {
		case s.Name == "":
			return nil, figErr(name, "series %d has no name", i)
		case seen[s.Name]:
			return nil, figErr(name, "series %q appears twice", s.Name)
		case len(s.X) == 0:
			return nil, figErr(name, "series %q has no speedups", s.Name)
		}
		seen[s.Name] = true
		if err := checkSpeedups(fmt.Sprintf("series %q", s.Name), s.X); err != nil {
			return nil, &Error{Figure: name, Err: err}
		}
		lo = math.Min(lo, slices.Min(s.X))
		hi = math.Max(hi, slices.Max(s.X))
	}

	l := st.look()
	const title = "Speedup over baseline: empirical CDF"
	p := newPlot(l, title, "speedup over baseline ("+sourceLabel(source)+")", "fraction of values ≤ x")
	setLog(&p.X, lo, hi)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = rateTicks
	leg := newLegend(l)

	for i, s := range series {
		pts := cdfPoints(s.X, lo, hi)
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return nil, figErr(name, "series %q: %w", s.Name, err)
		}
		ln.StepStyle = plotter.PostStep
		ln.LineStyle = l.lineStyle(i)
		p.Add(ln)
		leg.Add(fmt.Sprintf("%s (n=%d)", s.Name, len(s.X)), ln)
	}
	one, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 0, Y: 1}}) // log10(1) = 0
	if err != nil {
		return nil, figErr(name, "speedup-1 line: %w", err)
	}
	one.LineStyle = draw.LineStyle{Color: neutral, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	p.Add(one)
	if len(series) > 1 {
		leg.Add("speedup 1 (baseline)", one)
	}

	svg, png, err := render(name, l, func(c draw.Canvas) { drawWithLegend(c, p, &leg) })
	if err != nil {
		return nil, err
	}
	return &Figure{
		Name:  name,
		Title: title,
		Caption: fmt.Sprintf("Empirical CDF of the speedup over the baseline for %d series (%s); log x axis; the dotted vertical line is speedup 1, as fast as the baseline.",
			len(series), sourceWords(source)),
		SVG: svg,
		PNG: png,
	}, nil
}

// cdfPoints is the empirical CDF of xs (all > 0) as a step line on a log10
// x axis over [lo, hi]: 0 from lo to the smallest value, rising by 1/n at
// each value (ties rise together), 1 from the largest value to hi. Drawn
// with plotter.PostStep.
func cdfPoints(xs []float64, lo, hi float64) plotter.XYs {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	n := float64(len(sorted))
	pts := make(plotter.XYs, 0, len(sorted)+2)
	pts = append(pts, plotter.XY{X: math.Log10(lo), Y: 0})
	for j, x := range sorted {
		if j+1 < len(sorted) && sorted[j+1] == x {
			continue // the last of equal values carries their joint step
		}
		pts = append(pts, plotter.XY{X: math.Log10(x), Y: float64(j+1) / n})
	}
	return append(pts, plotter.XY{X: math.Log10(hi), Y: 1})
}

// Pair is one task's latencies under two policies, in µs; +Inf means the
// policy had no correct attempt on the task.
type Pair struct {
	Label string
	A, B  float64
}

// LatencyScatter draws one point per task at (A, B) on log-log axes with
// the y = x diagonal: below it B is faster, above it A. A task where a
// policy has no correct attempt (+Inf) is drawn on that axis' far edge (a
// dotted line) with its own marker, and the legend counts them ("no correct
// attempt: n"). aName and bName name the policies; source is the latency
// source, written in both axis labels.
func LatencyScatter(pairs []Pair, aName, bName, source string, st Style) (*Figure, error) {
	const name = "latency_scatter"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSource(source); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if aName == "" || bName == "" {
		return nil, figErr(name, "both policies need a name (got %q and %q)", aName, bName)
	}
	if len(pairs) == 0 {
		return nil, figErr(name, "no pairs")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, pr := range pairs {
		for _, side := range []struct {
			who string
			v   float64
		}{{aName, pr.A}, {bName, pr.B}} {
			v := side.v
			switch {
			case math.IsNaN(v) || math.IsInf(v, -1):
				return nil, figErr(name, "pair %d (%s): %s latency is %g; use +Inf for no correct attempt", i, pr.Label, side.who, v)
			case math.IsInf(v, 1):
				continue
			case v <= 0:
				return nil, figErr(name, "pair %d (%s): %s latency is %g µs; a latency is above 0", i, pr.Label, side.who, v)
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		// No finite latency at all: every point sits in the corner; the
		// scale is arbitrary and the legend says why.
		lo, hi = 1, 10
	}
	// The edge for "no correct attempt" sits a third of a decade beyond the
	// slowest finite latency (at least a tenth of the axis), apart from the
	// data.
	edge := hi * math.Pow(10, math.Max(1.0/3, 0.1*math.Log10(hi/lo)))

	var both, noneA, noneB plotter.XYs
	var aFaster, bFaster, ties int
	for _, pr := range pairs {
		infA, infB := math.IsInf(pr.A, 1), math.IsInf(pr.B, 1)
		switch {
		case infA && infB, pr.A == pr.B:
			ties++
		case pr.A < pr.B:
			aFaster++
		default:
			bFaster++
		}
		x, y := math.Log10(pr.A), math.Log10(pr.B)
		if infA {
			x = math.Log10(edge)
		}
		if infB {
			y = math.Log10(edge)
		}
		switch {
		case !infA && !infB:
			both = append(both, plotter.XY{X: x, Y: y})
		case infA:
			noneA = append(noneA, plotter.XY{X: x, Y: y})
		default:
			noneB = append(noneB, plotter.XY{X: x, Y: y})
		}
	}

	l := st.look()
	title := fmt.Sprintf("Per-task latency: %s vs %s", bName, aName)
	p := newPlot(l, title,
		fmt.Sprintf("%s latency, µs (%s)", aName, sourceLabel(source)),
		fmt.Sprintf("%s latency, µs (%s)", bName, sourceLabel(source)))
	setLog(&p.X, lo, edge)
	setLog(&p.Y, lo, edge)
	leg := newLegend(l)

	ref := draw.LineStyle{Color: neutral, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	llo, ledge := math.Log10(lo), math.Log10(edge)
	diag, err := plotter.NewLine(plotter.XYs{{X: llo, Y: llo}, {X: ledge, Y: ledge}})
	if err != nil {
		return nil, figErr(name, "diagonal: %w", err)
	}
	diag.LineStyle = ref
	p.Add(diag)
	edgeStyle := draw.LineStyle{Color: neutral, Width: vg.Points(0.5), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}
	for _, seg := range []plotter.XYs{{{X: ledge, Y: llo}, {X: ledge, Y: ledge}}, {{X: llo, Y: ledge}, {X: ledge, Y: ledge}}} {
		e, err := plotter.NewLine(seg)
		if err != nil {
			return nil, figErr(name, "edge: %w", err)
		}
		e.LineStyle = edgeStyle
		p.Add(e)
	}

	add := func(pts plotter.XYs, gs draw.GlyphStyle, label string) error {
		if len(pts) == 0 {
			return nil
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = gs
		p.Add(sc)
		leg.Add(label, sc)
		return nil
	}
	if err := add(both, l.glyphStyle(0), fmt.Sprintf("both correct: %d", len(both))); err != nil {
		return nil, figErr(name, "points: %w", err)
	}
	none := draw.GlyphStyle{Color: l.color(1), Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
	if err := add(append(slices.Clone(noneA), noneB...), none, fmt.Sprintf("no correct attempt: %d", len(noneA)+len(noneB))); err != nil {
		return nil, figErr(name, "points: %w", err)
	}
	leg.Add("y = x (equal latency)", diag)

	svg, png, err := render(name, l, func(c draw.Canvas) { drawWithLegend(c, p, &leg) })
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("Latency of each of %d tasks under %s (x) and %s (y), %s; log-log axes. "+
		"Below the diagonal %s is faster. A task where a policy has no correct attempt is drawn as a cross on the dotted edge of that policy's axis "+
		"(%s: %d tasks, %s: %d). %s faster on %d tasks, %s faster on %d, ties %d (no correct attempt counts as slowest).",
		len(pairs), aName, bName, sourceWords(source), bName,
		aName, len(noneA), bName, len(noneB), bName, bFaster, aName, aFaster, ties)
	return &Figure{Name: name, Title: title, Caption: caption, SVG: svg, PNG: png}, nil
}
