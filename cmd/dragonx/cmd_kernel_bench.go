package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"dragonx/kernels/cudabench"
	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
	"dragonx/kernels/ptxas"
	"dragonx/kernels/verdict"
)

const kernelBenchHelp = `kernel bench gives the latency of a schedule on a GPU target.

  kernel bench -workload W.json -trace T.json -target h100-model|h200-model|cuda
               [-calibration FILE] [-ptxas] [-noise SIGMA -seed N] [-json]

The workload is selected as for kernel show (-workload FILE, -spec JSON, or
-family F -shape I); -trace names the trace (a sketch or a full trace, as
kernel apply -check static takes it). The schedule is checked statically,
lowered to GPU kernels, and costed by the target:

  h100-model, h200-model  the analytic model of an H100 SXM5 or H200 SXM
                          (docs/gpu-model.md): an estimate, labelled
                          "model:h100" or "model:h200", never a measurement;
                          -calibration FILE loads fitted constants (kernel
                          calibrate), -ptxas costs the kernels with the
                          registers, shared memory and spills nvcc's ptxas
                          reports for the generated CUDA (needs nvcc; the
                          label becomes "model:h100+ptxas"), -noise SIGMA
                          multiplies the estimate
                          by a lognormal factor drawn from -seed (a stand-in
                          for run-to-run spread)
  cuda                    timing of the generated CUDA on this machine's GPU
                          (labelled "measured", kernels/cudabench: nvcc, a
                          host program, 10 warm-up runs, the median of 100
                          timed with CUDA events); the outputs are checked
                          against the workload's references first. Without
                          an NVIDIA GPU or nvcc it fails and says why

The output is the program's latency with its source, then one line per
kernel: launch geometry, registers (estimated, or ptxas's), blocks per SM, occupancy,
waves, and the compute, memory, shared-memory and barrier times of the
model, and which bounds it. -json prints one object:
  {"latency_s":...,"latency_source":"model:h100","device":"NVIDIA H100 SXM5","roofline_s":...,"kernels":[...]}
A schedule that fails the static check or that the device cannot launch
exits with status 1.
`

// latencySource returns the latency source of a -target name, with the
// calibration file (model targets only), the model's noise, and ptxas's
// registers and shared memory in place of the model's estimates (usePtxas:
// nvcc must be installed). The measured source ("cuda") needs the workload
// too: withWorkload gives it.
func latencySource(ctx context.Context, target, calibration string, noise float64, seed uint64, usePtxas bool) (latency.Source, error) {
	switch {
	case target == "cuda" && (usePtxas || calibration != ""):
		return nil, usagef("-calibration and -ptxas are for the model targets (%s), not cuda", strings.Join(gpumodel.Targets(), ", "))
	case target == "cuda":
		// The workload is set once it is built (withWorkload).
		return &cudabench.Source{}, nil
	case usePtxas && !slices.Contains(gpumodel.Targets(), target):
		return nil, usagef("-ptxas needs a model -target (%s)", strings.Join(gpumodel.Targets(), ", "))
	case slices.Contains(gpumodel.Targets(), target):
		opts := gpumodel.Options{Noise: noise, Seed: seed}
		if usePtxas {
			c, err := ptxas.New(ctx, ptxas.Options{})
			if err != nil {
				return nil, withCode(exitFailure, fmt.Errorf("-ptxas: %w", err))
			}
			opts.Resources = gpumodel.Ptxas(c)
		}
		if calibration != "" {
			c, err := gpumodel.LoadCalibration(calibration)
			if err != nil {
				return nil, withCode(exitFailure, err)
			}
			opts.Calibration = c
		}
		m, err := gpumodel.New(target, opts)
		if err != nil {
			return nil, usagef("%v", err)
		}
		return m, nil
	}
	return nil, usagef("-target %q: want %s or cuda", target, strings.Join(gpumodel.Targets(), ", "))
}

// withWorkload hands f to a source that checks the programs it times
// against the workload (cudabench's); other sources are left as they are.
func withWorkload(src latency.Source, f *ir.PrimFunc) {
	if cs, ok := src.(*cudabench.Source); ok {
		cs.Workload = f
	}
}

// benchJSON is kernel bench -json's object.
type benchJSON struct {
	LatencyS      float64           `json:"latency_s"`
	LatencySource string            `json:"latency_source"`
	Device        string            `json:"device,omitempty"`
	RooflineS     float64           `json:"roofline_s,omitempty"`
	Kernels       []benchKernelJSON `json:"kernels,omitempty"`
	Params        *gpumodel.Params  `json:"params,omitempty"`
}

type benchKernelJSON struct {
	Name           string   `json:"name"`
	Grid           [3]int64 `json:"grid"`
	Block          [3]int64 `json:"block"`
	Registers      int64    `json:"registers"`
	Spilled        int64    `json:"spilled,omitempty"`
	BlocksPerSM    int64    `json:"blocks_per_sm"`
	Occupancy      float64  `json:"occupancy"`
	Waves          int64    `json:"waves"`
	WaveEfficiency float64  `json:"wave_efficiency"`
	ComputeS       float64  `json:"compute_s"`
	MemoryS        float64  `json:"memory_s"`
	LocalS         float64  `json:"local_s,omitempty"` // local memory: arrays not in registers, spills
	SharedS        float64  `json:"shared_s"`
	SyncS          float64  `json:"sync_s"`
	LaunchS        float64  `json:"launch_s"`
	Seconds        float64  `json:"latency_s"`
	Bound          string   `json:"bound"`
}

