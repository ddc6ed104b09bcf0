package cudabench

import (
	"context"
	"errors"

	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/lower"
)

// Source is the measured latency.Source ("cuda"): Run on the programs of
// one workload, whose references check every program before it is timed.
type Source struct {
	// Workload is the unscheduled function the programs compute; it must
	// be set before Latency is called.
	Workload *ir.PrimFunc
	Options  Options
}

// Name implements latency.Source.
func (*Source) Name() string { return "cuda" }

// Latency implements latency.Source: the median of Run's repeats,
// labelled "measured" with the GPU's name.
func (s *Source) Latency(ctx context.Context, p *lower.Program) (latency.Estimate, error) {
	if s.Workload == nil {
		return latency.Estimate{}, errors.New("cudabench: the measured source has no workload")
	}
	if s.Options.DryRun {
		return latency.Estimate{}, errors.New("cudabench: a dry run measures nothing")
	}
	r, err := Run(ctx, s.Workload, p, s.Options)
	if err != nil {
		return latency.Estimate{}, err
	}
	return latency.Estimate{Seconds: r.Seconds, Source: latency.Measured, Device: r.Device}, nil
}
