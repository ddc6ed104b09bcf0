package rl

import (
	"errors"

	"dragonx/dragon"
)

// RFTSpec is the rft block: one round of rejection-sampling fine-tuning
// before GRPO. The starting model samples Samples completions of each of
// the first Prompts training prompts (in MixTasks' order), under the script
// grammar alone unless GPULimits; the samples that pass the reward's gate
// are kept (each distinct one once per task) and the model is fine-tuned on
// them, as sft trains, for Steps steps. GRPO then starts from the result,
// which is also its KL reference. With the grammar alone the kept samples
// are those whose thread factors the mask did not hold within the GPU's
// limits: the round teaches the policy, unmasked, what the limits mask
// would have done for it.
//
//	rft { prompts = 512  samples = 4  temperature = 1  gpu_limits = false
//	      steps = 200  batch = 32  lr = 2e-4  min_lr = 2e-5  warmup = 10 }
type RFTSpec struct {
	Prompts     int     `hcl:"prompts,optional" json:"prompts"`
	Samples     int     `hcl:"samples,optional" json:"samples"`
	Temperature float64 `hcl:"temperature,optional" json:"temperature"`
	GPULimits   bool    `hcl:"gpu_limits,optional" json:"gpu_limits"`
	Steps       int     `hcl:"steps,optional" json:"steps"`
	Batch       int     `hcl:"batch,optional" json:"batch"`
	LR          float64 `hcl:"lr,optional" json:"lr"`
	MinLR       float64 `hcl:"min_lr,optional" json:"min_lr"`
	Warmup      int     `hcl:"warmup,optional" json:"warmup"`
}

// defaultRFT is the rft block's defaults.
func defaultRFT() RFTSpec {
	return RFTSpec{Prompts: 512, Samples: 4, Temperature: 1, Steps: 200, Batch: 32, LR: 2e-4, MinLR: 2e-5, Warmup: 10}
}

// rftPromptsPerPass is how many prompts are sampled together (with their
// Samples rows each); it bounds memory, not results (each row has its own
// seed).
const rftPromptsPerPass = 16

// TrainConfig is the fine-tuning's configuration: sft's recipe
// (dragon.DefaultTrainConfig) with the block's steps, batch and learning
// rates, seeded by the stage's seed.
func (r RFTSpec) TrainConfig(seed int64) dragon.TrainConfig {
	c := dragon.DefaultTrainConfig()
	c.Steps, c.Batch, c.LR, c.MinLR, c.Warmup, c.Seed = r.Steps, r.Batch, r.LR, r.MinLR, r.Warmup, seed
	c.EvalEvery = 0
	return c
}

// validate reports the block's problems as field errors (attribute names).
func (r RFTSpec) validate(constrained, gpuLimits bool) error {
	var errs []error
	fe := func(ok bool, field, problem string) {
		if !ok {
			errs = append(errs, &dragon.FieldError{Field: field, Problem: problem})
		}
	}
	fe(r.Prompts >= 0, "prompts", "is negative (0 samples every training prompt once)")
	fe(r.Samples > 0, "samples", "is not positive")
	fe(r.Temperature > 0, "temperature", "is not positive (rejection sampling samples)")
	if !constrained {
		errs = append(errs, errors.New("an rft block needs the stage's constrained = true (unconstrained, nearly no sample passes the gate)"))
	}
	fe(!r.GPULimits || gpuLimits, "gpu_limits", "needs the stage's gpu_limits = true (the rewarder expands the samples with the grammar the stage samples under)")
	if err := r.TrainConfig(1).Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RFTFigures describe the round, in metrics.json's "rft".
type RFTFigures struct {
	Prompts int `json:"prompts"`
	Samples int `json:"samples"`
	// Passed counts the samples that passed the gate; Kept the distinct
	// ones (per task) trained on.
	Passed int `json:"passed"`
	Kept   int `json:"kept"`
	// ByKind splits Samples and Passed by task kind (construction,
	// refinement).
	ByKind map[string]RFTCount `json:"by_kind"`
	// FirstLoss and LastLoss are the fine-tuning's first and last steps'
	// training loss (nats per target token).
	Steps     int     `json:"steps"`
	FirstLoss float64 `json:"first_loss"`
	LastLoss  float64 `json:"last_loss"`
}

// RFTCount is a kind's samples and passes.
type RFTCount struct {
	Samples int `json:"samples"`
	Passed  int `json:"passed"`
}
