package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one drawn figure: the same picture as SVG and as PNG (DPI dots
// per inch). Name is a file stem ("speedup_cdf"); a caller drawing the
// same builder twice renames one. Caption is a sentence or two saying what
// is drawn, for a report.
type Figure struct {
	Name, Title, Caption string
	SVG, PNG             []byte
}

// Series is one named line or set of values. Builders say how they read X
// and Y.
type Series struct {
	Name string
	X, Y []float64
}

// Error is a builder's refusal: Figure names the figure ("speedup_cdf") and
// Err says what in the data or style is wrong.
type Error struct {
	Figure string
	Err    error
}

func (e *Error) Error() string { return "plots: " + e.Figure + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

func figErr(name string, format string, args ...any) error {
	return &Error{Figure: name, Err: fmt.Errorf(format, args...)}
}

// sourceKind is what a latency source's values are: "simulated" for the
// GPU model's ("model:…"), "measured" for a real device's ("measured:…"),
// "" for any other. A list of sources ("model:h100, model:a100", as a
// stage joins several) is simulated or measured when all its sources are,
// "simulated and measured" when both kinds appear, else "".
func sourceKind(source string) string {
	var model, measured, other bool
	for _, s := range strings.Split(source, ",") {
		switch s = strings.TrimSpace(s); {
		case strings.HasPrefix(s, "model:"):
			model = true
		case strings.HasPrefix(s, "measured:"):
			measured = true
		default:
			other = true
		}
	}
	switch {
	case other:
		return ""
	case model && measured:
		return "simulated and measured"
	case model:
		return "simulated"
	default:
		return "measured"
	}
}

// sourceLabel is how a latency source reads in an axis label: the source,
// then its kind when it has one ("model:h100, simulated").
func sourceLabel(source string) string {
	if k := sourceKind(source); k != "" {
		return source + ", " + k
	}
	return source
}

// sourceWords is sourceLabel for a caption sentence.
func sourceWords(source string) string {
	switch sourceKind(source) {
	case "simulated":
		return "latencies simulated by the GPU model, source " + source
	case "measured":
		return "latencies measured on a GPU, source " + source
	case "simulated and measured":
		return "latencies simulated by the GPU model and measured on a GPU, sources " + source
	default:
		return "latencies from " + source
	}
}

// newPlot is a plot with the look's fonts, a title and axis labels.
func newPlot(l look, title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = l.title
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = l.label
		a.Tick.Label.Font = l.tick
		a.Label.Padding = vg.Points(3)
	}
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	return p
}

// legend lists the series of a figure under its plot, in rows that wrap
// at the figure's width: outside the data area, so it never hides data,
// and costing a little height rather than a third of the width as a column
// at the side would (gonum's plot.Legend draws only inside the data area
// and only as one column).
type legend struct {
	font    font.Font
	entries []legendEntry
}

type legendEntry struct {
	label  string
	thumbs []plot.Thumbnailer
}

func newLegend(l look) legend { return legend{font: l.legend} }

// Add appends an entry whose sample is drawn by thumbs, in order.
func (lg *legend) Add(label string, thumbs ...plot.Thumbnailer) {
	lg.entries = append(lg.entries, legendEntry{label, thumbs})
}

// Legend geometry, in points (a vg.Length is one point).
const (
	thumbWidth  vg.Length = 22 // the sample line or patch
	thumbGap    vg.Length = 4  // between the sample and its label
	entryGap    vg.Length = 14 // between entries in a row
	legendSpace vg.Length = 6  // between the plot and the legend
)

func (lg *legend) style() text.Style {
	return text.Style{Color: color.Black, Font: lg.font, XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
}

// layout splits the entries into rows no wider than width (an entry wider
// than width gets a row of its own) and returns the rows and the height
// of one.
func (lg *legend) layout(width vg.Length) (rows [][]legendEntry, rowHeight vg.Length) {
	sty := lg.style()
	rowHeight = sty.Height("Xg") * 1.3
	var row []legendEntry
	var used vg.Length
	for _, e := range lg.entries {
		w := thumbWidth + thumbGap + sty.Width(e.label)
		if len(row) > 0 && used+entryGap+w > width {
			rows = append(rows, row)
			row, used = nil, 0
		}
		if len(row) > 0 {
			used += entryGap
		}
		row = append(row, e)
		used += w
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows, rowHeight
}

// drawWithLegend draws p into c and, when the legend has entries, the
// legend in rows under it, left-aligned with the data area.
func drawWithLegend(c draw.Canvas, p *plot.Plot, lg *legend) {
	if len(lg.entries) == 0 {
		p.Draw(c)
		return
	}
	// The rows start at the data area's left edge, which does not depend
	// on the area's height.
	left := p.DataCanvas(c).Min.X
	height := lg.height(c.Max.X - left)
	p.Draw(draw.Crop(c, 0, 0, height, 0))
	lg.draw(c, left, height)
}

// height is how tall the legend's rows are at width, with the space
// above them.
func (lg *legend) height(width vg.Length) vg.Length {
	rows, rh := lg.layout(width)
	return vg.Length(len(rows))*rh + legendSpace
}

// draw draws the legend's rows at the bottom of c, from x = left, in the
// height that height returned.
func (lg *legend) draw(c draw.Canvas, left, height vg.Length) {
	rows, rh := lg.layout(c.Max.X - left)
	sty := lg.style()
	y := c.Min.Y + height - legendSpace // top of the first row
	for _, row := range rows {
		x := left
		for _, e := range row {
			icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - rh},
				Max: vg.Point{X: x + thumbWidth, Y: y},
			}}
			for _, t := range e.thumbs {
				t.Thumbnail(&icon)
			}
			x += thumbWidth + thumbGap
			c.FillText(sty, vg.Point{X: x, Y: y - rh/2}, e.label)
			x += sty.Width(e.label) + entryGap
		}
		y -= rh
	}
}

