// Package latency is the interface between the latency sources of
// dragonx's kernels and their users (search, RL rewards, the benchmark,
// dragonx kernel apply -target and kernel bench): a Source gives the
// latency of a lowered program (kernels/lower), and every Estimate names
// the source that produced it, so that a modelled figure is never taken
// for a measured one.
//
// # Sources and labels
//
// Estimate.Source is one of:
//
//	model:<device>         the analytic model of kernels/gpumodel (e.g.
//	                       "model:h100", "model:h200"), from the kernel AST
//	                       alone: registers and shared memory estimated
//	model:<device>+ptxas   the same model with the registers, shared memory
//	                       and spills that ptxas reported for the generated
//	                       CUDA (a different estimate, hence its own label)
//	measured               timed on a GPU (CUDA events over repeats)
//
// A consumer must accept labels it does not know and keep the label with
// the figure wherever the figure goes (JSON, CSV, reports). Device is the
// device the figure is for: the model's device name ("H100 SXM5"), or the
// name the GPU reports for a measurement.
package latency

import (
	"context"
	"strings"

	"dragonx/kernels/lower"
)

// Source labels.
const (
	// Measured labels a latency timed on a GPU.
	Measured = "measured"
	// ModelPrefix starts the label of a modelled latency: "model:h100".
	ModelPrefix = "model:"
)

// Estimate is a latency with the source that produced it.
type Estimate struct {
	// Seconds is the latency of one run of the program (all its kernels).
	Seconds float64 `json:"latency_s"`
	// Source is the label of the source: "model:h100",
	// "model:h100+ptxas", "measured" (see the package doc).
	Source string `json:"latency_source"`
	// Device is the device the figure is for.
	Device string `json:"device,omitempty"`
}

// IsModel reports whether the estimate comes from a model, not a
// measurement.
func (e Estimate) IsModel() bool { return strings.HasPrefix(e.Source, ModelPrefix) }

// Source estimates (or measures) a lowered program's latency.
type Source interface {
	// Name is the source's target name, as the CLI's -target takes it
	// ("h100-model", "cuda").
	Name() string
	// Latency returns the latency of one run of p. An error means p cannot
	// run on the target (a GPU limit it exceeds) or the source failed; it
	// names the cause.
	Latency(ctx context.Context, p *lower.Program) (Estimate, error)
}
