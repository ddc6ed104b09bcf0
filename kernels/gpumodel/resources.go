package gpumodel

import (
	"context"
	"fmt"

	"dragonx/kernels/lower"
	"dragonx/kernels/ptxas"
)

// Resources are what a compiler reports for one kernel: registers per
// thread, static shared memory per block, and the registers spilled.
type Resources struct {
	Registers, SharedBytes, Spilled int64
}

// ResourceSource gives the resources of a lowered program's kernels, in
// order, in place of the model's estimates: ptxas's figures (Ptxas).
type ResourceSource interface {
	// Name is the label suffix: "ptxas" in "model:h100+ptxas".
	Name() string
	Resources(ctx context.Context, p *lower.Program) ([]Resources, error)
}

// Ptxas is the ResourceSource of a ptxas compiler: the generated CUDA
// (kernels/cudagen) compiled with nvcc for sm_90, cached by content.
func Ptxas(c *ptxas.Compiler) ResourceSource { return ptxasSource{c} }

type ptxasSource struct{ c *ptxas.Compiler }

func (ptxasSource) Name() string { return "ptxas" }

func (s ptxasSource) Resources(ctx context.Context, p *lower.Program) ([]Resources, error) {
	ks, err := s.c.CompileProgram(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]Resources, len(ks))
	for i, k := range ks {
		// A spilled register is stored (4 bytes) to the stack frame.
		out[i] = Resources{Registers: int64(k.Registers), SharedBytes: k.SharedBytes, Spilled: (k.SpillStores + 3) / 4}
	}
	return out, nil
}

// resources asks the resource source for the kernels of p.
func (m *Model) resources(ctx context.Context, p *lower.Program) ([]Resources, error) {
	rs, err := m.res.Resources(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("gpumodel: %s: %w", m.res.Name(), err)
	}
	if len(rs) != len(p.Kernels) {
		return nil, fmt.Errorf("gpumodel: %s reported %d kernels, the program has %d", m.res.Name(), len(rs), len(p.Kernels))
	}
	return rs, nil
}
