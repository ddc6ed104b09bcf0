// Package gpumodel is an analytic performance model of NVIDIA H100 and
// H200 GPUs (targets h100-model, h200-model): it estimates the latency of
// a lowered program (kernels/lower) from its kernel AST alone, the recipe
// of metaschedule-reference.md §6, and is a latency.Source whose figures
// are labelled "model:h100" or "model:h200", never "measured".
//
// For each kernel, Analyze reads, independent of the device: the launch
// geometry; per thread, the FP instructions (an x = x + a*b is one FMA),
// FLOPs, transcendental calls, load/store instructions (a vector access
// is one), iterations of loops that are not unrolled (a loop is unrolled
// when it is marked unroll, vectorize or vthread, or when its subtree's
// steps are within the auto_unroll_max_step above it) and barriers; for
// every global access, the 32-byte sectors a warp's request touches (from
// the addresses of warp 0's lanes: coalescing); for every shared access,
// the wavefronts (the most distinct words a bank serves: bank conflicts);
// the independent accumulators per thread (ILP: unrolled loops the
// update's index uses) and the footprint of the global buffers.
//
// Model.Cost then costs each kernel on a device with the free constants
// (Params): registers ≈ RegBase + local words (arrays only unrolled
// loops index) + staged operands (unrolled loads); occupancy
// (blocks per SM limited by threads, warps, registers and shared memory;
// none fits: the launch fails); waves, the busiest SM running ⌈G/SMs⌉
// blocks; the compute time (that SM's warp instructions over its
// schedulers' issue rate, scaled by the issue efficiency min(1, resident
// warps per scheduler × ILP / IssueHide); spills slow it); the memory
// time (DRAM bytes: the
// footprint when it fits in L2, more when it does not; L2 bytes: the
// sectors; both over the bandwidths, scaled by Little's law on the bytes
// in flight); the shared-memory time (the busiest SM's wavefronts at one
// per clock); barriers; launch overhead. A kernel's time is launch + the largest
// of compute, memory and shared + Overlap × the two others + barriers; a
// program's is the sum over its kernels. Optional noise multiplies it by
// a lognormal factor drawn from the seed and the program (deterministic).
//
// docs/gpu-model.md documents the model, its constants' sources and its
// limits.
package gpumodel

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
)

// Version is the model's version: bump it when the same program and
// constants give different estimates, and with it the version of every
// stage kind that calls the model (harvest, sft, rl, bench), so that the
// cache does not serve latencies of the old model. 2: issue 28 (vthread,
// local memory, nvcc's unrolling, overlap by residency, register capping,
// FP32 lanes, the device table as data).
const Version = "2"

// Options configure a Model.
type Options struct {
	// Params are the free constants; nil means DefaultParams (or a
	// calibration's: see Calibration).
	Params *Params
	// Calibration, when set, gives the constants (it overrides Params);
	// its target must be the model's, or "".
	Calibration *Calibration
	// Noise is the σ of a lognormal measurement noise (0: none; ~0.02
	// mimics repeated runs on a GPU); Seed seeds it.
	Noise float64
	Seed  uint64
	// Resources, when set, gives each kernel's registers, shared memory
	// and spills (ptxas's: Ptxas) in place of the model's estimates; the
	// latency's label then says so ("model:h100+ptxas").
	Resources ResourceSource
}

// Model is the analytic model of one device. It is immutable: safe for
// concurrent use.
type Model struct {
	dev        Device
	p          Params
	noise      float64
	seed       uint64
	calibrated bool
	res        ResourceSource
}

// New returns the model of a target ("h100-model", "h200-model").
func New(target string, opts Options) (*Model, error) {
	dev, err := LookupDevice(target)
	if err != nil {
		return nil, err
	}
	m := &Model{dev: dev, p: DefaultParams(), noise: opts.Noise, seed: opts.Seed, res: opts.Resources}
	if opts.Params != nil {
		m.p = *opts.Params
	}
	if c := opts.Calibration; c != nil {
		if c.Target != "" && c.Target != target {
			return nil, fmt.Errorf("gpumodel: calibration is for %s, not %s", c.Target, target)
		}
		m.p, m.calibrated = c.Params, true
	}
	if err := m.p.Validate(); err != nil {
		return nil, err
	}
	if opts.Noise < 0 || math.IsNaN(opts.Noise) || opts.Noise > 1 {
		return nil, fmt.Errorf("gpumodel: noise σ %g: want [0, 1]", opts.Noise)
	}
	return m, nil
}

// Name returns the model's target name.
func (m *Model) Name() string { return m.dev.Target }

