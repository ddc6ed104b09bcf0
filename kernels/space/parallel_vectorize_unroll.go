package space

import (
	"context"

	"dragonx/kernels/trace"
)

// Root-block annotations ParallelizeVectorizeUnroll writes (read by the
// postprocessor RewriteParallelVectorizeUnroll).
const (
	annParallel       = "meta_schedule.parallel"
	annVectorize      = "meta_schedule.vectorize"
	annUnrollExplicit = "meta_schedule.unroll_explicit"
	annUnrollImplicit = "meta_schedule.unroll_implicit"
)

// ParallelizeVectorizeUnroll is TVM's ParallelizeVectorizeUnroll rule: it
// marks the root block only, with the parallel extent and the vector
// extent (when set) and, unless the function is purely spatial, an unroll
// depth sampled uniformly among UnrollMaxSteps. It never forks.
type ParallelizeVectorizeUnroll struct {
	// MaxParallelExtent is the extent annotated meta_schedule.parallel
	// (TVM: cores × max_jobs_per_core); -1 annotates none.
	MaxParallelExtent int64
	// MaxVectorizeExtent is annotated meta_schedule.vectorize; -1: none.
	MaxVectorizeExtent int64
	// UnrollMaxSteps are the unroll depths sampled; empty: no unroll.
	UnrollMaxSteps []int64
	// UnrollExplicit annotates meta_schedule.unroll_explicit, else
	// meta_schedule.unroll_implicit.
	UnrollExplicit bool
}

// ParallelizeVectorizeUnrollCUDA returns the rule with TVM v0.20's
// ScheduleRule::DefaultCUDA options: no parallel or vectorize annotation,
// explicit unroll of depth 0, 16, 64, 512 or 1024.
func ParallelizeVectorizeUnrollCUDA() *ParallelizeVectorizeUnroll {
	return &ParallelizeVectorizeUnroll{
		MaxParallelExtent:  -1,
		MaxVectorizeExtent: -1,
		UnrollMaxSteps:     []int64{0, 16, 64, 512, 1024},
		UnrollExplicit:     true,
	}
}

// Name implements Rule.
func (*ParallelizeVectorizeUnroll) Name() string { return "ParallelizeVectorizeUnroll" }

// Apply implements Rule.
func (r *ParallelizeVectorizeUnroll) Apply(_ context.Context, s *trace.Session, block string) ([]*trace.Session, error) {
	blk, ok := blockOf(s, block)
	if !ok || blk != s.Func().Root() {
		return []*trace.Session{s}, nil
	}
	annotate := func(key string, v trace.Value) error {
		_, err := s.Emit("Annotate", []trace.Value{str(block), v}, []trace.Value{str(key)}, nil)
		return err
	}
	if r.MaxParallelExtent != -1 {
		if err := annotate(annParallel, trace.IntValue(r.MaxParallelExtent)); err != nil {
			return nil, err
		}
	}
	if r.MaxVectorizeExtent != -1 {
		if err := annotate(annVectorize, trace.IntValue(r.MaxVectorizeExtent)); err != nil {
			return nil, err
		}
	}
	if len(r.UnrollMaxSteps) > 0 && !isSpatialFunc(s.Func()) {
		v, err := sampleUniform(s, r.UnrollMaxSteps)
		if err != nil {
			return nil, err
		}
		key := annUnrollImplicit
		if r.UnrollExplicit {
			key = annUnrollExplicit
		}
		if err := annotate(key, str(v)); err != nil {
			return nil, err
		}
	}
	return []*trace.Session{s}, nil
}

// sampleUniform records a SampleCategorical over cands with equal
// probabilities and returns the name of its value.
func sampleUniform(s *trace.Session, cands []int64) (string, error) {
	cs := make([]trace.Value, len(cands))
	ps := make([]trace.Value, len(cands))
	for i, c := range cands {
		cs[i] = trace.IntValue(c)
		ps[i] = trace.FloatValue(1.0 / float64(len(cands)))
	}
	v, err := s.Emit("SampleCategorical", nil, []trace.Value{trace.ArrayValue(cs...), trace.ArrayValue(ps...)}, nil)
	if err != nil {
		return "", err
	}
	return v[0], nil
}
