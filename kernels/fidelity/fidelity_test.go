package fidelity

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/timings"
)

// pts builds points from measured and estimated latencies (NaN: refused).
func pts(meas, est []float64) []point {
	out := make([]point, len(meas))
	for i := range meas {
		out[i] = point{measured: meas[i], model: est[i], why: "refused"}
	}
	return out
}

var nan = math.NaN()

func TestFigures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		meas, est []float64
		want      Figures // N, Refused, TopK and the figures; NaN: undefined
	}{
		{
			name: "perfect up to a factor",
			meas: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
			est:  []float64{3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33},
			want: Figures{N: 11, TopK: 2, Spearman: 1, Kendall: 1, Regret1: 1, Recall10: 1, Scale: 1.0 / 3, MedianRelErr: 0},
		},
		{
			name: "reversed",
			meas: []float64{1, 2, 3, 4, 5},
			est:  []float64{5, 4, 3, 2, 1},
			// The log ratios' median is 0: scale 1; the relative errors
			// are 4, 1, 0, 0.5, 0.8.
			want: Figures{N: 5, TopK: 1, Spearman: -1, Kendall: -1, Regret1: 5, Recall10: 0, Scale: 1, MedianRelErr: 0.8},
		},
		{
			// The measured best is refused: the pick is the second best,
			// and the fastest tenth (one row) is missed.
			name: "refused best",
			meas: []float64{1, 2, 3, 4, 5},
			est:  []float64{nan, 2, 3, 4, 5},
			want: Figures{N: 5, Refused: 1, TopK: 1, Spearman: 1, Kendall: 1, Regret1: 2, Recall10: 0, Scale: 1, MedianRelErr: 0},
		},
		{
			// Ties at the model's minimum: the expected pick, the mean of
			// the tied rows' measured latencies; the tie for the top-1
			// goes to the earlier row. Ranks (2,2,2,4) and (3,2,1,4):
			// Spearman 3/√15; log ratios ln 4, ln 2, 0, ln 4: scale
			// 2^1.5, relative errors (2^1.5 - 2)/2 and (4 - 2^1.5)/4 in
			// the middle.
			name: "tied minimum",
			meas: []float64{4, 2, 1, 8},
			est:  []float64{1, 1, 1, 2},
			want: Figures{N: 4, TopK: 1, Regret1: 7.0 / 3, Recall10: 0, Spearman: 3 / math.Sqrt(15), Kendall: nan, Scale: math.Pow(2, 1.5),
				MedianRelErr: ((math.Pow(2, 1.5)-2)/2 + (4-math.Pow(2, 1.5))/4) / 2},
		},
		{
			name: "one estimate",
			meas: []float64{1, 2},
			est:  []float64{nan, 3},
			want: Figures{N: 2, Refused: 1, TopK: 1, Spearman: nan, Kendall: nan, Regret1: 2, Recall10: 0, Scale: 2.0 / 3, MedianRelErr: 0},
		},
		{
			name: "all refused",
			meas: []float64{1, 2},
			est:  []float64{nan, nan},
			want: Figures{N: 2, Refused: 2, TopK: 1, Spearman: nan, Kendall: nan, Regret1: nan, Recall10: 0, Scale: nan, MedianRelErr: nan},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := figures(pts(tc.meas, tc.est))
			if got.N != tc.want.N || got.Refused != tc.want.Refused || got.TopK != tc.want.TopK {
				t.Errorf("n %d refused %d top-k %d, want %d %d %d", got.N, got.Refused, got.TopK, tc.want.N, tc.want.Refused, tc.want.TopK)
			}
			if tc.want.Refused > 0 && got.FirstRefusal != "refused" {
				t.Errorf("first refusal %q", got.FirstRefusal)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"Spearman", got.Spearman, tc.want.Spearman}, {"Regret1", got.Regret1, tc.want.Regret1},
				{"Recall10", got.Recall10, tc.want.Recall10}, {"Scale", got.Scale, tc.want.Scale},
				{"MedianRelErr", got.MedianRelErr, tc.want.MedianRelErr},
			} {
				if math.IsNaN(c.want) != math.IsNaN(c.got) || math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
				}
			}
			if !math.IsNaN(tc.want.Kendall) && math.Abs(got.Kendall-tc.want.Kendall) > 1e-12 {
				t.Errorf("Kendall = %g, want %g", got.Kendall, tc.want.Kendall)
			}
		})
	}
}

// TestTopKRounding: k is ⌈n/10⌉, at least 1, over all rows (refused
// included).
func TestTopKRounding(t *testing.T) {
	for n, want := range map[int]int{1: 1, 9: 1, 10: 1, 11: 2, 20: 2, 21: 3, 740: 74, 121: 13} {
		meas := make([]float64, n)
		est := make([]float64, n)
		for i := range meas {
			meas[i], est[i] = float64(i+1), float64(i+1)
		}
		if got := figures(pts(meas, est)).TopK; got != want {
			t.Errorf("n %d: k %d, want %d", n, got, want)
		}
	}
}

