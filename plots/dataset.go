package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Dataset is what DatasetStatsOf draws: the length of each training trace
// in TraceUnit ("tokens", "instructions"), and the speedup of each
// refinement pair (its target script over its prompt script) with the
// Source of the latencies behind them ("model:h100").
type Dataset struct {
	TraceLens      []float64
	TraceUnit      string
	RefineSpeedups []float64
	Source         string
}

// DatasetStats draws DatasetStatsOf with trace lengths in tokens and no
// latency source; the speedup axis then says "source not given". Prefer
// DatasetStatsOf, which labels both.
func DatasetStats(traceLens []float64, refineSpeedups []float64, st Style) (*Figure, error) {
	return DatasetStatsOf(Dataset{TraceLens: traceLens, TraceUnit: "tokens", RefineSpeedups: refineSpeedups}, st)
}

// DatasetStatsOf draws two histograms side by side: trace lengths (linear
// bins) and refinement speedups (bins of equal width on a log axis). Both
// lists must be non-empty; lengths are finite and not negative, speedups
// finite and above 0.
func DatasetStatsOf(d Dataset, st Style) (*Figure, error) {
	const name = "dataset_stats"
	if err := st.validate(); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	if d.TraceUnit == "" {
		return nil, figErr(name, "trace unit is empty; say what a length counts (\"tokens\", \"instructions\")")
	}
	if len(d.TraceLens) == 0 {
		return nil, figErr(name, "no trace lengths")
	}
	if len(d.RefineSpeedups) == 0 {
		return nil, figErr(name, "no refinement speedups")
	}
	if err := checkFinite("trace lengths", d.TraceLens); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}
	for i, v := range d.TraceLens {
		if v < 0 {
			return nil, figErr(name, "trace length %d is negative (%g)", i, v)
		}
	}
	if err := checkSpeedups("refinement speedups", d.RefineSpeedups); err != nil {
		return nil, &Error{Figure: name, Err: err}
	}

	l := st.look()
	const title = "Dataset statistics"
	source := "source not given"
	if d.Source != "" {
		source = sourceLabel(d.Source)
	}

	lens := newPlot(l, "", fmt.Sprintf("trace length (%s)", d.TraceUnit), "traces")
	lens.Add(histogram(d.TraceLens, linearEdges(d.TraceLens), l.color(0)))

	speed := newPlot(l, "", fmt.Sprintf("refinement speedup (%s)", source), "pairs")
	logs := make([]float64, len(d.RefineSpeedups))
	for i, v := range d.RefineSpeedups {
		logs[i] = math.Log10(v)
	}
	// Equal bins in log10 are the log-scale bins; the axis is log10 too.
	edges := linearEdges(logs)
	speed.Add(histogram(logs, edges, l.color(1)))
	setLog(&speed.X, math.Pow(10, edges[0]), math.Pow(10, edges[len(edges)-1]))
	for _, p := range []*plot.Plot{lens, speed} {
		p.Y.Min = 0
		p.Y.Tick.Marker = countTicker{}
	}

	plots := [][]*plot.Plot{{lens, speed}}
	svg, png, err := render(name, l, func(c draw.Canvas) {
		c = drawTitle(c, l, title)
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(12), PadRight: vg.Points(4)}
		canvases := plot.Align(plots, tiles, c)
		for i, p := range plots[0] {
			p.Draw(canvases[0][i])
		}
	})
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("Left: length of the %d training traces in %s. Right: speedup of the target script over the prompt script in %d refinement pairs (bins of equal width on the log axis; ",
		len(d.TraceLens), d.TraceUnit, len(d.RefineSpeedups))
	if d.Source != "" {
		caption += sourceWords(d.Source) + ")."
	} else {
		caption += "latency source not given)."
	}
	return &Figure{Name: name, Title: title, Caption: caption, SVG: svg, PNG: png}, nil
}

// binCount is Sturges' rule, ceil(log2 n)+1, within [5, 30]: enough bins to
// see a shape in a few hundred values, not so many that thousands look
// like noise.
func binCount(n int) int {
	k := int(math.Ceil(math.Log2(float64(n)))) + 1
	return min(max(k, 5), 30)
}

// linearEdges are the edges of binCount equal bins over the values' range
// (a range of width 1 around a single value).
func linearEdges(vs []float64) []float64 {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	k := binCount(len(vs))
	edges := make([]float64, k+1)
	for i := range edges {
		edges[i] = lo + (hi-lo)*float64(i)/float64(k)
	}
	edges[k] = hi
	return edges
}

// histogram counts vs into the bins between consecutive edges (each bin
// closed on the left, the last closed on both sides) and returns gonum's
// histogram of the counts. The edges come from the values' own range; a
// value outside them by rounding counts in the nearest end bin.
func histogram(vs, edges []float64, fill color.Color) *plotter.Histogram {
	bins := make([]plotter.HistogramBin, len(edges)-1)
	for i := range bins {
		bins[i].Min, bins[i].Max = edges[i], edges[i+1]
	}
	for _, v := range vs {
		i := sort.SearchFloat64s(edges, v) // the first edge at or above v
		if i == len(edges) || edges[i] != v {
			i-- // v lies above edges[i-1]: its bin starts there
		}
		i = min(max(i, 0), len(bins)-1)
		bins[i].Weight++
	}
	return &plotter.Histogram{
		Bins:      bins,
		FillColor: fill,
		LineStyle: draw.LineStyle{Color: neutral, Width: vg.Points(0.5)},
	}
}
