package plots

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// texts is the SVG text of f, joined, and fails the test when the SVG does
// not parse.
func texts(t *testing.T, f *Figure) string {
	t.Helper()
	ts, err := svgText(f.SVG)
	if err != nil {
		t.Fatalf("%s: SVG does not parse: %v", f.Name, err)
	}
	return strings.Join(ts, "\n")
}

// TestSourceLabels: a latency figure names its source in the axis label,
// calls a model's latencies simulated and only a measured source measured.
func TestSourceLabels(t *testing.T) {
	st := DefaultStyle()
	builds := map[string]func(string) (*Figure, error){
		"speedup_cdf": func(src string) (*Figure, error) { return SpeedupCDF(cdfData(), src, st) },
		"latency_scatter": func(src string) (*Figure, error) {
			return LatencyScatter(pairData(), "sft", "rl", src, st)
		},
		"dataset_stats": func(src string) (*Figure, error) {
			d := datasetData()
			d.Source = src
			return DatasetStatsOf(d, st)
		},
	}
	for _, c := range []struct {
		source, label string
		yes, no       []string // words the texts and caption must and must not hold
	}{
		{"model:h100", "(model:h100, simulated)", []string{"simulated"}, []string{"measured"}},
		{"measured:a100", "(measured:a100, measured)", []string{"measured"}, []string{"simulated"}},
		{"replay:x", "(replay:x)", nil, []string{"simulated", "measured"}},
		{"model:h100, model:a100", "(model:h100, model:a100, simulated)", []string{"simulated"}, []string{"measured"}},
		{"model:h100, measured:h100", "(model:h100, measured:h100, simulated and measured)", nil, nil},
		{"model:h100, replay:x", "(model:h100, replay:x)", nil, []string{"simulated", "measured"}},
	} {
		for name, build := range builds {
			f, err := build(c.source)
			if err != nil {
				t.Fatalf("%s(%q): %v", name, c.source, err)
			}
			all := texts(t, f) + "\n" + f.Caption
			if !strings.Contains(texts(t, f), c.label) {
				t.Errorf("%s(%q): no axis label with %q in %q", name, c.source, c.label, texts(t, f))
			}
			for _, w := range c.yes {
				if !strings.Contains(all, w) {
					t.Errorf("%s(%q): the word %q is missing from texts and caption", name, c.source, w)
				}
			}
			for _, w := range c.no {
				if strings.Contains(all, w) {
					t.Errorf("%s(%q): the word %q appears in texts or caption", name, c.source, w)
				}
			}
		}
	}
	f, err := DatasetStats(datasetData().TraceLens, datasetData().RefineSpeedups, st)
	if err != nil {
		t.Fatal(err)
	}
	if s := texts(t, f); !strings.Contains(s, "refinement speedup (source not given)") || !strings.Contains(s, "trace length (tokens)") {
		t.Errorf("DatasetStats: want the speedup axis to say the source is not given and lengths in tokens; texts %q", s)
	}
}

