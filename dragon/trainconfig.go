package dragon

import (
	"errors"
	"math"
)

// TrainConfig describes a supervised fine-tuning run. Start from
// DefaultTrainConfig; the zero value is not valid.
type TrainConfig struct {
	// Steps is the number of optimizer steps of the whole run.
	Steps int `hcl:"steps,optional" json:"steps"`
	// Batch is the number of examples per micro-batch.
	Batch int `hcl:"batch,optional" json:"batch"`
	// Accum is the number of micro-batches whose gradients make one step.
	Accum int `hcl:"accum,optional" json:"accum"`
	// LR is the peak learning rate, reached after Warmup steps; a cosine
	// then takes it down to MinLR at the last step.
	LR     float64 `hcl:"lr,optional" json:"lr"`
	MinLR  float64 `hcl:"min_lr,optional" json:"min_lr"`
	Warmup int     `hcl:"warmup,optional" json:"warmup"`
	// WeightDecay is AdamW's decoupled decay, applied to matrices (and
	// embeddings) only, never to biases or LayerNorm parameters.
	WeightDecay float64 `hcl:"weight_decay,optional" json:"weight_decay"`
	Beta1       float64 `hcl:"beta1,optional" json:"beta1"`
	Beta2       float64 `hcl:"beta2,optional" json:"beta2"`
	Eps         float64 `hcl:"eps,optional" json:"eps"`
	// Clip is the largest global gradient norm; larger gradients are scaled
	// down to it. 0 turns clipping off.
	Clip float64 `hcl:"clip,optional" json:"clip"`
	// EvalEvery is how often (in steps) the held-out loss is measured; the
	// last step is always measured. 0 means only at the end.
	EvalEvery int `hcl:"eval_every,optional" json:"eval_every"`
	// Seed drives the data order and dropout.
	Seed int64 `hcl:"seed,optional" json:"seed"`
	// Bucket is how many micro-batches' worth of examples are sorted by
	// length together before being cut into micro-batches, so that a
	// micro-batch pads little; 1 keeps the shuffled order.
	Bucket int `hcl:"bucket,optional" json:"bucket"`
}

// DefaultTrainConfig is the CPU recipe of shared/design/lm-rl.md §4.3.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{
		Steps: 1000, Batch: 16, Accum: 1,
		LR: 1e-3, MinLR: 1e-4, Warmup: 100,
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8,
		Clip: 1, EvalEvery: 100, Seed: 1, Bucket: 32,
	}
}

// Validate reports every problem of c, each as a *FieldError, joined.
func (c TrainConfig) Validate() error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fieldErr(field, format, args...))
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	check(c.Steps >= 1, "steps", "%d is not positive", c.Steps)
	check(c.Batch >= 1, "batch", "%d is not positive", c.Batch)
	check(c.Accum >= 1, "accum", "%d is not positive", c.Accum)
	check(c.LR > 0 && finite(c.LR), "lr", "%v is not a positive number", c.LR)
	check(c.MinLR >= 0 && c.MinLR <= c.LR && finite(c.MinLR), "min_lr", "%v is not in [0, lr]", c.MinLR)
	check(c.Warmup >= 0, "warmup", "%d is negative", c.Warmup)
	check(c.WeightDecay >= 0 && finite(c.WeightDecay), "weight_decay", "%v is negative", c.WeightDecay)
	check(c.Beta1 >= 0 && c.Beta1 < 1, "beta1", "%v is not in [0, 1)", c.Beta1)
	check(c.Beta2 >= 0 && c.Beta2 < 1, "beta2", "%v is not in [0, 1)", c.Beta2)
	check(c.Eps > 0 && finite(c.Eps), "eps", "%v is not positive", c.Eps)
	check(c.Clip >= 0 && finite(c.Clip), "clip", "%v is negative", c.Clip)
	check(c.EvalEvery >= 0, "eval_every", "%d is negative", c.EvalEvery)
	check(c.Bucket >= 1, "bucket", "%d is not positive", c.Bucket)
	return errors.Join(errs...)
}

// LRAt is the learning rate of step (counted from 0): a linear warmup to LR
// over Warmup steps, then a cosine from LR down to MinLR at step Steps-1.
func (c TrainConfig) LRAt(step int) float64 { return c.AdamW().LRAt(step) }
