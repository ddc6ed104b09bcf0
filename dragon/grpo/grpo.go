// Package grpo trains a dragon.Model with GRPO (group relative policy
// optimisation, DeepSeekMath): for each step it samples G completions of P
// prompts from the current policy, scores them with a Rewarder, normalises
// the rewards within each group into advantages, and makes Mu updates of a
// clipped-ratio objective with a k3 KL penalty to a frozen reference model.
// The loss is exactly the one documented in docs/dragon.md ("RL: GRPO") and
// implemented by Objective.Loss, a pure Go function.
package grpo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"dragonx/dragon"
)

// Config sets a GRPO run.
type Config struct {
	// Steps is the number of GRPO steps of the run (Trainer.Done); 0 has no
	// end.
	Steps int `json:"steps"`
	// PromptsPerStep (P) prompts are drawn per step, each sampled Group (G)
	// times; Mu policy updates are made on each batch.
	PromptsPerStep int `json:"prompts_per_step"`
	Group          int `json:"group"`
	Mu             int `json:"mu"`
	// Epsilon is the clip range of the ratio; Beta the weight of the k3 KL
	// to the frozen reference (0: no reference needed).
	Epsilon float64 `json:"epsilon"`
	Beta    float64 `json:"beta"`
	// Temperature, TopK and MaxNew control sampling (a Prompt's own MaxNew
	// overrides MaxNew; 0 for both: to the end of the context).
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	MaxNew      int     `json:"max_new"`
	// Stop lists tokens that end a sample (the pipeline's <eos> = 1).
	Stop []int `json:"stop"`
	// FullVocab scores the completions of constrained prompts with
	// log-probabilities over the whole vocabulary instead of renormalised
	// over the tokens the constraint allowed: the updates then also move
	// probability away from the tokens the constraint hides, so the policy
	// can learn what the constraint enforces (sampling stays constrained).
	// Use it with FreeSamples: alone, the negative advantages of
	// constrained samples push probability into the hidden tokens
	// (docs/pipeline.md, ## rl, measured on a toy task).
	FullVocab bool `json:"full_vocab,omitempty"`
	// FreeSamples of each group of a constrained prompt are sampled
	// without its constraint (the group's last rows): scored with
	// FullVocab, the group's advantages then contrast what the policy
	// writes alone with what it writes under the constraint.
	FreeSamples int `json:"free_samples,omitempty"`
	// MaskMass weighs a term that keeps the policy within what the
	// constraint allowed, a penalty the mask cannot absorb: for each
	// token of a constrained completion, -log Σ_{allowed} π(t), the
	// log of the probability the full distribution puts on the tokens
	// the constraint allowed there (0 where it allowed everything),
	// averaged as the GRPO loss is (a token mean per completion, the
	// completions' weights). The renormalised log-probs that GRPO
	// updates have no gradient at a forced position and none towards
	// the hidden tokens, so without it the unmasked policy drifts where
	// the mask acts; with it every update also raises the forced tokens
	// and the allowed set's mass. 0: none. Not with FullVocab, whose
	// log-probs are not renormalised.
	MaskMass float64 `json:"mask_mass,omitempty"`
	// Batch is the number of completions per scoring pass (and per backward
	// pass: memory is bounded by one pass's graph); 0 scores a step's
	// completions at once.
	Batch int `json:"batch"`
	// AdamW is the policy's optimizer (learning rate, schedule, clipping).
	AdamW dragon.AdamWConfig `json:"adamw"`
	// Seed drives the prompt cursor and the samples' seeds.
	Seed int64 `json:"seed"`
}

// DefaultConfig returns the defaults of lm-rl.md §4.4: P=4, G=8, μ=1,
// ε=0.2, β=0.04, temperature 1, AdamW at lr 2e-5 without decay, clip 1.
func DefaultConfig() Config {
	return Config{
		PromptsPerStep: 4, Group: 8, Mu: 1, Epsilon: 0.2, Beta: 0.04, Temperature: 1, Stop: []int{1},
		AdamW: dragon.AdamWConfig{LR: 2e-5, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 1},
		Seed:  1,
	}
}

// Validate reports every problem of c, joined.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("grpo: %s: "+format, append([]any{field}, args...)...))
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	check(c.Steps >= 0, "steps", "%d is negative", c.Steps)
	check(c.PromptsPerStep > 0, "prompts_per_step", "%d is not positive", c.PromptsPerStep)
	check(c.Group > 1, "group", "%d: a group needs at least 2 samples", c.Group)
	check(c.Mu > 0, "mu", "%d is not positive", c.Mu)
	check(c.Epsilon > 0 && c.Epsilon < 1, "epsilon", "%v is not in (0, 1)", c.Epsilon)
	check(c.Beta >= 0 && finite(c.Beta), "beta", "%v is negative", c.Beta)
	check(c.Temperature > 0 && finite(c.Temperature), "temperature", "%v is not positive (GRPO samples)", c.Temperature)
	check(c.TopK >= 0, "top_k", "%d is negative", c.TopK)
	check(c.MaxNew >= 0, "max_new", "%d is negative", c.MaxNew)
	check(c.Batch >= 0, "batch", "%d is negative", c.Batch)
	check(c.FreeSamples >= 0 && c.FreeSamples < max(c.Group, 1), "free_samples", "%d is not in [0, group %d)", c.FreeSamples, c.Group)
	check(c.MaskMass >= 0 && finite(c.MaskMass), "mask_mass", "%v is not a weight (0 or more)", c.MaskMass)
	check(c.MaskMass == 0 || !c.FullVocab, "mask_mass", "%v with full_vocab: its log-probs are not renormalised, so there is no mask to keep within", c.MaskMass)
	if err := c.AdamW.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("grpo: adamw: %w", err))
	}
	return errors.Join(errs...)
}