// TestEdgeCases draws unusual but valid data.
func TestEdgeCases(t *testing.T) {
	st := DefaultStyle()
	inf := math.Inf(1)
	steps, reward, _, correct, kl := rlData()
	_, val := lossData()
	for _, c := range []struct {
		name    string
		build   func() (*Figure, error)
		want    []string // texts that must appear
		wantNot []string // texts that must not
		caption []string // caption substrings
		noFirst bool     // the palette's first colour is not drawn
		noElem  []string // text elements that must not appear
	}{
		{name: "cdf one value", build: func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{1}}}, "model:h100", st)
		}, want: []string{"rl (n=1)"}},
		{name: "cdf ties", build: func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{2, 2, 2}}}, "model:h100", st)
		}, want: []string{"rl (n=3)"}},
		{name: "scatter all without a correct attempt", build: func() (*Figure, error) {
			return LatencyScatter([]Pair{{"a", inf, inf}, {"b", inf, inf}}, "sft", "rl", "model:h100", st)
		}, want: []string{"no correct attempt: 2"}, wantNot: []string{"both correct"}, caption: []string{"ties 2"}, noFirst: true},
		{name: "scatter one pair", build: func() (*Figure, error) {
			return LatencyScatter([]Pair{{"a", 3, 3}}, "sft", "rl", "model:h100", st)
		}, want: []string{"both correct: 1"}, wantNot: []string{"no correct attempt"}},
		{name: "scatter counts", build: func() (*Figure, error) {
			return LatencyScatter(pairData(), "sft", "rl", "model:h100", st)
		}, caption: []string{"rl faster on 4 tasks, sft faster on 2, ties 2", "(sft: 2 tasks, rl: 1)"}},
		{name: "rl one step, no std", build: func() (*Figure, error) {
			return RLCurves([]float64{1}, []float64{0.5}, nil, []float64{0.25}, []float64{0}, st)
		}, want: []string{"reward (mean)"}, wantNot: []string{"±"}},
		{name: "rl without std", build: func() (*Figure, error) {
			return RLCurves(steps, reward, nil, correct, kl, st)
		}, want: []string{"reward (mean)"}},
		{name: "loss validation only, one series: no legend", build: func() (*Figure, error) {
			return LossCurves(nil, val, st)
		}, want: []string{"loss (nats/token)"}, noElem: []string{"validation"}},
		{name: "loss one run named by role", build: func() (*Figure, error) {
			tr, v := lossData()
			tr[0].Name, v[0].Name = "train", "validation"
			return LossCurves(tr, v, st)
		}, want: []string{"training", "validation"}, wantNot: []string{"train training", "validation validation"}},
		{name: "loss two runs", build: func() (*Figure, error) {
			tr, v := lossData()
			rl := Series{Name: "rl", X: tr[0].X, Y: tr[0].Y[1:]}
			rl.X = rl.X[1:]
			return LossCurves(append(tr, rl), v, st)
		}, want: []string{"sft training", "rl training", "sft validation"}},
		{name: "bars with a missing cell and different n", build: func() (*Figure, error) {
			return FamilyCorrectness([]Bar{
				{Group: "C2D", Series: "sft", Value: 0.5, N: 10},
				{Group: "C2D", Series: "rl", Value: 0.7, N: 12},
				{Group: "GMM", Series: "rl", Value: 0, N: 8},
			}, st)
		}, want: []string{"C2D", "GMM", "n=8", "sft", "rl"}, wantNot: []string{"n=10", "n=12"}},
		{name: "bars one series: no legend", build: func() (*Figure, error) {
			return FamilyCorrectness([]Bar{{Group: "C2D", Series: "sft", Value: 1}}, st)
		}, want: []string{"C2D"}, wantNot: []string{"sft"}},
		{name: "dataset identical values", build: func() (*Figure, error) {
			return DatasetStatsOf(Dataset{TraceLens: []float64{7, 7, 7}, TraceUnit: "instructions", RefineSpeedups: []float64{1.5}, Source: "model:h100"}, st)
		}, want: []string{"trace length (instructions)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			s := texts(t, f)
			for _, w := range c.want {
				if !strings.Contains(s, w) {
					t.Errorf("no text %q in %q", w, s)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(s, w) {
					t.Errorf("text %q should not appear in %q", w, s)
				}
			}
			elems, _ := svgText(f.SVG)
			for _, w := range c.noElem {
				if slices.Contains(elems, w) {
					t.Errorf("text element %q should not appear in %q", w, elems)
				}
			}
			for _, w := range c.caption {
				if !strings.Contains(f.Caption, w) {
					t.Errorf("caption %q does not contain %q", f.Caption, w)
				}
			}
			checkPNGColors(t, f, st, !c.noFirst)
		})
	}
}

