package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"dragonx/kernels/numeric"
	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
)

// maxTraceBytes bounds the trace file read; the largest TVM traces are a
// few tens of kilobytes.
const maxTraceBytes = 16 << 20

const kernelApplyHelp = `kernel apply replays a MetaSchedule trace on a workload and prints the
scheduled function as TVMScript.

  kernel apply -workload W.json -trace T.json [-check static|numeric] [-json] [-repair] [-seed N] [-wellformed]
               [-rtol R] [-atol A] [-numeric-seed N] [-numeric-cache DIR]
               [-target h100-model|h200-model [-calibration FILE] [-ptxas]]

The workload is selected as for kernel show (-workload FILE, -spec JSON, or
-family F -shape I); -trace names the trace (TVM's JSON, [insts, decisions];
- reads standard input).

The replay is strict: a decision that does not fit (tile factors whose product
is not the loop extent, a categorical index out of range), a reference to an
undefined random variable, a wrong number or type of inputs, or a primitive
whose legality check fails stops it with an error naming the instruction index,
its kind and the reason. -repair turns on TVM's repairing replay instead: tile
and compute-location decisions that no longer fit are repaired, and each repair
is reported (on standard error, or in the verdict). Sampling instructions
without a decision are sampled afresh from -seed.

Without -check the whole trace is replayed literally, a postprocessors' part
included. -check static runs the static check of search and RL instead: a
sketch (no EnterPostproc) is replayed, EnterPostproc appended and TVM's CUDA
postprocessors run (DisallowDynamicLoop, RewriteCooperativeFetch,
RewriteUnboundBlock, RewriteParallelVectorizeUnroll, RewriteReductionBlock),
then VerifyGPUCode checks the GPU limits (48 KB of shared memory per block,
1024 threads, 8 vthreads, 16-byte vectors, the thread-extent ranges; and
CUDA's launch limits, which TVM does not check: a grid of at most 2^31-1 x
65535 x 65535 blocks, blocks of at most 1024 x 1024 x 64 threads, 512 KiB
of local memory per thread). A full
trace (with EnterPostproc) is replayed up to EnterPostproc, the
postprocessors run, and what they emit must be the recorded rest of the
trace, else the check fails at the first instruction that differs.

-check numeric runs the static check, then the numerical gate
(docs/numeric-gate.md): the scheduled function is lowered to GPU kernels,
written as C that serialises the threads of a block per barrier phase, with
shared and local memory poisoned with NaN and every access bounds-checked,
compiled with the system C compiler (cc) and run on seeded random inputs
(-numeric-seed) with the threads of each phase in ascending and in
descending order; both runs must agree bit for bit and match a float64
reference of the workload within -rtol and -atol (default 1e-3, 2e-3; 0
means the default). Every program is bounded: one that would run too many
steps or allocate too much, or a workload whose buffers exceed 256 MiB, is
refused before compiling (numeric_kind resources); a run past its CPU-time or
memory limit fails with numeric_kind timeout or resources.
Compiled programs are cached by content in -numeric-cache (default
$XDG_CACHE_HOME/dragonx/numeric or ~/.cache/dragonx/numeric).

-json prints a one-line verdict instead of the function:
  {"ok":true,"phase":"replay","inst":-1,"error":"","ir_hash":"...",...}
phase is the last phase reached (workload, parse, replay, and with -check
static postproc, verify, with -check numeric numeric; with -target
latency), inst the index of the instruction at fault (-1 if none), ir_hash
the structural hash of the scheduled function, postproc the postprocessor
that rejected the schedule. The numeric phase adds max_abs_err, max_rel_err
and compared (the number of output elements compared), and numeric_kind on
a failure (race, nan, out-of-bounds, mismatch, lower, resources, timeout, ...).
-wellformed verifies the function after every instruction (slower).

-target adds the latency phase after the check (-check static when -check is
not given): the scheduled function is lowered and its latency estimated by
the analytic GPU model of the target, h100-model or h200-model
(docs/gpu-model.md), with the free constants of -calibration FILE (written by
kernel calibrate) when given; -ptxas costs the kernels with the registers,
shared memory and spills that nvcc's ptxas reports for the generated CUDA
instead of the model's estimates (needs nvcc; latency_source becomes
"model:h100+ptxas"). The verdict's phase is then latency and it adds
  "latency_s":1.2e-05,"latency_source":"model:h100","latency_device":"NVIDIA H100 SXM5"
latency_source says which source produced the figure: "model:..." is an
estimate of the model, never a measurement. Without -json the latency is
printed on standard error after the function. A schedule the device cannot
launch (too many registers or threads for an SM) fails in phase latency.
-target cuda times the generated CUDA on this machine's GPU (kernels/cudabench:
latency_source "measured"); without a GPU or nvcc the verdict fails in
phase latency and says why.

A schedule that fails (a bad workload, trace, replay, postprocessor, GPU
limit or numerical gate) exits with status 1, after printing its verdict
with -json.
`

