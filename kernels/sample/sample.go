// Package sample draws schedules from a workload's design space as TVM's
// evolutionary search draws its initial population
// (EvolutionarySearch's SampleInitPopulation, metaschedule-reference.md
// §3.2): the design space is generated once (kernels/space, TVM's CUDA
// rules); then each draw picks one of its sketches at random, replays the
// sketch's instructions without their decisions (every SamplePerfectTile,
// SampleCategorical and SampleComputeLocation samples afresh), appends
// EnterPostproc and runs the CUDA postprocessors. The result is the full
// trace a tuning database stores, or a rejection naming the phase, the
// postprocessor and the reason.
//
// # Determinism
//
// Draw i of seed S depends on (S, i) only: a PCG generator seeded with the
// two picks the sketch (uniformly) and the seed of the replay's samples,
// so that the same (seed, count) gives the same traces byte for byte,
// whatever else was drawn before, and draws can be computed in any order
// or in parallel. The space itself is generated with seed S; its sketches'
// decisions are dropped, so only their instructions matter.
//
// # Rejections
//
// A draw that fails gives a Rejection: phase replay (an instruction of the
// sketch fails with the decisions drawn), postproc (a postprocessor other
// than VerifyGPUCode refuses the schedule) or verify (VerifyGPUCode: a GPU
// limit). Its Sample.Trace is then the sketch with the decisions drawn (no
// EnterPostproc): checked statically (kernels/verdict, with Sample.Seed as
// the replay seed) it gives the same rejection, which is how the sweep
// (Sweep) checks the sampler against the verdict.
package sample

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// verifyName is the postprocessor whose rejection is phase verify, as in
// kernels/verdict.
const verifyName = "VerifyGPUCode"

// Options configure a Space.
type Options struct {
	// Rules are the schedule rules of the design space; nil means
	// space.CUDARules().
	Rules []space.Rule
	// Postprocs are the postprocessors run after EnterPostproc; nil means
	// postproc.CUDA(). As in kernels/verdict, those named VerifyGPUCode
	// run after the others.
	Postprocs []postproc.Postproc
	// WellFormed verifies the function after every instruction (slow; for
	// tests and debugging): trace.Options.Check.
	WellFormed bool
}

// Space is the design space of one workload, generated once, from which
// samples are drawn. It is not modified by drawing: Draw may be called
// from several goroutines at once.
type Space struct {
	f        *ir.PrimFunc
	sketches []*trace.Trace
	ps       []postproc.Postproc // VerifyGPUCode last
	opts     Options
}

// NewSpace generates the design space of f with seed (the seed of the
// rules' own samples, whose decisions are then dropped). f is not
// modified and must not be modified while the space is in use.
func NewSpace(ctx context.Context, f *ir.PrimFunc, seed int64, opts Options) (*Space, error) {
	rules := opts.Rules
	if rules == nil {
		rules = space.CUDARules()
	}
	sessions, err := space.Generate(ctx, f, rules, trace.Options{Seed: seed, Check: opts.WellFormed})
	if err != nil {
		return nil, fmt.Errorf("sample: design space of %s: %w", f.Name, err)
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("sample: design space of %s has no sketch", f.Name)
	}
	sp := &Space{f: f, opts: opts}
	for _, s := range sessions {
		sp.sketches = append(sp.sketches, &trace.Trace{Insts: s.Trace().Clone().Insts})
	}
	ps := opts.Postprocs
	if ps == nil {
		ps = postproc.CUDA()
	}
	var verify []postproc.Postproc
	for _, p := range ps {
		if p.Name() == verifyName {
			verify = append(verify, p)
		} else {
			sp.ps = append(sp.ps, p)
		}
	}
	sp.ps = append(sp.ps, verify...)
	return sp, nil
}

// Func returns the workload's unscheduled function.
func (sp *Space) Func() *ir.PrimFunc { return sp.f }

// Sketches returns the sketches' traces, without decisions, in the order
// space.Generate returns them. They must not be modified.
func (sp *Space) Sketches() []*trace.Trace { return sp.sketches }

