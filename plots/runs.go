package plots

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// RLRuns overlays the RL curves of several runs (`dragonx report
// -compare`): two stacked panels sharing the step axis, the mean reward
// and the share of correct samples, with one line per run in the run's
// colour and dash (Series.Name is the run; X the steps, Y the values).
// reward and correct name the same runs in the same order.
func RLRuns(reward, correct []Series, st Style) (*Figure, error) {
	const name = "rl_runs"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if len(reward) == 0 {
		return nil, figErr(name, "no runs")
	}
	if len(correct) != len(reward) {
		return nil, figErr(name, "%d reward series and %d correct-rate series; give both for each run", len(reward), len(correct))
	}
	if err := checkSeries("reward", reward); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSeries("correct rate", correct); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	var steps, rewards [][]float64
	for i := range reward {
		if correct[i].Name != reward[i].Name {
			return nil, figErr(name, "run %d is %q in reward and %q in correct rate", i, reward[i].Name, correct[i].Name)
		}
		for _, v := range correct[i].Y {
			if v < 0 || v > 1 {
				return nil, figErr(name, "run %q: correct rate %g; a rate lies in [0, 1]", correct[i].Name, v)
			}
		}
		steps = append(steps, reward[i].X, correct[i].X)
		rewards = append(rewards, reward[i].Y)
	}
	if err := checkSpan("steps", steps...); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if err := checkSpan("rewards", rewards...); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	l := st.look()
	const title = "RL training curves by run"
	top := newPanel(l, "reward (mean)", "")
	bot := newPanel(l, "correct rate (share of samples)", "step")
	leg := newLegend(l)
	lo, hi := steps[0][0], steps[0][0]
	for _, xs := range steps {
		lo, hi = min(lo, slices.Min(xs)), max(hi, slices.Max(xs))
	}
	for i := range reward {
		var thumbs []plot.Thumbnailer
		for _, pn := range []struct {
			p *plot.Plot
			s Series
		}{{top, reward[i]}, {bot, correct[i]}} {
			ln, pts, err := plotter.NewLinePoints(xys(pn.s.X, pn.s.Y))
			if err != nil {
				return nil, figErr(name, "run %q: %w", pn.s.Name, err)
			}
			ln.LineStyle = l.lineStyle(i)
			pts.GlyphStyle = l.glyphStyle(i)
			pts.GlyphStyle.Radius = vg.Points(1.5)
			pn.p.Add(ln, pts)
			if len(thumbs) == 0 {
				thumbs = []plot.Thumbnailer{ln, pts}
			}
		}
		leg.Add(reward[i].Name, thumbs...)
	}
	bot.Y.Min, bot.Y.Max = 0, 1
	bot.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.5, Label: "0.5"}, {Value: 1, Label: "1"}}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	plots := [][]*plot.Plot{{top}, {bot}}
	for _, row := range plots {
		row[0].X.Min, row[0].X.Max = lo, hi
	}
	top.X.Tick.Marker = unlabelled{plot.DefaultTicks{}}
	svg, png, err := render(name, l, func(c draw.Canvas) {
		c = drawTitle(c, l, title)
		left := c.Min.X + vg.Points(4)
		height := leg.height(c.Max.X - left)
		tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(4), PadBottom: vg.Points(2)}
		canvases := plot.Align(plots, tiles, draw.Crop(c, 0, 0, height, 0))
		for j, row := range plots {
			row[0].Draw(canvases[j][0])
		}
		leg.draw(c, left, height)
	})
	if err != nil {
		return nil, err
	}
	return &Figure{
		Name:    name,
		Title:   title,
		Caption: fmt.Sprintf("RL training of %d runs overlaid: mean reward (top) and share of correct samples (bottom) against the step, one colour and dash per run.", len(reward)),
		SVG:     svg,
		PNG:     png,
	}, nil
}