// TestFiguresProperties: on random data, scaling the estimates by a
// positive factor changes only Scale (by its inverse), shuffling the rows
// changes nothing but tie-breaking (there are no ties here), and every
// figure stays in its range.
func TestFiguresProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		n := 2 + rng.IntN(60)
		meas := make([]float64, n)
		est := make([]float64, n)
		for i := range meas {
			meas[i] = math.Exp(rng.NormFloat64())
			est[i] = meas[i] * math.Exp(rng.NormFloat64())
			if rng.IntN(8) == 0 {
				est[i] = nan
			}
		}
		f := figures(pts(meas, est))
		c := 0.1 + 10*rng.Float64()
		scaled := make([]float64, n)
		for i := range est {
			scaled[i] = c * est[i]
		}
		g := figures(pts(meas, scaled))
		perm := rng.Perm(n)
		pm, pe := make([]float64, n), make([]float64, n)
		for i, j := range perm {
			pm[i], pe[i] = meas[j], est[j]
		}
		h := figures(pts(pm, pe))
		for _, o := range []Figures{g, h} {
			if !same(o.Spearman, f.Spearman) || !same(o.Kendall, f.Kendall) || !same(o.Regret1, f.Regret1) ||
				!same(o.Recall10, f.Recall10) || !same(o.MedianRelErr, f.MedianRelErr) {
				t.Fatalf("trial %d: figures %+v vs %+v", trial, f, o)
			}
		}
		if !same(g.Scale*c, f.Scale) {
			t.Errorf("trial %d: scale %g after ×%g, %g before", trial, g.Scale, c, f.Scale)
		}
		if f.Regret1 < 1 && !math.IsNaN(f.Regret1) || f.Recall10 < 0 || f.Recall10 > 1 || f.Spearman < -1-1e-12 || f.Spearman > 1+1e-12 {
			t.Errorf("trial %d: out of range: %+v", trial, f)
		}
	}
}

func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// listSource estimates the i-th call with est[i] (NaN: an error).
type listSource struct {
	est []float64
	i   int
}

func (s *listSource) Name() string { return "list" }

func (s *listSource) Latency(ctx context.Context, p *lower.Program) (latency.Estimate, error) {
	e := s.est[s.i]
	s.i++
	if math.IsNaN(e) {
		return latency.Estimate{}, errors.New("no block fits")
	}
	return latency.Estimate{Seconds: e, Source: "model:list"}, nil
}

// TestEvaluate: rows are grouped by workload in CSV order; the static
// check's refusals and the source's errors both count as refused; the
// pooled figures sum the counts, take the workloads' medians of regret
// and recall and rank the latencies normalised by each workload's median.
func TestEvaluate(t *testing.T) {
	rows := []timings.Row{
		{Line: 2, Workload: "A", WorkloadHash: "a", Seconds: 1},
		{Line: 3, Workload: "B", WorkloadHash: "b", Seconds: 10},
		{Line: 4, Workload: "A", WorkloadHash: "a", Seconds: 2, Refused: "static check (phase verify): too wide"},
		{Line: 5, Workload: "A", WorkloadHash: "a", Seconds: 3},
		{Line: 6, Workload: "B", WorkloadHash: "b", Seconds: 20},
		{Line: 7, Workload: "B", WorkloadHash: "b", Seconds: 30},
		{Line: 8, Workload: "A", WorkloadHash: "a", Seconds: 4},
	}
	// Estimates in call order (the refused row is not estimated): A gets
	// 1, 3, 4 for 1, 3, 4 (perfect); B gets 30, 20, error for 10, 20, 30.
	src := &listSource{est: []float64{1, 30, 3, 20, nan, 4}}
	rep, err := Evaluate(context.Background(), rows, src)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source != "model:list" || rep.Target != "list" || len(rep.Workloads) != 2 {
		t.Fatalf("report %+v", rep)
	}
	a, b := rep.Workloads[0], rep.Workloads[1]
	if a.Workload != "A" || a.N != 4 || a.Refused != 1 || !strings.Contains(a.FirstRefusal, "line 4: static check") {
		t.Errorf("A: %+v", a)
	}
	if a.Spearman != 1 || a.Regret1 != 1 || a.Recall10 != 1 {
		t.Errorf("A: %+v", a)
	}
	if b.Workload != "B" || b.N != 3 || b.Refused != 1 || !strings.Contains(b.FirstRefusal, "line 7: no block fits") {
		t.Errorf("B: %+v", b)
	}
	if b.Spearman != -1 || b.Regret1 != 2 || b.Recall10 != 0 {
		t.Errorf("B: %+v", b)
	}
	p := rep.Pooled
	if p.N != 7 || p.Refused != 2 || p.Regret1 != 1.5 || p.Recall10 != 0.5 {
		t.Errorf("pooled: %+v", p)
	}
	w := rep.Worst
	if w.Spearman != -1 || w.Regret1 != 2 || w.Recall10 != 0 {
		t.Errorf("worst: %+v", w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Evaluate(ctx, rows, &listSource{est: src.est}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Evaluate(context.Background(), nil, src); err == nil {
		t.Error("no rows: no error")
	}
}