// Prompt is one RL prompt.
type Prompt struct {
	ID     string `json:"id"`
	Tokens []int  `json:"tokens"`
	// MaxNew, when positive, overrides Config.MaxNew for this prompt.
	MaxNew int `json:"max_new"`
	// Constraint, optional, restricts the tokens of this prompt's samples
	// (the script grammar); its row argument is the sample's index in its
	// group (0..G-1).
	Constraint dragon.RowConstraint `json:"-"`
}

// A Rewarder scores the G samples of one prompt (a group); it may run them
// in parallel. Components are named reward parts (e.g. "gate", "bonus",
// "correct", "log_speedup") averaged into the step's stats.
type Rewarder interface {
	Reward(ctx context.Context, p Prompt, samples [][]int) ([]Reward, error)
}

// Reward is one sample's reward.
type Reward struct {
	Total      float64            `json:"total"`
	Components map[string]float64 `json:"components,omitempty"`
}

// StepStats describes one GRPO step.
type StepStats struct {
	// Step is the number of steps done after this one.
	Step int `json:"step"`
	// RewardMean and RewardStd are the mean and population standard
	// deviation of the step's P·G rewards.
	RewardMean float64 `json:"reward_mean"`
	RewardStd  float64 `json:"reward_std"`
	// KL (k3 to the reference), ClipFrac and Loss are averaged over the Mu
	// updates (weighted as the loss: token mean per sample, mean per group);
	// KL is 0 without a reference. GradNorm (before clipping) is averaged
	// over the updates, LR is the last update's. All are 0 when every group
	// was skipped (no update).
	KL float64 `json:"kl"`
	// RatioDev is the largest |π/π_old - 1| of any token over the updates
	// (exactly 0 for the first update in eval mode: the policy that sampled
	// is the one scored).
	RatioDev float64 `json:"ratio_dev"`
	ClipFrac float64 `json:"clip_frac"`
	// AllowedMass is the probability the policy's full distribution puts
	// on the tokens the constraint allowed, exp of the token mean of its
	// log (averaged like KL), before the step's first update; 0 when
	// MaskMass is 0 or the step made no update.
	AllowedMass float64 `json:"allowed_mass,omitempty"`
	Loss        float64 `json:"loss"`
	GradNorm    float64 `json:"grad_norm"`
	LR          float64 `json:"lr"`
	// Entropy is the sampler's entropy (nats, of the distribution it drew
	// from before top-k), token mean per sample, mean over samples.
	Entropy float64 `json:"entropy"`
	// SkippedGroups counts groups without signal (all rewards equal, or no
	// sample with a token); Samples is P·G; FailedSamples counts samples
	// the sampler stopped with an error (a constraint that allowed nothing
	// or failed): they keep their tokens and their reward.
	SkippedGroups int `json:"skipped_groups"`
	Samples       int `json:"samples"`
	FailedSamples int `json:"failed_samples"`
	// Updates is the number of optimizer steps made (Mu, or 0).
	Updates int `json:"updates"`
	// Seconds spent sampling, rewarding, scoring with the old policy and
	// the reference, and in the μ updates (score, backward, step).
	SampleSeconds float64 `json:"sample_s"`
	RewardSeconds float64 `json:"reward_s"`
	ScoreSeconds  float64 `json:"score_s"`
	UpdateSeconds float64 `json:"update_s"`
	// Components are the reward components, each averaged over the samples
	// that report it.
	Components map[string]float64 `json:"components,omitempty"`
}

// promptsDigest identifies a prompt list (ids, tokens, lengths), so that a
// resume with other prompts is refused.
func promptsDigest(ps []Prompt) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range ps {
		enc.Encode(p) // hash.Hash writes never fail
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkPrompts reports the first prompt a model of cfg cannot sample.
func checkPrompts(cfg dragon.Config, ps []Prompt) error {
	if len(ps) == 0 {
		return errors.New("grpo: no prompts")
	}
	for i, p := range ps {
		if len(p.Tokens) == 0 {
			return fmt.Errorf("grpo: prompt %d (%q) is empty", i, p.ID)
		}
		if len(p.Tokens) >= cfg.Context {
			return fmt.Errorf("grpo: prompt %d (%q) has %d tokens: no room in the context of %d", i, p.ID, len(p.Tokens), cfg.Context)
		}
		if p.MaxNew < 0 {
			return fmt.Errorf("grpo: prompt %d (%q): max_new %d is negative", i, p.ID, p.MaxNew)
		}
		for _, t := range p.Tokens {
			if t < 0 || t >= cfg.Vocab {
				return fmt.Errorf("grpo: prompt %d (%q): token %d is outside the vocabulary of %d", i, p.ID, t, cfg.Vocab)
			}
		}
	}
	return nil
}

// sampleSeed is the seed of sample g of the k-th prompt of step (counted
// from 0) of a run seeded with seed.
func sampleSeed(seed int64, step, k, g int) int64 {
	return dragon.RowSeed(dragon.RowSeed(dragon.RowSeed(seed, step), k), g)
}