// Label returns the latency source label: "model:h100", or
// "model:h100+ptxas" with ptxas's resources.
func (m *Model) Label() string {
	if m.res != nil {
		return latency.ModelPrefix + m.dev.Label + "+" + m.res.Name()
	}
	return latency.ModelPrefix + m.dev.Label
}

// Device returns the device.
func (m *Model) Device() Device { return m.dev }

// Params returns the free constants in use.
func (m *Model) Params() Params { return m.p }

// WithParams returns the same model with other constants (for a
// calibration's search).
func (m *Model) WithParams(p Params) *Model {
	c := *m
	c.p = p
	return &c
}

// Latency estimates the latency of one run of p (latency.Source).
func (m *Model) Latency(ctx context.Context, p *lower.Program) (latency.Estimate, error) {
	a, err := Analyze(ctx, p)
	if err != nil {
		return latency.Estimate{}, err
	}
	var rs []Resources
	if m.res != nil {
		if rs, err = m.resources(ctx, p); err != nil {
			return latency.Estimate{}, err
		}
	}
	r, err := m.CostWith(a, rs)
	if err != nil {
		return latency.Estimate{}, err
	}
	return latency.Estimate{Seconds: r.Seconds, Source: m.Label(), Device: m.dev.Name}, nil
}

// Report returns the estimate of p with its parts (with the resource
// source's figures when the model has one).
func (m *Model) Report(ctx context.Context, p *lower.Program) (*Report, error) {
	a, err := Analyze(ctx, p)
	if err != nil {
		return nil, err
	}
	var rs []Resources
	if m.res != nil {
		if rs, err = m.resources(ctx, p); err != nil {
			return nil, err
		}
	}
	return m.CostWith(a, rs)
}

// Report is a program's estimate with its parts.
type Report struct {
	Seconds float64
	// FLOPs of the whole program; RooflineSeconds the time at the FP32
	// peak.
	FLOPs, RooflineSeconds float64
	Kernels                []KernelReport
}

// KernelReport is one kernel's estimate.
type KernelReport struct {
	Name string
	// Registers per thread (estimated), Spilled the registers beyond the
	// limit; BlocksPerSM resident; Occupancy the resident warps over the
	// SM's maximum; Waves and WaveEfficiency the tail effect.
	Registers, Spilled, BlocksPerSM int64
	Occupancy                       float64
	Waves                           int64
	WaveEfficiency                  float64
	// IssueEfficiency is min(1, warps per scheduler × ILP / IssueHide);
	// MemEfficiency the fraction of the bandwidth the bytes in flight can
	// sustain.
	IssueEfficiency, MemEfficiency float64
	// DRAMBytes, L2Bytes: modelled traffic.
	DRAMBytes, L2Bytes float64
	// The times: Compute, Memory (global), Local (local memory: arrays
	// that are not in registers, spills), Shared, Sync, Launch; Seconds
	// their combination; Bound the largest of compute, memory (global and
	// local), shared.
	Compute, Memory, Local, Shared, Sync, Launch, Seconds float64
	Bound                                                 string
}

// Cost costs an analysis on the model's device. It fails when a kernel
// cannot launch on the device (threads per block, shared memory, vector
// width, or no block fits on an SM).
func (m *Model) Cost(a *Analysis) (*Report, error) { return m.CostWith(a, nil) }

// CostWith is Cost with the kernels' resources as a compiler reports them
// (nil: the model's estimates).
func (m *Model) CostWith(a *Analysis, rs []Resources) (*Report, error) {
	if rs != nil && len(rs) != len(a.Kernels) {
		return nil, fmt.Errorf("gpumodel: %d kernel resources for %d kernels", len(rs), len(a.Kernels))
	}
	r := &Report{Kernels: make([]KernelReport, 0, len(a.Kernels))}
	for i := range a.Kernels {
		k := &a.Kernels[i]
		var res *Resources
		if rs != nil {
			res = &rs[i]
		}
		kr, err := m.kernel(k, res)
		if err != nil {
			return nil, fmt.Errorf("gpumodel: %s: kernel %s: %w", m.dev.Target, k.Name, err)
		}
		r.Kernels = append(r.Kernels, kr)
		r.Seconds += kr.Seconds
		r.FLOPs += k.FLOPs * float64(k.Threads*k.Blocks)
	}
	r.RooflineSeconds = r.FLOPs / m.dev.PeakFLOPS()
	if m.noise > 0 {
		r.Seconds *= m.noiseFactor(a, r.Seconds)
	}
	return r, nil
}

// noiseFactor draws a lognormal(0, σ) factor from the seed and the
// noiseless estimate (a stand-in for the program: the same program gives
// the same figure).
func (m *Model) noiseFactor(a *Analysis, t float64) float64 {
	rng := rand.New(rand.NewPCG(m.seed, math.Float64bits(t)^uint64(len(a.Kernels))))
	return math.Exp(m.noise * rng.NormFloat64())
}

