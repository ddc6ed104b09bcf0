//go:build !torch

package dragon

import (
	"context"
	"time"
)

// SgemmPeak needs libtorch.
func (r *Runtime) SgemmPeak(context.Context, time.Duration, int) (float64, error) {
	return 0, ErrNoTorch
}
