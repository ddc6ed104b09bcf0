// Package gatecases gives the tests and benchmarks of the numerical gate
// (kernels/cgen, kernels/numeric) scheduled and lowered programs: recorded
// traces and sketches of the repository's testdata, and sketches sampled
// from the CUDA design space for a shape and a seed.
package gatecases

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
	"dragonx/kernels/postproc"
	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// Case is a workload with a schedule of it.
type Case struct {
	// Spec is the workload spec (JSON).
	Spec []byte
	// Workload is the unscheduled function, Scheduled the function after
	// replay and the CUDA postprocessors, Program its lowering.
	Workload, Scheduled *ir.PrimFunc
	Program             *lower.Program
	// Trace is the full trace (postprocessors' part included).
	Trace *trace.Trace
}

// Dir loads a case folder (workload.json and trace.json): a recorded full
// trace is replayed whole, a sketch gets EnterPostproc and the
// postprocessors of postproc.CUDA(), VerifyGPUCode included; then the
// function is lowered.
func Dir(ctx context.Context, dir string) (*Case, error) {
	spec, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		return nil, err
	}
	return Trace(ctx, dir, spec, data)
}

// Trace is Dir of a workload spec and a trace (TVM's JSON) given as
// bytes; name names the case in errors.
func Trace(ctx context.Context, name string, spec, traceJSON []byte) (*Case, error) {
	dir := name
	tr, err := trace.Parse([]byte(strings.TrimSpace(string(traceJSON))))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if tr.Postproc() >= 0 {
		s, err := trace.Replay(ctx, f, tr, trace.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: replay: %w", dir, err)
		}
		return finish(ctx, spec, f, s)
	}
	s, err := trace.Replay(ctx, f, tr, trace.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: replay: %w", dir, err)
	}
	return postprocess(ctx, spec, f, s)
}

// Sampled returns the first sketch of the CUDA design space of the
// workload spec whose decisions, sampled with seed, pass the
// postprocessors, trying seed, seed+1, ... (at most 64 seeds).
func Sampled(ctx context.Context, spec string, seed int64) (*Case, error) {
	f, err := workload.Build([]byte(spec))
	if err != nil {
		return nil, err
	}
	var last error
	for s := seed; s < seed+64; s++ {
		sk, err := space.Generate(ctx, f, space.CUDARules(), trace.Options{Seed: s})
		if err != nil {
			return nil, fmt.Errorf("%s: design space: %w", spec, err)
		}
		if len(sk) == 0 {
			return nil, fmt.Errorf("%s: empty design space", spec)
		}
		c, err := postprocess(ctx, []byte(spec), f, sk[0])
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("%s: no sampled sketch passes: %w", spec, last)
}

func postprocess(ctx context.Context, spec []byte, f *ir.PrimFunc, s *trace.Session) (*Case, error) {
	if err := s.Apply(trace.Inst{Kind: "EnterPostproc"}, nil); err != nil {
		return nil, err
	}
	if err := postproc.Run(ctx, s, postproc.CUDA()); err != nil {
		return nil, fmt.Errorf("postprocessors: %w", err)
	}
	return finish(ctx, spec, f, s)
}

func finish(ctx context.Context, spec []byte, f *ir.PrimFunc, s *trace.Session) (*Case, error) {
	p, err := lower.Lower(ctx, s.Func())
	if err != nil {
		return nil, err
	}
	return &Case{Spec: spec, Workload: f, Scheduled: s.Func(), Program: p, Trace: s.Trace()}, nil
}

// Workload builds the workload of a case folder (its workload.json).
func Workload(dir string) (*ir.PrimFunc, error) {
	spec, err := os.ReadFile(filepath.Join(dir, "workload.json"))
	if err != nil {
		return nil, err
	}
	return workload.Build(spec)
}