func (m *Model) kernel(k *KernelAnalysis, res *Resources) (KernelReport, error) {
	d, p := &m.dev, &m.p
	var kr KernelReport
	kr.Name = k.Name
	if k.Threads > d.MaxThreadsPerBlock {
		return kr, fmt.Errorf("%d threads per block, more than the device's %d", k.Threads, d.MaxThreadsPerBlock)
	}
	if k.Grid[0] > d.MaxGrid[0] || k.Grid[1] > d.MaxGrid[1] || k.Grid[2] > d.MaxGrid[2] {
		return kr, fmt.Errorf("grid (%d, %d, %d) beyond the device's limits %v", k.Grid[0], k.Grid[1], k.Grid[2], d.MaxGrid)
	}
	shared := k.SharedBytes
	if res != nil {
		shared = res.SharedBytes
	}
	if shared > d.SharedPerBlock {
		return kr, fmt.Errorf("%d B of shared memory per block, more than %d", shared, d.SharedPerBlock)
	}
	if k.MaxVectorBytes > 16 {
		return kr, fmt.Errorf("a %d-byte vector access, wider than 16 bytes", k.MaxVectorBytes)
	}
	// Registers: addresses, the local arrays held in registers, and the
	// operands staged across unrolled loops.
	need := int64(math.Ceil(p.RegBase + float64(k.LocalWords) + k.StageWords))
	regs := need
	if regs > d.MaxRegsPerThread {
		kr.Spilled = regs - d.MaxRegsPerThread
		regs = d.MaxRegsPerThread
	}
	if res != nil {
		regs, kr.Spilled = max(res.Registers, 1), res.Spilled
		need = regs + kr.Spilled
	}
	warpsPerBlock := (k.Threads + d.WarpSize - 1) / d.WarpSize
	tw := warpsPerBlock * d.WarpSize
	blocksPerSM := func(regs int64) int64 {
		r8 := 8 * ((regs + 7) / 8) // allocated per warp in units of 256
		return min(d.MaxBlocksPerSM, d.MaxThreadsPerSM/tw, d.MaxWarpsPerSM/warpsPerBlock, d.RegsPerSM/(r8*tw), d.SharedPerSM/max(1, shared+d.SharedReservedPerBlock))
	}
	b := blocksPerSM(regs)
	if b <= 0 && res == nil {
		// TVM declares __launch_bounds__(threads): nvcc caps the
		// registers so that one block fits, and spills the rest.
		if capped := (d.RegsPerSM / tw) / 8 * 8; capped >= 16 && capped < regs {
			kr.Spilled += regs - capped
			regs = capped
			b = blocksPerSM(regs)
		}
	}
	kr.Registers = regs
	if b <= 0 {
		return kr, fmt.Errorf("no block fits on an SM (%d threads × %d registers, %d B shared)", k.Threads, regs, shared)
	}
	kr.BlocksPerSM = b
	kr.Occupancy = float64(b*warpsPerBlock) / float64(d.MaxWarpsPerSM)
	slots := b * d.SMs
	kr.Waves = (k.Blocks + slots - 1) / slots
	kr.WaveEfficiency = float64(k.Blocks) / float64(kr.Waves*slots)
	// The busiest SM runs ⌈G/SMs⌉ blocks, at most B at a time: the tail
	// effect at the SM level (the wave quantization of §6 step 4, without
	// charging the idle slots of a partial wave twice: the issue
	// efficiency already sees the warps a partly filled SM has).
	perSM := (k.Blocks + d.SMs - 1) / d.SMs
	activeBlocks := min(b, perSM)
	activeWarps := float64(activeBlocks * warpsPerBlock)
	f := d.ClockHz
	smWarps := float64(perSM * warpsPerBlock) // warps the busiest SM runs

	// Compute: the busiest SM's warp instructions over its issue rate,
	// the FP instructions over its FP32 lanes (a warp instruction takes
	// 32/lanes-per-scheduler clocks where a scheduler has fewer than 32).
	ilp := max(1, min(k.ILP, p.ILPCap))
	kr.IssueEfficiency = min(1, activeWarps/float64(d.SchedulersPerSM)*ilp/p.IssueHide)
	instr := k.FPInstr + k.SFUCalls*p.SFUInstr + k.LSInstr + k.LoopIters*p.LoopOverheadInstr
	issue := max(instr/float64(d.SchedulersPerSM), k.FPInstr*float64(d.WarpSize)/float64(d.FP32LanesPerSM))
	kr.Compute = issue * smWarps / (f * kr.IssueEfficiency)
	if kr.Spilled > 0 {
		kr.Compute *= 1 + p.SpillPenalty*float64(kr.Spilled)/float64(d.MaxRegsPerThread)
	}

	// Memory: L2 traffic from the sectors, DRAM from the footprint.
	threads := float64(k.Threads * k.Blocks)
	kr.L2Bytes = k.Sectors * 32 * threads
	kr.DRAMBytes = k.Footprint
	if l2 := float64(d.L2Bytes); k.Footprint > l2 {
		// Beyond the L2, re-reads miss in proportion to what does not fit.
		kr.DRAMBytes += max(0, kr.L2Bytes-k.Footprint) * (1 - l2/k.Footprint)
	}
	kr.DRAMBytes = min(kr.DRAMBytes, max(kr.L2Bytes, 0))
	// Little's law: the bytes an SM has in flight against what the
	// bandwidth needs over the latency.
	needBytes := p.MemLatencyCycles * d.DRAMBytesPerSec * p.DRAMEfficiency / (float64(d.SMs) * f)
	inflight := activeWarps * max(1, min(k.MemILP, p.ILPCap)) * max(k.BytesPerRequest, 32)
	kr.MemEfficiency = 1.0
	if needBytes > 0 {
		kr.MemEfficiency = min(1, inflight/needBytes)
	}
	busy := min(1, float64(k.Blocks)/float64(d.SMs)) // SMs with work
	bw := d.DRAMBytesPerSec * kr.MemEfficiency * busy
	l2bw := p.L2BandwidthRatio * d.DRAMBytesPerSec
	if d.L2BytesPerSec > 0 {
		l2bw = d.L2BytesPerSec
	}
	kr.Memory = max(kr.DRAMBytes/(p.DRAMEfficiency*bw), kr.L2Bytes/(l2bw*kr.MemEfficiency*busy))
	kr.Local = m.localTime(k, &kr, need, activeWarps, smWarps)

	// Shared memory: the busiest SM's wavefronts, one per clock.
	kr.Shared = k.Wavefronts * float64(perSM*k.Threads) / f

	// Barriers stall a block; the blocks resident on an SM overlap them.
	kr.Sync = float64(kr.Waves) * k.Barriers * p.BarrierCycles / (float64(b) * f)
	kr.Launch = p.LaunchSeconds

	// The three parts overlap as far as independent work on the SM hides
	// one behind another: the resident blocks of a kernel with barriers
	// (within a block, the fetch, the barrier and the compute run in
	// sequence), the warps per scheduler of one without. With one block
	// per SM the parts add up; with many, the largest dominates and
	// overlap × the others remain.
	conc := float64(activeBlocks)
	if k.Barriers == 0 {
		conc = activeWarps / float64(d.SchedulersPerSM)
	}
	hide := max(p.Overlap, min(1, 1/conc))
	mem := kr.Memory + kr.Local
	big, rest := kr.Compute, mem+kr.Shared
	kr.Bound = "compute"
	if mem > big {
		big, rest, kr.Bound = mem, kr.Compute+kr.Shared, "memory"
	}
	if kr.Shared > big {
		big, rest, kr.Bound = kr.Shared, kr.Compute+mem, "shared"
	}
	kr.Seconds = kr.Launch + big + hide*rest + kr.Sync
	return kr, nil
}

