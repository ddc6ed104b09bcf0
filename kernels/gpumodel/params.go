package gpumodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
)

// Params are the model's free constants: figures no datasheet gives,
// estimated from GPU practice (metaschedule-reference.md §6.1's "to
// calibrate" list) until a calibration (dragonx kernel calibrate) fits
// them to measured timings. DefaultParams gives the estimates.
type Params struct {
	// LaunchSeconds is the cost of one kernel launch (§6: 2-5 µs).
	LaunchSeconds float64 `json:"launch_s"`
	// DRAMEfficiency is the fraction of peak HBM bandwidth a streaming
	// kernel achieves (§6: 85-90%).
	DRAMEfficiency float64 `json:"dram_efficiency"`
	// L2BandwidthRatio is the L2 bandwidth as a multiple of the HBM peak
	// (§6: "a few ×").
	L2BandwidthRatio float64 `json:"l2_bandwidth_ratio"`
	// IssueHide is how many (warps per scheduler × independent
	// instructions per warp) keep a scheduler issuing every clock: the
	// FMA's dependent-issue latency in clocks (4 on recent NVIDIA GPUs).
	IssueHide float64 `json:"issue_hide"`
	// ILPCap bounds the independent accumulators per thread that count
	// (§6: ~8).
	ILPCap float64 `json:"ilp_cap"`
	// MemLatencyCycles is the latency of a global load, in clocks: with
	// Little's law, the bytes an SM must have in flight to reach the
	// bandwidth (a few hundred clocks on Hopper).
	MemLatencyCycles float64 `json:"mem_latency_cycles"`
	// LoopOverheadInstr is the instructions per iteration of a loop that
	// is not unrolled (§6: ~2: increment, compare-and-branch).
	LoopOverheadInstr float64 `json:"loop_overhead_instr"`
	// BarrierCycles is the stall of a __syncthreads() (§6: ~100 clocks),
	// shared by the blocks resident on an SM.
	BarrierCycles float64 `json:"barrier_cycles"`
	// Overlap is the least fraction of the two smaller of the compute,
	// memory and shared-memory times added to the largest (§6: 0.1): with
	// C blocks (or warps per scheduler, without barriers) resident to hide
	// one part behind another, the fraction is max(Overlap, 1/C).
	Overlap float64 `json:"overlap"`
	// RegBase is the registers per thread for addresses and indices,
	// beside the local (accumulator) arrays and operand staging (§6 says
	// ~20; with 32 the estimate's median error against ptxas on 12 sampled
	// kernels is 0.48 instead of 0.53, on 42 kernels 0.40:
	// TestRegisterEstimate).
	RegBase float64 `json:"reg_base"`
	// SpillPenalty is the slowdown of the compute time per register
	// spilled, relative to the 255-register limit: compute × (1 +
	// SpillPenalty·spilled/255).
	SpillPenalty float64 `json:"spill_penalty"`
	// SFUInstr is the issue cost of a transcendental (exp, tanh, erf...)
	// in FP32 instruction slots (the SFU has 16 lanes per SM quarter).
	SFUInstr float64 `json:"sfu_instr"`
}

// DefaultParams returns the estimates of the free constants.
func DefaultParams() Params {
	return Params{
		LaunchSeconds:     3e-6,
		DRAMEfficiency:    0.9,
		L2BandwidthRatio:  2.5,
		IssueHide:         4,
		ILPCap:            8,
		MemLatencyCycles:  600,
		LoopOverheadInstr: 2,
		BarrierCycles:     100,
		Overlap:           0.1,
		RegBase:           32,
		SpillPenalty:      4,
		SFUInstr:          4,
	}
}

// paramFields lists the Params fields a calibration fits, in a fixed
// order (Vector, SetVector).
var paramFields = func() []int {
	var out []int
	t := reflect.TypeFor[Params]()
	for i := range t.NumField() {
		out = append(out, i)
	}
	return out
}()

// Names returns the JSON names of the free constants, in Vector's order.
func (p Params) Names() []string {
	t := reflect.TypeFor[Params]()
	var out []string
	for _, i := range paramFields {
		out = append(out, t.Field(i).Tag.Get("json"))
	}
	return out
}

// Vector returns the constants in a fixed order.
func (p Params) Vector() []float64 {
	v := reflect.ValueOf(p)
	out := make([]float64, 0, len(paramFields))
	for _, i := range paramFields {
		out = append(out, v.Field(i).Float())
	}
	return out
}

// FromVector returns the constants of Vector's order.
func FromVector(x []float64) (Params, error) {
	var p Params
	if len(x) != len(paramFields) {
		return p, fmt.Errorf("gpumodel: %d constants, want %d", len(x), len(paramFields))
	}
	v := reflect.ValueOf(&p).Elem()
	for j, i := range paramFields {
		v.Field(i).SetFloat(x[j])
	}
	return p, nil
}

// Validate checks that every constant is finite and in its range.
func (p Params) Validate() error {
	for j, x := range p.Vector() {
		name := p.Names()[j]
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fmt.Errorf("gpumodel: constant %s = %g: want a finite value >= 0", name, x)
		}
	}
	switch {
	case p.DRAMEfficiency <= 0 || p.DRAMEfficiency > 1:
		return fmt.Errorf("gpumodel: dram_efficiency = %g: want (0, 1]", p.DRAMEfficiency)
	case p.L2BandwidthRatio <= 0:
		return fmt.Errorf("gpumodel: l2_bandwidth_ratio = %g: want > 0", p.L2BandwidthRatio)
	case p.IssueHide <= 0:
		return fmt.Errorf("gpumodel: issue_hide = %g: want > 0", p.IssueHide)
	case p.ILPCap < 1:
		return fmt.Errorf("gpumodel: ilp_cap = %g: want >= 1", p.ILPCap)
	case p.Overlap > 1:
		return fmt.Errorf("gpumodel: overlap = %g: want [0, 1]", p.Overlap)
	}
	return nil
}

// Calibration is a calibration file: the free constants fitted to
// measured timings of one target (dragonx kernel calibrate writes it).
//
//	{"target": "h200-model",
//	 "params": {"launch_s": 4e-6, "dram_efficiency": 0.85, ...},
//	 "note": "fitted on 120 rows of measured.csv; held-out Spearman 0.91"}
//
// params may name a subset of the constants: the others keep their
// defaults. An unknown key is an error (a misspelt constant would
// otherwise be silently ignored).
type Calibration struct {
	// Target is the -target the constants were fitted for ("" fits any).
	Target string `json:"target,omitempty"`
	Params Params `json:"params"`
	// Note says where the constants come from.
	Note string `json:"note,omitempty"`
}

// LoadCalibration reads a calibration file.
func LoadCalibration(path string) (*Calibration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gpumodel: calibration: %w", err)
	}
	c, err := ParseCalibration(data)
	if err != nil {
		return nil, fmt.Errorf("gpumodel: calibration %s: %w", path, err)
	}
	return c, nil
}

// ParseCalibration decodes a calibration file's JSON over the default
// constants.
func ParseCalibration(data []byte) (*Calibration, error) {
	c := &Calibration{Params: DefaultParams()}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, err
	}
	if err := c.Params.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// JSON returns the calibration file's text.
func (c *Calibration) JSON() []byte {
	b, _ := json.MarshalIndent(c, "", "  ") // plain floats and strings: cannot fail
	return append(b, '\n')
}
