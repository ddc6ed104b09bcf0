package taskset

import (
	"fmt"

	"dragonx/kernels/numeric"
	"dragonx/kernels/roofline"
	"dragonx/kernels/workload"
)

// Limits is the largest workload a task set benches: what the CPU numeric
// gate judges in reasonable time.
type Limits struct {
	// FLOPs is the most FLOPs (roofline.Work's count); Bytes the most
	// parameter bytes.
	FLOPs, Bytes float64
	// Largest names the workload that sets FLOPs.
	Largest string
}

// DefaultLimits are the FLOPs of the largest of the 52 MetaSchedule
// benchmark shapes (the held-out tasks include them all; C3D/0, 13.2
// GFLOP, takes the gate minutes per check) and the gate's own limit on
// parameter bytes (numeric.DefaultMaxIOBytes).
func DefaultLimits() (Limits, error) {
	l := Limits{Bytes: float64(numeric.DefaultMaxIOBytes)}
	for _, b := range workload.Benchmarks() {
		f, err := b.Spec.Build()
		if err != nil {
			return Limits{}, fmt.Errorf("taskset: benchmark %s: %w", b.Name(), err)
		}
		w, err := roofline.Of(f)
		if err != nil {
			return Limits{}, fmt.Errorf("taskset: benchmark %s: %w", b.Name(), err)
		}
		if w.FLOPs > l.FLOPs {
			l.FLOPs, l.Largest = w.FLOPs, b.Name()
		}
	}
	return l, nil
}

// Check builds sp and says whether it is within l: nil when it is, an
// error naming the figure that is not (or why it does not build).
func (l Limits) Check(sp *workload.Spec) error {
	f, err := sp.Build()
	if err != nil {
		return err
	}
	w, err := roofline.Of(f)
	if err != nil {
		return err
	}
	if w.FLOPs > l.FLOPs {
		return fmt.Errorf("%.3g GFLOP, more than the %.3g of %s", w.FLOPs/1e9, l.FLOPs/1e9, l.Largest)
	}
	if w.Bytes > l.Bytes {
		return fmt.Errorf("%.0f MiB of parameters, more than the numeric gate's %.0f MiB", w.Bytes/(1<<20), l.Bytes/(1<<20))
	}
	return nil
}