func runKernelBench(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var tracePath, target, calibration string
	var asJSON bool
	var noise float64
	var seed uint64
	var usePtxas bool
	fs := newFlagSet("kernel bench")
	w.register(fs)
	fs.StringVar(&tracePath, "trace", "", "trace `FILE` (TVM's JSON; - for standard input)")
	fs.StringVar(&target, "target", "", "`TARGET`: h100-model, h200-model (the analytic model) or cuda (a GPU)")
	fs.StringVar(&calibration, "calibration", "", "calibration `FILE` of the model's free constants (kernel calibrate -o)")
	fs.Float64Var(&noise, "noise", 0, "σ of the model's lognormal noise (0: none)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the model's noise")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&usePtxas, "ptxas", false, "cost the kernels with the registers, shared memory and spills ptxas reports (needs nvcc; labels the estimate model:...+ptxas)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		if he, ok := err.(*helpError); ok {
			he.flags = kernelBenchHelp + "\n" + he.flags
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("kernel bench takes no arguments besides flags, got %q", pos[0])
	}
	if tracePath == "" || target == "" {
		return usagef("kernel bench needs -trace FILE and -target TARGET")
	}
	if tracePath == "-" && w.file == "-" {
		return usagef("-workload and -trace cannot both read standard input")
	}
	src, err := latencySource(ctx, target, calibration, noise, seed, usePtxas)
	if err != nil {
		return err
	}
	spec, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := spec.Build()
	if err != nil {
		return withCode(exitFailure, err)
	}
	withWorkload(src, f)
	tr, err := readTrace(e, tracePath)
	if err != nil {
		return withCode(exitFailure, err)
	}
	v := verdict.CheckTrace(ctx, f, tr, verdict.Options{})
	if !v.OK {
		return withCode(exitFailure, fmt.Errorf("kernel bench: the schedule fails the static check (phase %s): %s", v.Phase, v.Error))
	}
	p, err := lower.Lower(ctx, v.Func())
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("kernel bench: %w", err))
	}
	out, err := benchProgram(ctx, src, p)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("kernel bench: %w", err))
	}
	if asJSON {
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(append(b, '\n'))
		return err
	}
	what := "measured"
	if strings.HasPrefix(out.LatencySource, latency.ModelPrefix) {
		what = "an estimate of the analytic model, not a measurement"
	}
	fmt.Fprintf(e.stdout, "latency %.4g s  (%s, %s: %s)\n", out.LatencyS, out.LatencySource, out.Device, what)
	if out.RooflineS > 0 {
		fmt.Fprintf(e.stdout, "FP32 roofline %.4g s\n", out.RooflineS)
	}
	for _, k := range out.Kernels {
		local := ""
		if k.LocalS > 0 || k.Spilled > 0 {
			local = fmt.Sprintf(", local memory %.3g s (%d registers spilled)", k.LocalS, k.Spilled)
		}
		fmt.Fprintf(e.stdout, "kernel %s: grid(%d, %d, %d) block(%d, %d, %d), %d registers, %d blocks/SM, occupancy %.2f, %d wave(s) at %.2f: compute %.3g s, memory %.3g s%s, shared %.3g s, barriers %.3g s, launch %.3g s: %.4g s, %s-bound\n",
			k.Name, k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2], k.Registers, k.BlocksPerSM, k.Occupancy, k.Waves, k.WaveEfficiency,
			k.ComputeS, k.MemoryS, local, k.SharedS, k.SyncS, k.LaunchS, k.Seconds, k.Bound)
	}
	return nil
}

// benchProgram costs p on src: with the model's parts when src is the
// analytic model.
func benchProgram(ctx context.Context, src latency.Source, p *lower.Program) (*benchJSON, error) {
	est, err := src.Latency(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &benchJSON{LatencyS: est.Seconds, LatencySource: est.Source, Device: est.Device}
	m, ok := src.(*gpumodel.Model)
	if !ok {
		return out, nil
	}
	r, err := m.Report(ctx, p)
	if err != nil {
		return nil, err
	}
	out.RooflineS = r.RooflineSeconds
	for i, k := range r.Kernels {
		ka := p.Kernels[i]
		out.Kernels = append(out.Kernels, benchKernelJSON{
			Name: k.Name, Grid: ka.Grid, Block: ka.Block, Registers: k.Registers, Spilled: k.Spilled,
			BlocksPerSM: k.BlocksPerSM, Occupancy: k.Occupancy, Waves: k.Waves, WaveEfficiency: k.WaveEfficiency,
			ComputeS: k.Compute, MemoryS: k.Memory, LocalS: k.Local, SharedS: k.Shared, SyncS: k.Sync, LaunchS: k.Launch,
			Seconds: k.Seconds, Bound: k.Bound,
		})
	}
	params := m.Params()
	out.Params = &params
	return out, nil
}
