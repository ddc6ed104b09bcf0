package plots

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// checkSeries reports the first series of ss that cannot be drawn as a
// line: no name, a name used twice, no points, X and Y of different
// lengths, a NaN or infinite value.
func checkSeries(what string, ss []Series) error {
	seen := make(map[string]bool, len(ss))
	for i, s := range ss {
		if s.Name == "" {
			return fmt.Errorf("%s series %d has no name", what, i)
		}
		if seen[s.Name] {
			return fmt.Errorf("%s series %q appears twice", what, s.Name)
		}
		seen[s.Name] = true
		if len(s.X) == 0 {
			return fmt.Errorf("%s series %q is empty", what, s.Name)
		}
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("%s series %q has %d x values and %d y values; they must match", what, s.Name, len(s.X), len(s.Y))
		}
		if err := checkFinite(fmt.Sprintf("%s series %q x", what, s.Name), s.X); err != nil {
			return err
		}
		if err := checkFinite(fmt.Sprintf("%s series %q y", what, s.Name), s.Y); err != nil {
			return err
		}
	}
	return nil
}

func xys(x, y []float64) plotter.XYs {
	pts := make(plotter.XYs, len(x))
	for i := range x {
		pts[i] = plotter.XY{X: x[i], Y: y[i]}
	}
	return pts
}

// LossCurves draws training and validation loss against the step: x is
// the step, y the loss in nats per token. A run's training series is a
// thin solid line in a light tint of its colour; its validation series
// (same Name) is the full colour, dashed, with markers at the evaluated
// steps, drawn on top; the legend reads "<Name> training", "<Name>
// validation". With at most one series of each kind they are one run
// whatever their names: one colour, legend "training" and "validation".
// Either list may be empty, not both.
func LossCurves(train, validation []Series, st Style) (*Figure, error) {
	const name = "loss_curves"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if len(train)+len(validation) == 0 {
		return nil, figErr(name, "no series: give at least one training or validation series")
	}
	if err := checkSeries("training", train); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSeries("validation", validation); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	var xs, ys [][]float64
	for _, s := range append(slices.Clone(train), validation...) {
		xs, ys = append(xs, s.X), append(ys, s.Y)
	}
	if err := checkSpan("steps", xs...); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSpan("losses", ys...); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	l := st.look()
	const title = "Training and validation loss"
	p := newPlot(l, title, "step", "loss (nats/token)")
	leg := newLegend(l)

	// A run keeps one colour for both its curves.
	oneRun := len(train) <= 1 && len(validation) <= 1
	colorOf := map[string]int{}
	index := func(n string) int {
		if oneRun {
			return 0
		}
		if i, ok := colorOf[n]; ok {
			return i
		}
		colorOf[n] = len(colorOf)
		return colorOf[n]
	}
	type entry struct {
		label  string
		thumbs []plot.Thumbnailer
	}
	var entries []entry
	for _, s := range train {
		ln, err := plotter.NewLine(xys(s.X, s.Y))
		if err != nil {
			return nil, figErr(name, "training series %q: %w", s.Name, err)
		}
		i := index(s.Name)
		// Training loss is noisy and dense: a thin tint of the run's colour,
		// so the sparse validation curve drawn over it stays visible.
		ln.LineStyle = draw.LineStyle{Color: light(l.color(i), 0.45), Width: vg.Points(1)}
		p.Add(ln)
		thumbs := []plot.Thumbnailer{ln}
		if len(s.X) == 1 {
			// A line through one point draws nothing: mark the point.
			pt, err := plotter.NewScatter(xys(s.X, s.Y))
			if err != nil {
				return nil, figErr(name, "training series %q: %w", s.Name, err)
			}
			pt.GlyphStyle = l.glyphStyle(i)
			p.Add(pt)
			thumbs = append(thumbs, pt)
		}
		entries = append(entries, entry{runLabel(oneRun, s.Name, "training"), thumbs})
	}
	// Validation after training, so it is drawn on top.
	for _, s := range validation {
		ln, pts, err := plotter.NewLinePoints(xys(s.X, s.Y))
		if err != nil {
			return nil, figErr(name, "validation series %q: %w", s.Name, err)
		}
		i := index(s.Name)
		ln.LineStyle = l.lineStyle(i)
		ln.LineStyle.Width = vg.Points(1.75)
		ln.LineStyle.Dashes = dashes[1]
		pts.GlyphStyle = l.glyphStyle(i)
		p.Add(ln, pts)
		entries = append(entries, entry{runLabel(oneRun, s.Name, "validation"), []plot.Thumbnailer{ln, pts}})
	}
	if len(entries) > 1 {
		for _, e := range entries {
			leg.Add(e.label, e.thumbs...)
		}
	}
	svg, png, err := render(name, l, func(c draw.Canvas) { drawWithLegend(c, p, &leg) })
	if err != nil {
		return nil, err
	}
	return &Figure{
		Name:    name,
		Title:   title,
		Caption: fmt.Sprintf("Loss (nats per token) against the optimizer step: %d training and %d validation curves; training thin and light, validation dashed with a marker at each evaluation.", len(train), len(validation)),
		SVG:     svg,
		PNG:     png,
	}, nil
}

// runLabel is a loss curve's legend entry: its kind, after the run's name
// when there are several runs.
func runLabel(oneRun bool, run, kind string) string {
	if oneRun {
		return kind
	}
	return run + " " + kind
}