// Sample is one draw.
type Sample struct {
	// Index is the draw's index (0 to count-1).
	Index int
	// Sketch is the index of the sketch drawn, in Space.Sketches.
	Sketch int
	// Seed is the seed of the replay's fresh samples, derived from the
	// draw's seed and index.
	Seed int64
	// Trace is the full trace (sketch with the decisions drawn,
	// EnterPostproc, the postprocessors' instructions) when the draw is
	// accepted; when it is rejected, the sketch with the decisions drawn
	// so far, without EnterPostproc.
	Trace *trace.Trace
	// Rejection says why the draw was rejected; nil when it was accepted.
	Rejection *Rejection
}

// OK reports whether the draw was accepted.
func (s *Sample) OK() bool { return s.Rejection == nil }

// Rejection is why a draw failed.
type Rejection struct {
	// Phase is replay, postproc or verify (kernels/verdict's phases).
	Phase verdict.Phase
	// Postproc names the postprocessor that refused the schedule ("" in
	// phase replay).
	Postproc string
	// Inst and Kind are the instruction at fault (-1 and "" when none is).
	Inst int
	Kind string
	// Err is the error, as the static verdict words it.
	Err error
}

func (r *Rejection) Error() string { return r.Err.Error() }

func (r *Rejection) Unwrap() error { return r.Err }

// Draw returns draw index of seed. The error is the context's, when it is
// done before or during the draw; a draw that fails is a Sample with a
// Rejection, not an error.
func (sp *Space) Draw(ctx context.Context, seed int64, index int) (*Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sample: draw %d interrupted: %w", index, err)
	}
	src := rand.NewPCG(uint64(seed), uint64(index))
	k := int(src.Uint64() % uint64(len(sp.sketches)))
	out := &Sample{Index: index, Sketch: k, Seed: int64(src.Uint64())}
	sketch := sp.sketches[k]
	s, err := trace.Replay(ctx, sp.f, sketch, trace.Options{Seed: out.Seed, Check: sp.opts.WellFormed})
	if err == nil {
		err = s.Apply(trace.Inst{Kind: "EnterPostproc"}, nil)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("sample: draw %d interrupted: %w", index, cerr)
		}
		v := verdict.Fail(verdict.PhaseReplay, err)
		out.Rejection = &Rejection{Phase: verdict.PhaseReplay, Inst: v.Inst, Kind: v.Kind, Err: err}
		out.Trace = &trace.Trace{Insts: slices.Clone(sketch.Insts), Decisions: slices.Clone(s.Trace().Decisions)}
		return out, nil
	}
	for i, p := range sp.ps {
		if err := postproc.Run(ctx, s, sp.ps[i:i+1]); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, fmt.Errorf("sample: draw %d interrupted: %w", index, cerr)
			}
			phase := verdict.PhasePostproc
			if p.Name() == verifyName {
				phase = verdict.PhaseVerify
			}
			err = fmt.Errorf("kernels: %w", err)
			v := verdict.Fail(phase, err)
			out.Rejection = &Rejection{Phase: phase, Postproc: p.Name(), Inst: v.Inst, Kind: v.Kind, Err: err}
			out.Trace = s.Trace().WithoutPostproc()
			return out, nil
		}
	}
	out.Trace = s.Trace()
	return out, nil
}

// DrawN returns draws 0 to count-1 of seed, in order.
func (sp *Space) DrawN(ctx context.Context, seed int64, count int) ([]*Sample, error) {
	if count < 0 {
		return nil, fmt.Errorf("sample: count %d is negative", count)
	}
	out := make([]*Sample, 0, count)
	for i := range count {
		s, err := sp.Draw(ctx, seed, i)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Draw generates the design space of f (with seed) and returns its draws
// 0 to count-1 of seed: NewSpace then Space.DrawN.
func Draw(ctx context.Context, f *ir.PrimFunc, seed int64, count int, opts Options) ([]*Sample, error) {
	if count < 0 {
		return nil, fmt.Errorf("sample: count %d is negative", count)
	}
	sp, err := NewSpace(ctx, f, seed, opts)
	if err != nil {
		return nil, err
	}
	return sp.DrawN(ctx, seed, count)
}

// DrawSpec is Draw on the function of a workload spec.
func DrawSpec(ctx context.Context, spec *workload.Spec, seed int64, count int, opts Options) ([]*Sample, error) {
	f, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	return Draw(ctx, f, seed, count, opts)
}
