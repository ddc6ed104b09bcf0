package search

import (
	"context"
	"fmt"
	"math/rand/v2"

	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/trace"
)

// A Candidate is a schedule that passed the static check: its full trace
// (with the postprocessors' part, as a tuning database stores it), the
// scheduled function and its structural hash (verdict.Hash).
type Candidate struct {
	Trace *trace.Trace
	Func  *ir.PrimFunc
	Hash  string
}

// A CostModel scores candidates for the search (higher is better; the
// search clamps negative scores to 0) and learns from measurements.
// Predict must return one score per candidate. Update receives the
// candidates measured in a round with their latencies in seconds (+Inf for
// a candidate that failed to run). A model is used by one search at a time.
type CostModel interface {
	Name() string
	Predict(ctx context.Context, cands []*Candidate) ([]float64, error)
	Update(ctx context.Context, cands []*Candidate, latencies []float64) error
}

// RandomModel scores uniformly at random in [0, 1) (TVM's RandomModel),
// from its own seeded generator.
type RandomModel struct {
	rng *rand.Rand
}

// NewRandomModel returns a random model seeded with seed.
func NewRandomModel(seed int64) *RandomModel {
	return &RandomModel{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed))}
}

func (m *RandomModel) Name() string { return "random" }

// Predict implements CostModel.
func (m *RandomModel) Predict(_ context.Context, cands []*Candidate) ([]float64, error) {
	out := make([]float64, len(cands))
	for i := range out {
		out[i] = m.rng.Float64()
	}
	return out, nil
}

// Update implements CostModel: a random model learns nothing.
func (m *RandomModel) Update(context.Context, []*Candidate, []float64) error { return nil }

// AnalyticModel scores a candidate by the inverse of its latency from a
// latency source (normally the analytic model of kernels/gpumodel, without
// noise): the candidate is lowered and estimated. A candidate that does not
// lower or that the source refuses scores 0.
type AnalyticModel struct {
	Source latency.Source
}

func (m AnalyticModel) Name() string { return "analytic:" + m.Source.Name() }

// Predict implements CostModel.
func (m AnalyticModel) Predict(ctx context.Context, cands []*Candidate) ([]float64, error) {
	out := make([]float64, len(cands))
	for i, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("search: analytic model interrupted: %w", err)
		}
		p, err := lower.Lower(ctx, c.Func)
		if err != nil {
			continue
		}
		est, err := m.Source.Latency(ctx, p)
		if err != nil || !(est.Seconds > 0) {
			continue
		}
		out[i] = 1 / est.Seconds
	}
	return out, nil
}

// Update implements CostModel: the analytic model is fixed.
func (m AnalyticModel) Update(context.Context, []*Candidate, []float64) error { return nil }