// RLCurves draws three stacked panels sharing the step axis: the mean
// reward with a band of ± one standard deviation (rewardStd may be nil: no
// band), the share of correct samples (in [0, 1]), and the KL divergence
// to the reference policy (nats). Every slice has one value per step;
// steps must increase.
func RLCurves(steps []float64, reward, rewardStd, correct, kl []float64, st Style) (*Figure, error) {
	const name = "rl_curves"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if len(steps) == 0 {
		return nil, figErr(name, "no steps")
	}
	cols := []struct {
		what     string
		v        []float64
		optional bool
	}{
		{"steps", steps, false},
		{"reward", reward, false},
		{"reward std", rewardStd, true},
		{"correct", correct, false},
		{"kl", kl, false},
	}
	for _, c := range cols {
		if c.optional && c.v == nil {
			continue
		}
		if len(c.v) != len(steps) {
			return nil, figErr(name, "%s has %d values for %d steps; they must match", c.what, len(c.v), len(steps))
		}
		if err := checkFinite(c.what, c.v); err != nil {
			return nil, &Error{Figure: name, Err: err}
		}
	}
	for i := 1; i < len(steps); i++ {
		if steps[i] <= steps[i-1] {
			return nil, figErr(name, "steps must increase: step %d is %g after %g", i, steps[i], steps[i-1])
		}
	}
	for i, v := range rewardStd {
		if v < 0 {
			return nil, figErr(name, "reward std %d is %g; a standard deviation is not negative", i, v)
		}
	}
	for i, v := range correct {
		if v < 0 || v > 1 {
			return nil, figErr(name, "correct %d is %g; a rate lies in [0, 1]", i, v)
		}
	}
	band := slices.Clone(reward)
	for i, sd := range rewardStd {
		band = append(band, reward[i]-sd, reward[i]+sd)
	}
	for _, c := range []struct {
		what string
		v    []float64
	}{{"steps", steps}, {"rewards (± std)", band}, {"kl values", kl}} {
		if err := checkSpan(c.what, c.v); err != nil {
			return nil, &Error{Figure: name, Err: err}
		}
	}

	l := st.look()
	const title = "RL training curves"
	rewardTitle := "reward (mean)"
	if rewardStd != nil {
		rewardTitle = "reward (mean ± one std)"
	}
	top := newPanel(l, rewardTitle, "")
	mid := newPanel(l, "correct rate (share of samples)", "")
	bot := newPanel(l, "KL to reference (nats)", "step")

	if rewardStd != nil {
		ring := make(plotter.XYs, 0, 2*len(steps))
		for i := range steps {
			ring = append(ring, plotter.XY{X: steps[i], Y: reward[i] + rewardStd[i]})
		}
		for i := len(steps) - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: steps[i], Y: reward[i] - rewardStd[i]})
		}
		band, err := plotter.NewPolygon(ring)
		if err != nil {
			return nil, figErr(name, "reward band: %w", err)
		}
		band.Color = light(l.color(0), 0.75)
		band.LineStyle.Width = 0
		top.Add(band)
	}
	for i, panel := range []struct {
		p *plot.Plot
		y []float64
	}{{top, reward}, {mid, correct}, {bot, kl}} {
		ln, err := plotter.NewLine(xys(steps, panel.y))
		if err != nil {
			return nil, figErr(name, "%w", err)
		}
		ln.LineStyle = l.lineStyle(i)
		ln.LineStyle.Dashes = nil // one series a panel: the panel, not the dash, tells them apart
		panel.p.Add(ln)
		if len(steps) == 1 {
			// A line through one point draws nothing: mark the point.
			pt, err := plotter.NewScatter(xys(steps, panel.y))
			if err != nil {
				return nil, figErr(name, "%w", err)
			}
			pt.GlyphStyle = l.glyphStyle(i)
			panel.p.Add(pt)
		}
	}
	mid.Y.Min, mid.Y.Max = 0, 1
	mid.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.5, Label: "0.5"}, {Value: 1, Label: "1"}}
	plots := [][]*plot.Plot{{top}, {mid}, {bot}}
	lo, hi := steps[0], steps[len(steps)-1]
	for _, row := range plots {
		p := row[0]
		p.X.Min, p.X.Max = lo, hi
		if p != bot {
			p.X.Tick.Marker = unlabelled{plot.DefaultTicks{}}
		}
	}
	svg, png, err := render(name, l, func(c draw.Canvas) {
		c = drawTitle(c, l, title)
		tiles := draw.Tiles{Rows: 3, Cols: 1, PadY: vg.Points(4), PadBottom: vg.Points(2)}
		canvases := plot.Align(plots, tiles, c)
		for j, row := range plots {
			row[0].Draw(canvases[j][0])
		}
	})
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("RL training over %d steps: mean reward", len(steps))
	if rewardStd != nil {
		caption += " (band: ± one standard deviation over the step's samples)"
	}
	caption += ", share of correct samples, and KL divergence to the reference policy, against the step."
	return &Figure{Name: name, Title: title, Caption: caption, SVG: svg, PNG: png}, nil
}

// newPanel is one of a figure's stacked panels: it says what it shows in
// a small title over it (a y label long enough to say it would not fit the
// height of a third of the figure, and gonum would shrink the panel to
// make it fit).
func newPanel(l look, title, xlabel string) *plot.Plot {
	p := newPlot(l, title, xlabel, "")
	p.Title.TextStyle.Font = l.label
	p.Title.Padding = vg.Points(2)
	return p
}