func TestCDFPoints(t *testing.T) {
	got := cdfPoints([]float64{2, 1, 2, 4}, 0.5, 8)
	want := plotter.XYs{{X: math.Log10(0.5), Y: 0}, {X: 0, Y: 0.25}, {X: math.Log10(2), Y: 0.75}, {X: math.Log10(4), Y: 1}, {X: math.Log10(8), Y: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("cdfPoints({2,1,2,4}, 0.5, 8) = %v, want %v", got, want)
	}
}

func TestHistogram(t *testing.T) {
	for _, c := range []struct {
		name  string
		vs    []float64
		edges []float64
		want  []float64
	}{
		{"edges go to the bin starting there", []float64{0, 0.5, 1, 2}, []float64{0, 1, 2}, []float64{2, 2}},
		{"last bin closed", []float64{2, 2, 2}, []float64{0, 1, 2}, []float64{0, 3}},
		{"rounding outside counts in the end bins", []float64{-1e-12, 2 + 1e-12}, []float64{0, 1, 2}, []float64{1, 1}},
	} {
		h := histogram(c.vs, c.edges, neutral)
		var got []float64
		for _, b := range h.Bins {
			got = append(got, b.Weight)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: histogram(%v, %v) counts = %v, want %v", c.name, c.vs, c.edges, got, c.want)
		}
	}
	// Sturges' rule within [5, 30], and every value counted once.
	vs := speedups(1000, 1)
	edges := linearEdges(vs)
	if len(edges)-1 != 11 {
		t.Errorf("linearEdges of 1000 values: %d bins, want 11", len(edges)-1)
	}
	var n float64
	for _, b := range histogram(vs, edges, neutral).Bins {
		n += b.Weight
	}
	if n != 1000 {
		t.Errorf("histogram of 1000 values counts %g", n)
	}
}

func labels(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func TestLogTicker(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64 // values
		want   []string
	}{
		{0.2, 5, []string{"0.2", "0.5", "1", "2", "5"}},
		{1, 10000, []string{"1", "10", "100", "1000", "10000"}},
		{3, 40, []string{"5", "10", "20"}},
	} {
		lo, hi := math.Log10(c.lo), math.Log10(c.hi)
		ts := logTicker{}.Ticks(lo, hi)
		if got := labels(ts); !slices.Equal(got, c.want) {
			t.Errorf("logTicker over [%g, %g]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
		for _, tk := range ts {
			if tk.Value < lo-1e-9 || tk.Value > hi+1e-9 {
				t.Errorf("logTicker over [%g, %g]: tick at 10^%g is outside", c.lo, c.hi, tk.Value)
			}
		}
	}
	// Under a decade: gonum's linear ticks, placed at their logarithm.
	ts := logTicker{}.Ticks(math.Log10(1.2), math.Log10(1.8))
	if len(labels(ts)) < 2 {
		t.Errorf("logTicker over [1.2, 1.8]: labels %q, want at least 2", labels(ts))
	}
	for _, tk := range ts {
		if tk.Label != "" {
			v := math.Pow(10, tk.Value)
			if got := strings.TrimRight(strings.TrimRight(tk.Label, "0"), "."); math.Abs(v-parse(t, got)) > 1e-9 {
				t.Errorf("tick %q placed at %g", tk.Label, v)
			}
		}
	}
}

func TestCountTicker(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 33, []string{"0", "10", "20", "30"}},
		{0, 4, []string{"0", "1", "2", "3", "4"}},
		{0, 260, []string{"0", "100", "200"}},
	} {
		if got := labels(countTicker{}.Ticks(c.lo, c.hi)); !slices.Equal(got, c.want) {
			t.Errorf("countTicker over [%g, %g]: %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

func parse(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("tick label %q is not a number: %v", s, err)
	}
	return v
}

// TestCrowdedFamilies: with many families the group labels become one
// slanted line each ("C2D n=40"); with few they stay two lines.
func TestCrowdedFamilies(t *testing.T) {
	st := DefaultStyle()
	build := func(groups int) string {
		var bars []Bar
		for g := range groups {
			for _, s := range []string{"sft", "rl", "baseline:random"} {
				bars = append(bars, Bar{Group: fmt.Sprintf("FAMILY%02d", g), Series: s, Value: 0.5, N: 40})
			}
		}
		f, err := FamilyCorrectness(bars, st)
		if err != nil {
			t.Fatal(err)
		}
		return texts(t, f)
	}
	if s := build(3); !strings.Contains(s, "FAMILY00\nn=40") {
		t.Errorf("3 families: want the label on two lines (FAMILY00, n=40); texts %q", s)
	}
	if s := build(17); !strings.Contains(s, "FAMILY00 n=40") {
		t.Errorf("17 families: want one-line slanted labels (FAMILY00 n=40); texts %q", s)
	}
}