// render draws the picture twice, as SVG and as PNG. Gonum panics where it
// meets data it cannot draw (plot.LogScale at or below 0, DefaultTicks over
// a range that overflows); builders check their data first, and a panic
// that still happens is returned as an error naming the figure rather than
// taking the caller down.
func render(name string, l look, drawFn func(c draw.Canvas)) (svg, png []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, png = nil, nil
			err = figErr(name, "drawing failed: %v", r)
		}
	}()
	sc := vgsvg.New(l.width, l.height)
	dc := draw.New(sc)
	fillBackground(dc)
	drawFn(dc)
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, figErr(name, "writing SVG: %w", err)
	}
	svg = bytes.ReplaceAll(sb.Bytes(), []byte(svgFont), []byte(svgFontFallback))
	ic := vgimg.NewWith(vgimg.UseWH(l.width, l.height), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	drawFn(draw.New(ic))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, figErr(name, "writing PNG: %w", err)
	}
	return svg, pb.Bytes(), nil
}

// The SVG names its one typeface, Liberation Sans, with no fallback: a
// browser without it would draw the default serif, wider or narrower than
// the text the layout measured. Arial and Helvetica have Liberation Sans'
// metrics (that is Liberation's purpose), so they come next, then any
// sans-serif.
const (
	svgFont         = "font-family:Liberation Sans;"
	svgFontFallback = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// fillBackground paints the SVG white, as the PNG is: an SVG is transparent
// by default, and a figure on a dark page would lose its black text.
func fillBackground(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
}

// drawTitle writes a figure title centred at the top of c and returns the
// rest of c, for figures made of several panels.
func drawTitle(c draw.Canvas, l look, title string) draw.Canvas {
	sty := text.Style{Color: color.Black, Font: l.title, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	descent := sty.FontExtents().Descent
	c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y + descent}, title)
	return draw.Crop(c, 0, 0, 0, -(sty.Rectangle(title).Size().Y + vg.Points(6)))
}

// Log axes. A log axis here is a linear axis over log10 of the data, with
// ticks labelled by the values themselves; builders pass log10(v) to
// gonum. gonum's own plot.LogScale is not used: in v0.17.0 the padding of
// an axis reserves room for a centred axis label at Norm((Min+Max)/2), the
// arithmetic mean, which on a log scale is far right of (or above) the
// middle where the label is drawn, so the data area shrank by a third.

// logTicker marks a log10 axis: labelled decades over 3 decades or more,
// labelled 1-2-5 steps over 1 to 3 decades, gonum's linear default below
// one decade; unlabelled minor ticks at the other integer multiples. lo
// and hi are log10 of the range.
type logTicker struct{}

func (logTicker) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	vlo, vhi := math.Pow(10, lo), math.Pow(10, hi)
	var out []plot.Tick
	if hi-lo < 1 {
		for _, t := range (plot.DefaultTicks{}).Ticks(vlo, vhi) {
			if t.Value > 0 {
				out = append(out, plot.Tick{Value: math.Log10(t.Value), Label: t.Label})
			}
		}
		return out
	}
	labelled := func(m int) bool {
		if hi-lo >= 3 {
			return m == 1
		}
		return m == 1 || m == 2 || m == 5
	}
	for e := int(math.Floor(lo)); e <= int(math.Ceil(hi)); e++ {
		dec := math.Pow10(e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * dec
			lv := math.Log10(v)
			if lv < lo-1e-9 || lv > hi+1e-9 {
				continue
			}
			t := plot.Tick{Value: lv}
			if labelled(m) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// setLog makes a a log axis over the values [lo, hi] (both > 0; a single
// value gets a decade around it).
func setLog(a *plot.Axis, lo, hi float64) {
	a.Min, a.Max = math.Log10(lo), math.Log10(hi)
	if a.Min == a.Max {
		a.Min, a.Max = a.Min-0.5, a.Max+0.5
	}
	a.Tick.Marker = logTicker{}
}

// unlabelled keeps a ticker's marks and drops their labels: the upper
// panels of a stack share the bottom panel's labelled axis.
type unlabelled struct{ plot.Ticker }

func (u unlabelled) Ticks(lo, hi float64) []plot.Tick {
	ts := u.Ticker.Ticks(lo, hi)
	out := make([]plot.Tick, len(ts))
	for i, t := range ts {
		out[i] = plot.Tick{Value: t.Value}
	}
	return out
}

// rateTicks mark an axis of rates in [0, 1].
var rateTicks = plot.ConstantTicks{
	{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
	{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"},
}

// countTicker marks an axis of counts: labelled ticks on whole numbers, a
// step of 1, 2 or 5 times a power of ten, at most 6 of them; gonum's
// default would write counts as "25.00".
type countTicker struct{}

func (countTicker) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := 1.0
	for k := 0; (hi-lo)/step > 5; k++ {
		step = []float64{1, 2, 5}[k%3] * math.Pow10(k/3)
	}
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi && len(out) < 10; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return out
}

// checkFinite reports the first value of vs that is NaN or ±Inf.
func checkFinite(what string, vs []float64) error {
	for i, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: value %d is %g; it must be a finite number", what, i, v)
		}
	}
	return nil
}

// checkSpan reports values whose range, largest less smallest, overflows a
// float64 (from -1e308 to 1e308): gonum's tick labelling loops forever
// over such a linear axis instead of failing.
func checkSpan(what string, vss ...[]float64) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, vs := range vss {
		for _, v := range vs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(hi-lo, 0) {
		return fmt.Errorf("%s run from %g to %g, a range too wide to draw", what, lo, hi)
	}
	return nil
}
