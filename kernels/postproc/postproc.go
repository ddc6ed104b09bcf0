// Package postproc holds MetaSchedule's CUDA postprocessors: deterministic
// rewrites that run, after EnterPostproc, on a sketch whose decisions are
// all taken, and either finish it (cooperative fetch, unbound blocks,
// unroll and vectorize annotations, reduction blocks) or reject it
// (dynamic loops, GPU limits). Each records the primitives it applies in
// the session's trace (trace.Session.Emit), so that replaying the recorded
// trace reproduces its result, as TVM's database stores the full trace.
package postproc

import (
	"context"
	"fmt"

	"dragonx/kernels/trace"
)

// A Postproc rewrites a replayed schedule in place, recording every
// primitive it applies through s.Emit. It returns an error saying why when
// the schedule must be rejected (TVM's postprocessor returning false).
type Postproc interface {
	// Name is TVM's name of the postprocessor (RewriteCooperativeFetch).
	Name() string
	Apply(ctx context.Context, s *trace.Session) error
}

// Run applies ps in order; the error names the postprocessor that
// rejected the schedule.
func Run(ctx context.Context, s *trace.Session, ps []Postproc) error {
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.Apply(ctx, s); err != nil {
			return fmt.Errorf("postproc %s: %w", p.Name(), err)
		}
	}
	return nil
}

// CUDA returns TVM v0.20's Postproc::DefaultCUDA(), in its order:
// DisallowDynamicLoop, RewriteCooperativeFetch, RewriteUnboundBlock,
// RewriteParallelVectorizeUnroll, RewriteReductionBlock and
// VerifyGPUCode with the CUDA limits.
func CUDA() []Postproc {
	return []Postproc{
		NewDisallowDynamicLoop(),
		NewRewriteCooperativeFetch(),
		NewRewriteUnboundBlock(),
		NewRewriteParallelVectorizeUnroll(),
		NewRewriteReductionBlock(),
		NewVerifyGPUCode(CUDALimits()),
	}
}