func runKernelApply(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var tracePath, check string
	var asJSON, repair, wellFormed bool
	var seed int64
	var nopts numeric.Options
	fs := newFlagSet("kernel apply")
	w.register(fs)
	fs.StringVar(&tracePath, "trace", "", "trace `FILE` (TVM's JSON; - for standard input)")
	fs.BoolVar(&asJSON, "json", false, "print a one-line JSON verdict instead of the function")
	fs.BoolVar(&repair, "repair", false, "repair decisions that no longer fit, as TVM's replay does, and report each")
	fs.Int64Var(&seed, "seed", 1, "seed of fresh samples for sampling instructions without a decision")
	fs.StringVar(&check, "check", "", "`LEVEL` of the check: static (replay, postprocessors, GPU limits) or numeric (static, then the numerical gate); without it, replay only")
	fs.Float64Var(&nopts.RTol, "rtol", numeric.DefaultRTol, "relative tolerance of -check numeric")
	fs.Float64Var(&nopts.ATol, "atol", numeric.DefaultATol, "absolute tolerance of -check numeric")
	fs.Uint64Var(&nopts.Seed, "numeric-seed", 0, "seed of the random inputs of -check numeric")
	fs.StringVar(&nopts.CacheDir, "numeric-cache", "", "`DIR` of compiled programs for -check numeric (default: the user cache directory's dragonx/numeric)")
	fs.BoolVar(&wellFormed, "wellformed", false, "verify the function after every instruction")
	var target, calibration string
	var usePtxas bool
	fs.StringVar(&target, "target", "", "`TARGET` of the latency phase: h100-model or h200-model (the analytic GPU model)")
	fs.StringVar(&calibration, "calibration", "", "calibration `FILE` of the model's free constants (kernel calibrate -o)")
	fs.BoolVar(&usePtxas, "ptxas", false, "with -target: the registers, shared memory and spills ptxas reports instead of the model's estimates (needs nvcc)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelApplyHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel apply takes no arguments besides flags, got %q", pos[0])
	}
	if tracePath == "" {
		return usagef("kernel apply needs -trace FILE")
	}
	opts := verdict.Options{Until: verdict.PhaseReplay, Repair: repair, Seed: seed, WellFormed: wellFormed}
	switch check {
	case "":
	case "static":
		opts.Until = verdict.PhaseVerify
	case "numeric":
		if nopts.RTol < 0 || nopts.ATol < 0 {
			return usagef("-rtol %g, -atol %g: tolerances cannot be negative", nopts.RTol, nopts.ATol)
		}
		opts.Until = verdict.PhaseNumeric
		opts.Numeric = nopts
	default:
		return usagef("-check %q: want static or numeric", check)
	}
	if target != "" {
		src, err := latencySource(ctx, target, calibration, 0, 0, usePtxas)
		if err != nil {
			return err
		}
		opts.Latency = src
		if opts.Until == verdict.PhaseReplay {
			opts.Until = verdict.PhaseLatency
		}
	} else if calibration != "" || usePtxas {
		return usagef("-calibration and -ptxas need -target")
	}
	if tracePath == "-" && w.file == "-" {
		return usagef("-workload and -trace cannot both read standard input")
	}

	fail := func(v *verdict.Verdict, err error) error {
		if asJSON {
			e.stdout.Write(append(v.JSON(), '\n'))
			return withCode(exitFailure, nil)
		}
		return err
	}
	spec, err := w.load(e)
	if err != nil {
		if _, usage := err.(*usageError); usage {
			return err
		}
		return fail(verdict.Fail(verdict.PhaseWorkload, err), err)
	}
	f, err := spec.Build()
	if err != nil {
		return fail(verdict.Fail(verdict.PhaseWorkload, err), err)
	}
	if opts.Latency != nil {
		withWorkload(opts.Latency, f)
	}
	tr, err := readTrace(e, tracePath)
	if err != nil {
		return fail(verdict.Fail(verdict.PhaseParse, err), err)
	}
	v := verdict.CheckTrace(ctx, f, tr, opts)
	if asJSON {
		e.stdout.Write(append(v.JSON(), '\n'))
		if !v.OK {
			return withCode(exitFailure, nil)
		}
		return nil
	}
	for _, r := range v.Repairs {
		fmt.Fprintln(e.stderr, "repaired:", strings.TrimPrefix(r, "kernels: "))
	}
	if !v.OK {
		return errors.New(v.Error)
	}
	if _, err = io.WriteString(e.stdout, v.Func().Script()); err != nil {
		return err
	}
	if v.LatencyS != nil {
		fmt.Fprintf(e.stderr, "latency: %.4g s (%s, %s)\n", *v.LatencyS, v.LatencySource, v.LatencyDevice)
	}
	return nil
}

// readTrace reads and parses a trace file (- for standard input).
func readTrace(e *env, path string) (*trace.Trace, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(e.stdin, maxTraceBytes+1))
	} else {
		data, err = readLimited(path, maxTraceBytes+1)
	}
	if err == nil && len(data) > maxTraceBytes {
		err = fmt.Errorf("%s: larger than %d bytes", path, maxTraceBytes)
	}
	if err != nil {
		return nil, err
	}
	tr, err := trace.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}
