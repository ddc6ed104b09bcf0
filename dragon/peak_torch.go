//go:build torch

package dragon

import (
	"context"
	"time"
)

// SgemmPeak measures the fp32 matrix-product rate (n=1024, in GFLOP/s) on the
// runtime's thread, as Bench does: the best of trials of about trial each.
// It is the denominator of the MFU a training run reports.
func (r *Runtime) SgemmPeak(ctx context.Context, trial time.Duration, trials int) (float64, error) {
	return sgemmPeak(ctx, r, 1024, trial, trials)
}
