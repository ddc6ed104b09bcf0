package main

import (
	"context"
	"fmt"

	"dragonx/kernels/sample"
)

const kernelSampleHelp = `kernel sample draws traces from a workload's CUDA design space, as TVM's
evolutionary search draws its initial population.

  kernel sample -workload W.json [-seed S] [-count K] [-json] [-wellformed]

The workload is selected as for kernel show (-workload FILE, -spec JSON, or
-family F -shape I). The design space (TVM's CUDA schedule rules, as far as
they are written) is generated once; each of the K draws picks a sketch at
random, replays it with fresh decisions, appends EnterPostproc and runs the
CUDA postprocessors (as kernel apply -check static). Draw i depends on the
seed and i only: the same seed gives the same traces byte for byte.

A draw is accepted (its full trace: the sketch with its decisions,
EnterPostproc and the postprocessors' instructions, what a tuning database
stores) or rejected: by the replay (phase replay), a postprocessor (phase
postproc) or VerifyGPUCode (phase verify, a GPU limit exceeded).

-json prints one accepted trace per line, in TVM's JSON, and nothing else on
standard output: every line can be given to kernel apply -trace (and passes
-check static). Rejected draws are not printed there, so fewer than K lines
come out when draws are rejected; standard error has one line per rejected
draw and then the counts:
  draw 3 (sketch 0, seed 81...) rejected: phase verify: kernels: postproc VerifyGPUCode: ...
  8 draws: 5 accepted, 3 rejected

Without -json, one line per draw on standard output, tab-separated: the
index, "sketch N", "accepted" or "rejected (seed SEED): phase PHASE: ERROR",
and the trace in TVM's JSON. A rejected draw's trace is the sketch with the
decisions it drew, without EnterPostproc: kernel apply -check static -seed
SEED on it gives the same rejection.

Rejected draws are not a failure: the exit status is 0 unless the workload or
its design space cannot be built.
`

func runKernelSample(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var asJSON, wellFormed bool
	var seed int64
	var count int
	fs := newFlagSet("kernel sample")
	w.register(fs)
	fs.Int64Var(&seed, "seed", 1, "`SEED` of the design space and the draws")
	fs.IntVar(&count, "count", 1, "number of draws `K`")
	fs.BoolVar(&asJSON, "json", false, "print only the accepted traces, one JSON line each")
	fs.BoolVar(&wellFormed, "wellformed", false, "verify the function after every instruction (slow)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelSampleHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel sample takes no arguments besides flags, got %q", pos[0])
	}
	if count < 0 {
		return usagef("-count %d: want 0 or more draws", count)
	}
	spec, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := spec.Build()
	if err != nil {
		return err
	}
	sp, err := sample.NewSpace(ctx, f, seed, sample.Options{WellFormed: wellFormed})
	if err != nil {
		return err
	}
	accepted := 0
	for i := range count {
		s, err := sp.Draw(ctx, seed, i)
		if err != nil {
			return err
		}
		if s.OK() {
			accepted++
		}
		if asJSON {
			if s.OK() {
				if _, err := e.stdout.Write(append(s.Trace.AppendJSON(nil), '\n')); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(e.stderr, "draw %d (sketch %d, seed %d) rejected: %s\n", i, s.Sketch, s.Seed, rejection(s.Rejection))
			}
			continue
		}
		outcome := "accepted"
		if !s.OK() {
			outcome = fmt.Sprintf("rejected (seed %d): %s", s.Seed, rejection(s.Rejection))
		}
		line := fmt.Appendf(nil, "%d\tsketch %d\t%s\t", i, s.Sketch, outcome)
		line = append(s.Trace.AppendJSON(line), '\n')
		if _, err := e.stdout.Write(line); err != nil {
			return err
		}
	}
	if accepted < count {
		fmt.Fprintf(e.stderr, "%d draws: %d accepted, %d rejected\n", count, accepted, count-accepted)
	}
	return nil
}

// rejection says why a draw was rejected: its phase and the error (which
// names the postprocessor or the instruction at fault).
func rejection(r *sample.Rejection) string {
	return fmt.Sprintf("phase %s: %v", r.Phase, r)
}
