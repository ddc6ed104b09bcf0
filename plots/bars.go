package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar is one bar of a grouped bar chart: the Value of Series (a policy)
// in Group (a kernel family), over N attempts (0: not known).
type Bar struct {
	Group, Series string
	Value         float64
	N             int
}

// groupWidth is the share of a group's slot its bars fill; the rest
// separates groups.
const groupWidth = 0.8

// barSeries draws one series of a grouped bar chart in data coordinates:
// group g's slot is [g-0.5, g+0.5] and the series' bar is its share of the
// middle groupWidth of it. Each bar carries the series' glyph just above
// its top, so a series reads without colour and a bar of 0 is still seen.
// A group where the series has no value has no bar (not a bar of 0).
type barSeries struct {
	slot, nslots int
	values       map[int]float64 // group index -> value
	order        []int           // the keys of values, ascending: the drawing order
	fill         color.Color
	glyph        draw.GlyphStyle
}

func (b *barSeries) span(g int) (lo, hi float64) {
	w := groupWidth / float64(b.nslots)
	lo = float64(g) - groupWidth/2 + float64(b.slot)*w
	return lo, lo + w
}

// Plot implements plot.Plotter.
func (b *barSeries) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	edge := draw.LineStyle{Color: neutral, Width: vg.Points(0.5)}
	for _, g := range b.order {
		v := b.values[g]
		lo, hi := b.span(g)
		x0, x1 := trX(lo), trX(hi)
		y0, y1 := trY(0), trY(v)
		rect := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.fill, c.ClipPolygonXY(rect))
		c.StrokeLines(edge, c.ClipLinesXY(append(rect, rect[0]))...)
		// The glyph fits its bar: narrower bars, smaller glyphs.
		g := b.glyph
		g.Radius = min(g.Radius, (x1-x0)*0.45)
		c.DrawGlyph(g, vg.Point{X: (x0 + x1) / 2, Y: y1 + g.Radius + vg.Points(1.5)})
	}
}

// DataRange implements plot.DataRanger.
func (b *barSeries) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for g, v := range b.values {
		lo, hi := b.span(g)
		xmin, xmax = math.Min(xmin, lo), math.Max(xmax, hi)
		ymax = math.Max(ymax, v)
	}
	return xmin, xmax, 0, ymax
}

// Thumbnail implements plot.Thumbnailer: a patch of the bar colour with
// the glyph on it.
func (b *barSeries) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	inset := (r.Max.Y - r.Min.Y) * 0.15
	r.Min.Y += inset
	r.Max.Y -= inset
	c.FillPolygon(b.fill, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	c.DrawGlyph(b.glyph, c.Center())
}

// FamilyCorrectness draws grouped bars: one group per Group (kernel
// family), one bar per Series (policy) inside it, its height the Value, a
// rate in [0, 1]. Groups and series keep the order of their first
// appearance in bars. When the bars of a group agree on N, the group's
// label says it ("n=…").
func FamilyCorrectness(bars []Bar, st Style) (*Figure, error) {
	const name = "family_correctness"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if len(bars) == 0 {
		return nil, figErr(name, "no bars")
	}
	var groups, series []string
	gi, si := map[string]int{}, map[string]int{}
	type key struct{ g, s int }
	seen := map[key]bool{}
	for i, b := range bars {
		switch {
		case b.Group == "":
			return nil, figErr(name, "bar %d has no group", i)
		case b.Series == "":
			return nil, figErr(name, "bar %d (group %q) has no series", i, b.Group)
		case math.IsNaN(b.Value) || b.Value < 0 || b.Value > 1:
			return nil, figErr(name, "bar %d (%s, %s): value %g is not a rate in [0, 1]", i, b.Group, b.Series, b.Value)
		case b.N < 0:
			return nil, figErr(name, "bar %d (%s, %s): N is %d; a count is not negative", i, b.Group, b.Series, b.N)
		}
		if _, ok := gi[b.Group]; !ok {
			gi[b.Group] = len(groups)
			groups = append(groups, b.Group)
		}
		if _, ok := si[b.Series]; !ok {
			si[b.Series] = len(series)
			series = append(series, b.Series)
		}
		k := key{gi[b.Group], si[b.Series]}
		if seen[k] {
			return nil, figErr(name, "bar %d: group %q has series %q twice", i, b.Group, b.Series)
		}
		seen[k] = true
	}

	l := st.look()
	const title = "Correct rate per kernel family"
	p := newPlot(l, title, "kernel family", "correct rate (share of attempts)")
	leg := newLegend(l)
	plotters := make([]*barSeries, len(series))
	for s := range series {
		plotters[s] = &barSeries{
			slot: s, nslots: len(series), values: map[int]float64{},
			fill:  l.color(s),
			glyph: draw.GlyphStyle{Color: l.color(s), Radius: vg.Points(2.5), Shape: glyph(s)},
		}
	}
	ns := make([]map[int]bool, len(groups))
	for i := range ns {
		ns[i] = map[int]bool{}
	}
	for _, b := range bars {
		g, s := gi[b.Group], si[b.Series]
		plotters[s].values[g] = b.Value
		plotters[s].order = append(plotters[s].order, g)
		ns[g][b.N] = true
	}
	for s, bs := range plotters {
		slices.Sort(bs.order)
		p.Add(bs)
		if len(series) > 1 {
			leg.Add(series[s], bs)
		}
	}
	// A group's label carries n when its bars agree on it.
	ncommon := make([]int, len(groups))
	for g := range groups {
		if len(ns[g]) == 1 {
			for n := range ns[g] {
				ncommon[g] = n
			}
		}
	}
	labels := make([]string, len(groups))
	for g, name := range groups {
		labels[g] = name
		if ncommon[g] > 0 {
			labels[g] = fmt.Sprintf("%s\nn=%d", name, ncommon[g])
		}
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	if rot := labelRotation(p, l, labels); rot != 0 {
		// Crowded: one line per label, slanted (or upright when even a
		// slant would not fit), ending under its group.
		for g, name := range groups {
			labels[g] = name
			if ncommon[g] > 0 {
				labels[g] = fmt.Sprintf("%s n=%d", name, ncommon[g])
			}
		}
		p.NominalX(labels...)
		p.X.Tick.Label.Rotation = rot
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	p.Y.Min, p.Y.Max = 0, 1.08 // room for the glyphs over a bar of 1
	p.Y.Tick.Marker = rateTicks

	svg, png, err := render(name, l, func(c draw.Canvas) { drawWithLegend(c, p, &leg) })
	if err != nil {
		return nil, err
	}
	return &Figure{
		Name:  name,
		Title: title,
		Caption: fmt.Sprintf("Share of correct attempts per kernel family (%d families) for %d series; a marker over each bar tells the series apart without colour; n under a family is the attempts behind each rate.",
			len(groups), len(series)),
		SVG: svg,
		PNG: png,
	}, nil
}

// labelRotation is the rotation the x tick labels of p need not to run
// into each other: 0 when the widest fits its group's slot, π/4 when a
// slanted line fits (the slot is at least 1.5 lines high), else π/2.
func labelRotation(p *plot.Plot, l look, labels []string) float64 {
	fig := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: l.width, Y: l.height}}}
	data := p.DataCanvas(fig)
	slot := (data.Max.X - data.Min.X) / vg.Length(len(labels))
	sty := p.X.Tick.Label
	var widest vg.Length
	for _, lab := range labels {
		widest = max(widest, sty.Width(lab))
	}
	switch {
	case widest <= slot*0.9:
		return 0
	case slot >= sty.Height("X")*1.5:
		return math.Pi / 4
	default:
		return math.Pi / 2
	}
}
