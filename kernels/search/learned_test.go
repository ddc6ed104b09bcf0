package search

import (
	"context"
	"math"
	"slices"
	"testing"

	"dragonx/kernels/verdict"
)

// spearman is the rank correlation of a and b (no tie correction).
func spearman(a, b []float64) float64 {
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(i, j int) int {
			switch {
			case v[i] < v[j]:
				return -1
			case v[i] > v[j]:
				return 1
			}
			return 0
		})
		r := make([]float64, len(v))
		for k, i := range idx {
			r[i] = float64(k)
		}
		return r
	}
	ra, rb := rank(a), rank(b)
	n := float64(len(a))
	d2 := 0.0
	for i := range ra {
		d2 += (ra[i] - rb[i]) * (ra[i] - rb[i])
	}
	return 1 - 6*d2/(n*(n*n-1))
}

// TestGBTModelLearns: trained on the model latencies of three quarters of
// the accepted draws of a matmul, the learned model ranks the other quarter
// much as their latencies do (Spearman ρ of score and throughput); before MinSamples it predicts at
// random.
func TestGBTModelLearns(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 1)
	src := measureSource(t, 0)
	var cands []*Candidate
	var lats []float64
	for _, tr := range drawOK(t, f, 8, 200) {
		v := verdict.CheckTrace(ctx, f, tr, verdict.Options{Latency: src})
		if !v.OK {
			continue
		}
		cands = append(cands, &Candidate{Trace: v.Trace(), Func: v.Func(), Hash: v.IRHash})
		lats = append(lats, *v.LatencyS)
	}
	if len(cands) < 150 {
		t.Fatalf("only %d measured draws", len(cands))
	}
	split := len(cands) * 3 / 4
	m := NewGBTModel(1)
	if err := m.Update(ctx, cands[:50], lats[:50]); err != nil {
		t.Fatal(err)
	}
	if len(m.trees) != 0 {
		t.Fatal("model trained before MinSamples")
	}
	if err := m.Update(ctx, cands[50:split], lats[50:split]); err != nil {
		t.Fatal(err)
	}
	if len(m.trees) != m.Rounds {
		t.Fatalf("%d trees, want %d", len(m.trees), m.Rounds)
	}
	scores, err := m.Predict(ctx, cands[split:])
	if err != nil {
		t.Fatal(err)
	}
	thr := make([]float64, 0, len(scores))
	for _, l := range lats[split:] {
		thr = append(thr, 1/l)
	}
	rho := spearman(scores, thr)
	t.Logf("Spearman ρ on %d held-out draws: %.3f", len(scores), rho)
	if !(rho > 0.5) || math.IsNaN(rho) {
		t.Errorf("Spearman ρ %.3f, want > 0.5", rho)
	}
}