// localTime is the time of a kernel's local-memory traffic on the busiest
// SM: the accesses to the local arrays that live in local memory, and the
// spilled share (spilled of need registers) of those held in registers.
// A warp's access moves 32 interleaved 4-byte words (128 B) through L1,
// where the inner loops' working set stays: at L1's bandwidth (that of
// shared memory, the same SRAM) and, with ILP independent accesses per
// warp, the resident warps overlap their L1 latency (Little's law); the
// time is the larger of the two.
func (m *Model) localTime(k *KernelAnalysis, kr *KernelReport, need int64, activeWarps, smWarps float64) float64 {
	d, p := &m.dev, &m.p
	acc := k.LocalMemAccesses
	if kr.Spilled > 0 && need > 0 {
		acc += k.RegAccesses * float64(kr.Spilled) / float64(need)
	}
	if acc <= 0 {
		return 0
	}
	f := d.ClockHz
	reqs := acc * smWarps // warp requests on the busiest SM
	band := reqs * 128 / (float64(d.SharedBytesPerClkPerSM) * f)
	ilp := max(1, min(k.ILP, p.ILPCap))
	latency := reqs * l1LatencyCycles / (max(1, activeWarps) * ilp * f)
	return max(band, latency)
}

// l1LatencyCycles is the latency of an L1 hit (and of a shared-memory
// load): ~30 clocks on Volta through Hopper (Jia et al., "Dissecting the
// NVIDIA Volta/Turing GPU architecture via microbenchmarking", 2018/2019).
const l1LatencyCycles = 30
