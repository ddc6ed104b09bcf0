package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"dragonx/kernels/trace"
)

// GBTModel is a learned cost model trained online, as MetaSchedule's XGBoost
// model is (metaschedule-reference.md §3.4), in a much smaller form:
// gradient-boosted regression trees on features of the trace's decisions.
//
// Features: each decision of the sketch part is one or more features, named
// by the instruction's index and the slot (a trace drawn from one sketch
// always has the same instructions there): log2 of each tile of a
// SamplePerfectTile, log2(1 + the chosen value) of a SampleCategorical whose
// candidates are integers (its index otherwise), and the number of
// instructions of the sketch part (which tells the sketches apart). A
// feature a trace does not have is 0.
//
// Label: as MetaSchedule, the normalized throughput min_latency/latency in
// [0, 1] (0 for a failed candidate). Training: after each round, the
// ensemble is refit from scratch on every measurement so far: Rounds trees
// (squared error, learning rate Eta, depth at most MaxDepth, leaves of at
// least MinLeaf samples, exact splits). Until MinSamples measurements are in,
// predictions are uniform random (as MetaSchedule's, before 100).
type GBTModel struct {
	Rounds, MaxDepth, MinLeaf, MinSamples int
	Eta                                   float64

	rng   *rand.Rand
	index map[string]int // feature name → column
	xs    [][]float64
	lats  []float64
	trees []*node
}

// NewGBTModel returns a learned model with its default parameters (50
// trees, depth 6, leaves of 2, eta 0.2, 100 samples before it predicts),
// its random phase seeded with seed.
func NewGBTModel(seed int64) *GBTModel {
	return &GBTModel{Rounds: 50, MaxDepth: 6, MinLeaf: 2, MinSamples: 100, Eta: 0.2,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x6b7)), index: map[string]int{}}
}

func (m *GBTModel) Name() string { return "learned" }

// features returns the feature vector of t, adding new feature names to the
// index when grow is set (else unknown ones are dropped).
func (m *GBTModel) features(t *trace.Trace, grow bool) []float64 {
	vals := map[int]float64{}
	set := func(name string, v float64) {
		col, ok := m.index[name]
		if !ok {
			if !grow {
				return
			}
			col = len(m.index)
			m.index[name] = col
		}
		vals[col] = v
	}
	end := t.Postproc()
	if end < 0 {
		end = len(t.Insts)
	}
	set("insts", float64(end))
	for _, d := range t.Decisions {
		if d.Index >= end {
			continue
		}
		in := t.Insts[d.Index]
		key := strconv.Itoa(d.Index)
		switch {
		case in.Kind == "SamplePerfectTile" && d.Value.Kind == trace.Array:
			for j, x := range d.Value.Array {
				set(key+"/"+strconv.Itoa(j), math.Log2(math.Max(1, float64(x.Int))))
			}
		case in.Kind == "SampleCategorical" && d.Value.Kind == trace.Int:
			v := float64(d.Value.Int)
			if len(in.Attrs) == 2 && int(d.Value.Int) < len(in.Attrs[0].Array) && d.Value.Int >= 0 {
				if c := in.Attrs[0].Array[d.Value.Int]; c.Kind == trace.Int {
					v = math.Log2(1 + math.Max(0, float64(c.Int)))
				}
			}
			set(key, v)
		}
	}
	out := make([]float64, len(m.index))
	for c, v := range vals {
		out[c] = v
	}
	return out
}

// Predict implements CostModel.
func (m *GBTModel) Predict(ctx context.Context, cands []*Candidate) ([]float64, error) {
	out := make([]float64, len(cands))
	if len(m.lats) < m.MinSamples || len(m.trees) == 0 {
		for i := range out {
			out[i] = m.rng.Float64()
		}
		return out, nil
	}
	for i, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("search: learned model interrupted: %w", err)
		}
		x := m.features(c.Trace, false)
		for _, t := range m.trees {
			out[i] += m.Eta * t.eval(x)
		}
	}
	return out, nil
}

// Update implements CostModel: it adds the measurements and refits.
func (m *GBTModel) Update(ctx context.Context, cands []*Candidate, lats []float64) error {
	if len(cands) != len(lats) {
		return fmt.Errorf("search: learned model: %d candidates, %d latencies", len(cands), len(lats))
	}
	for i, c := range cands {
		m.xs = append(m.xs, m.features(c.Trace, true))
		m.lats = append(m.lats, lats[i])
	}
	if len(m.lats) < m.MinSamples {
		return nil
	}
	best := math.Inf(1)
	for _, l := range m.lats {
		best = math.Min(best, l)
	}
	n, nf := len(m.xs), len(m.index)
	X := make([][]float64, n)
	y := make([]float64, n)
	for i, x := range m.xs {
		X[i] = make([]float64, nf)
		copy(X[i], x)
		if l := m.lats[i]; l > 0 && !math.IsInf(l, 0) && !math.IsInf(best, 0) {
			y[i] = best / l
		}
	}
	pred := make([]float64, n)
	resid := make([]float64, n)
	m.trees = m.trees[:0]
	rows := make([]int, n)
	for r := range m.Rounds {
		if r%8 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("search: learned model interrupted: %w", err)
			}
		}
		for i := range rows {
			rows[i] = i
			resid[i] = y[i] - pred[i]
		}
		t := m.grow(X, resid, rows, 0)
		m.trees = append(m.trees, t)
		for i := range pred {
			pred[i] += m.Eta * t.eval(X[i])
		}
	}
	return nil
}

// node is a regression tree node: a leaf (feat < 0) or a split x[feat] <= thr.
type node struct {
	feat        int
	thr, value  float64
	left, right *node
}

func (t *node) eval(x []float64) float64 {
	for t.feat >= 0 {
		v := 0.0
		if t.feat < len(x) {
			v = x[t.feat]
		}
		if v <= t.thr {
			t = t.left
		} else {
			t = t.right
		}
	}
	return t.value
}

// grow fits a tree to the residuals r of rows by exact greedy splits
// minimizing the squared error.
func (m *GBTModel) grow(X [][]float64, r []float64, rows []int, depth int) *node {
	sum := 0.0
	for _, i := range rows {
		sum += r[i]
	}
	leaf := &node{feat: -1, value: sum / float64(len(rows))}
	if depth >= m.MaxDepth || len(rows) < 2*m.MinLeaf {
		return leaf
	}
	bestGain, bestFeat, bestThr := 1e-12, -1, 0.0
	order := slices.Clone(rows)
	nf := len(X[rows[0]])
	for f := range nf {
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case X[a][f] < X[b][f]:
				return -1
			case X[a][f] > X[b][f]:
				return 1
			}
			return 0
		})
		left := 0.0
		n := len(order)
		for k := 0; k < n-1; k++ {
			left += r[order[k]]
			if X[order[k]][f] == X[order[k+1]][f] || k+1 < m.MinLeaf || n-k-1 < m.MinLeaf {
				continue
			}
			nl, nr := float64(k+1), float64(n-k-1)
			right := sum - left
			gain := left*left/nl + right*right/nr - sum*sum/float64(n)
			if gain > bestGain {
				bestGain, bestFeat, bestThr = gain, f, (X[order[k]][f]+X[order[k+1]][f])/2
			}
		}
	}
	if bestFeat < 0 {
		return leaf
	}
	var l, rr []int
	for _, i := range rows {
		if X[i][bestFeat] <= bestThr {
			l = append(l, i)
		} else {
			rr = append(rr, i)
		}
	}
	return &node{feat: bestFeat, thr: bestThr, left: m.grow(X, r, l, depth+1), right: m.grow(X, r, rr, depth+1)}
}
