package dragon

import "fmt"

// Completion is a (prompt, completion) pair whose completion tokens
// Model.Score and Model.ScoreNoGrad score, teacher-forced.
type Completion struct {
	Prompt []int `json:"prompt"`
	Tokens []int `json:"tokens"`
	// Allow, when set, holds one entry per token of Tokens: the tokens the
	// sampler could choose from at that position (a constraint's mask, as
	// in Sample.Allow); a nil entry allows every token. The log-probability
	// of a token is then that of the distribution renormalised over its
	// allowed tokens, the distribution the sampler drew from.
	Allow [][]bool `json:"-"`
}

// ScoreOptions control Model.Score and Model.ScoreNoGrad.
type ScoreOptions struct {
	// Batch is the number of completions per forward pass; 0 scores all at
	// once. With gradients every pass's graph is kept until
	// Scores.Backward, so memory grows with the whole call.
	Batch int `hcl:"batch,optional" json:"batch"`
}

// LossFunc computes a scalar loss from the log-probabilities of a Score
// call (logProbs[i][j]: completion i, token j) and returns it with its
// derivative with respect to each log-probability (same shape). The model's
// gradient is then Σ dLoss[i][j]·∇logProbs[i][j] (the chain rule), which is
// what Scores.Backward accumulates. The loss is computed in Go in float64,
// so a policy-gradient loss (ratios, clipping, KL to a reference) can be
// checked against finite differences without libtorch.
type LossFunc func(logProbs [][]float64) (loss float64, dLoss [][]float64, err error)

// checkCompletions reports the first completion that cannot be scored by a
// model of cfg.
func checkCompletions(cfg Config, cs []Completion) error {
	if len(cs) == 0 {
		return fmt.Errorf("dragon: scoring: no completions")
	}
	for i, c := range cs {
		if len(c.Tokens) == 0 {
			return fmt.Errorf("dragon: scoring: completion %d is empty", i)
		}
		if c.Allow != nil && len(c.Allow) != len(c.Tokens) {
			return fmt.Errorf("dragon: scoring: completion %d has %d masks for %d tokens", i, len(c.Allow), len(c.Tokens))
		}
		for j, a := range c.Allow {
			if a == nil {
				continue
			}
			if len(a) != cfg.Vocab {
				return fmt.Errorf("dragon: scoring: completion %d: the mask of token %d has %d entries, want the vocabulary's %d", i, j, len(a), cfg.Vocab)
			}
			if t := c.Tokens[j]; t >= 0 && t < len(a) && !a[t] {
				return fmt.Errorf("dragon: scoring: completion %d: token %d (%d) is not allowed by its mask", i, j, t)
			}
		}
	}
	exs := make([]Example, len(cs))
	for i, c := range cs {
		exs[i] = Example{Prompt: c.Prompt, Target: c.Tokens}
	}
	if err := checkExamples(cfg, "scored", exs); err != nil {
		return err
	}
	return nil
}

// scoreChunks cuts n completions into chunks of batch (all when 0).
func scoreChunks(n, batch int) [][2]int {
	if batch <= 0 {
		batch = n
	}
	var out [][2]int
	for lo := 0; lo < n; lo += batch {
		out = append(out, [2]int{lo, min(lo+batch, n)})
	}
	return out
}
