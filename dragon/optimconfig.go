package dragon

import (
	"errors"
	"math"
)

// AdamWConfig configures an Optimizer: AdamW with decoupled weight decay on
// matrices and embeddings only, clipping to a global gradient norm, and a
// learning rate with a linear warmup and a cosine decay. TrainConfig holds
// the same fields for SFT (TrainConfig.AdamW); a policy-gradient stage
// builds one directly (lm-rl.md §4.4: a small constant lr, MinLR = LR).
type AdamWConfig struct {
	// LR is the peak learning rate, reached after Warmup steps; a cosine
	// then takes it to MinLR at step Steps-1. Steps = 0 keeps LR after the
	// warmup (no decay).
	LR     float64 `hcl:"lr,optional" json:"lr"`
	MinLR  float64 `hcl:"min_lr,optional" json:"min_lr"`
	Warmup int     `hcl:"warmup,optional" json:"warmup"`
	Steps  int     `hcl:"steps,optional" json:"steps"`
	// WeightDecay is the decoupled decay of matrices and embeddings.
	WeightDecay float64 `hcl:"weight_decay,optional" json:"weight_decay"`
	Beta1       float64 `hcl:"beta1,optional" json:"beta1"`
	Beta2       float64 `hcl:"beta2,optional" json:"beta2"`
	Eps         float64 `hcl:"eps,optional" json:"eps"`
	// Clip is the largest global gradient norm; 0 turns clipping off.
	Clip float64 `hcl:"clip,optional" json:"clip"`
}

// AdamW returns the optimizer part of c.
func (c TrainConfig) AdamW() AdamWConfig {
	return AdamWConfig{
		LR: c.LR, MinLR: c.MinLR, Warmup: c.Warmup, Steps: c.Steps,
		WeightDecay: c.WeightDecay, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, Clip: c.Clip,
	}
}

// Validate reports every problem of c, each as a *FieldError, joined.
func (c AdamWConfig) Validate() error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fieldErr(field, format, args...))
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	check(c.Steps >= 0, "steps", "%d is negative", c.Steps)
	check(c.LR > 0 && finite(c.LR), "lr", "%v is not a positive number", c.LR)
	check(c.MinLR >= 0 && c.MinLR <= c.LR && finite(c.MinLR), "min_lr", "%v is not in [0, lr]", c.MinLR)
	check(c.Warmup >= 0, "warmup", "%d is negative", c.Warmup)
	check(c.WeightDecay >= 0 && finite(c.WeightDecay), "weight_decay", "%v is negative", c.WeightDecay)
	check(c.Beta1 >= 0 && c.Beta1 < 1, "beta1", "%v is not in [0, 1)", c.Beta1)
	check(c.Beta2 >= 0 && c.Beta2 < 1, "beta2", "%v is not in [0, 1)", c.Beta2)
	check(c.Eps > 0 && finite(c.Eps), "eps", "%v is not positive", c.Eps)
	check(c.Clip >= 0 && finite(c.Clip), "clip", "%v is negative", c.Clip)
	return errors.Join(errs...)
}

// LRAt is the learning rate of step (counted from 0): a linear warmup to LR
// over Warmup steps, then a cosine from LR down to MinLR at step Steps-1
// (constant LR when Steps is 0).
func (c AdamWConfig) LRAt(step int) float64 {
	if step < c.Warmup {
		return c.LR * float64(step+1) / float64(c.Warmup)
	}
	span := c.Steps - 1 - c.Warmup
	if c.Steps == 0 || span <= 0 {
		return c.LR
	}
	p := min(float64(step-c.Warmup)/float64(span), 1)
	return c.MinLR + 0.5*(1+math.Cos(math.Pi*p))*(c.LR-c.MinLR)
}
