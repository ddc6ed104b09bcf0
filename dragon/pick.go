package dragon

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SampleOptions control Model.Sample. The zero value samples greedily until
// the context is full.
type SampleOptions struct {
	// MaxNew is the most tokens generated per sequence; 0 means until the
	// context is full (prompt and output together may be one token longer
	// than the context: the last token is not read back).
	MaxNew int `hcl:"max_new,optional" json:"max_new"`
	// Temperature divides the logits before sampling; 0 means greedy
	// (always the most likely allowed token).
	Temperature float64 `hcl:"temperature,optional" json:"temperature"`
	// TopK keeps only the K most likely tokens; 0 keeps all.
	TopK int `hcl:"top_k,optional" json:"top_k"`
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP (nucleus sampling); 0 or 1 keeps all.
	TopP float64 `hcl:"top_p,optional" json:"top_p"`
	// Stop lists tokens that end a sequence; the stop token is included in
	// the output.
	Stop []int `hcl:"stop,optional" json:"stop"`
	// Seed drives Model.Sample: row i draws from its own stream, seeded
	// with RowSeed(Seed, i), so the same seed, model and options give the
	// same samples, and a row's samples do not depend on the other rows.
	// (SampleRows takes each row's seed instead.)
	Seed int64 `hcl:"seed,optional" json:"seed"`
	// Constraint, when set, is asked before each token which tokens the
	// sequence may continue with (e.g. what a grammar allows).
	Constraint Constraint `json:"-"`
	// RowConstraint is Constraint with the prompt and an error; at most one
	// of the two may be set.
	RowConstraint RowConstraint `json:"-"`
	// NoCache recomputes the whole context for every token instead of using
	// the KV cache. It is slower and gives the same results; it exists to
	// check and measure the cache.
	NoCache bool `json:"-"`
}

// Constraint is called before each token of a sequence is chosen. row is the
// sequence's index in the batch, generated the tokens it generated so far,
// and allow has one entry per vocabulary token, all true on entry; the
// constraint clears the entries of forbidden tokens. Clearing every entry
// fails that row (Sample.Err). It runs in the goroutine that called Sample,
// between decoding steps, once per unfinished row and step. generated is a
// copy: writing into it changes nothing. RowConstraint also sees the prompt
// and can fail.
type Constraint func(row int, generated []int, allow []bool)

// RowConstraint is Constraint with the row's prompt and an error: an error
// fails that row only (Sample.Err wraps it), as does clearing every entry
// of allow. prompt and generated are copies made for each call, so the hook
// cannot change the sampler's input or output; allow is read once it
// returns.
type RowConstraint func(row int, prompt, generated []int, allow []bool) error

// SampleRow is one row of Model.SampleRows.
type SampleRow struct {
	Prompt []int `json:"prompt"`
	// MaxNew is the most tokens this row generates; 0 means until the
	// context is full for this row's prompt (prompt and output together may
	// be one token longer than the context).
	MaxNew int `json:"max_new"`
	// Seed seeds the row's own random stream: a row's samples depend on its
	// prompt, seed and the options, not on the other rows of the batch.
	Seed int64 `json:"seed"`
}

// RowSeed is the seed of row i of Model.Sample called with SampleOptions.Seed
// = seed: Sample(prompts)[i] equals SampleRows with that prompt alone and
// this seed (up to float rounding of the batched products).
func RowSeed(seed int64, i int) int64 {
	// SplitMix64 of the pair, so that nearby seeds and rows give
	// unrelated streams.
	z := uint64(seed) + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

// Sample is one generated sequence.
type Sample struct {
	// Tokens are the generated tokens (not the prompt), ending with the
	// stop token when one ended the sequence.
	Tokens []int `json:"tokens"`
	// LogProbs[i] is log p(Tokens[i]) under the model's own distribution
	// (temperature 1, before top-k, top-p or the constraint), the quantity
	// policy-gradient training compares with a teacher-forced forward pass.
	LogProbs []float32 `json:"logprobs"`
	// Stopped says a stop token ended the sequence (rather than MaxNew or
	// the context).
	Stopped bool `json:"stopped"`
	// MaskedLogProbs[i] is log p(Tokens[i]) under the distribution
	// renormalised over the tokens the constraint allowed (temperature 1,
	// before top-k and top-p); equal to LogProbs without a constraint.
	MaskedLogProbs []float32 `json:"masked_logprobs,omitempty"`
	// Entropy[i] is the entropy (nats) of the distribution MaskedLogProbs
	// is taken from, at token i: the policy's entropy for RL curves.
	Entropy []float32 `json:"entropy,omitempty"`
	// Allow[i] is the constraint's mask at token i (nil without a
	// constraint): Completion.Allow for Model.Score, which then gives
	// MaskedLogProbs.
	Allow [][]bool `json:"-"`
	// Err is why this row stopped early, if it failed (its constraint
	// allowed nothing or returned an error, its logits were not finite):
	// the row keeps the tokens before the failure and the other rows are
	// unaffected.
	Err error `json:"-"`
}

// Validate reports every problem of o, each as a *FieldError, joined.
func (o SampleOptions) Validate(vocab int) error {
	var errs []error
	check := func(ok bool, field, format string, args ...any) {
		if !ok {
			errs = append(errs, fieldErr(field, format, args...))
		}
	}
	check(o.MaxNew >= 0, "max_new", "%d is negative", o.MaxNew)
	check(o.Temperature >= 0 && !math.IsInf(o.Temperature, 0), "temperature", "%v is not a non-negative number", o.Temperature)
	check(o.TopK >= 0, "top_k", "%d is negative", o.TopK)
	check(o.TopP >= 0 && o.TopP <= 1, "top_p", "%v is not in [0, 1]", o.TopP)
	for _, s := range o.Stop {
		check(s >= 0 && s < vocab, "stop", "token %d is outside the vocabulary of %d", s, vocab)
	}
	check(o.Constraint == nil || o.RowConstraint == nil, "constraint", "both Constraint and RowConstraint are set")
	return errors.Join(errs...)
}

// picker chooses tokens from logits on the Go side: the logits of a step
// are copied out once ([B, V] floats, small next to the model's work) and
// everything else (masking, filtering, sampling, log-probabilities) happens
// here, deterministically for the rows' seeds. Each row has its own random
// stream.
type picker struct {
	opts      SampleOptions
	constrain RowConstraint
	rngs      []*rand.Rand
	allow     []bool
	cand      []int
	prob      []float64
	// prompt and gen are the copies a constraint gets.
	prompt, gen []int
}

// newPicker makes a picker for rows seeded with seeds.
func newPicker(opts SampleOptions, vocab int, seeds []int64) *picker {
	p := &picker{
		opts:      opts,
		constrain: opts.RowConstraint,
		allow:     make([]bool, vocab),
		cand:      make([]int, 0, vocab),
		prob:      make([]float64, 0, vocab),
	}
	if c := opts.Constraint; c != nil {
		p.constrain = func(row int, _, gen []int, allow []bool) error { c(row, gen, allow); return nil }
	}
	for _, s := range seeds {
		p.rngs = append(p.rngs, rand.New(rand.NewPCG(uint64(s), 0x73616d70)))
	}
	return p
}

// picked is one chosen token.
type picked struct {
	tok int
	// lp is its log-probability under the unfiltered distribution, mlp
	// under the distribution renormalised over the allowed tokens, and ent
	// the entropy of the latter (temperature 1).
	lp, mlp, ent float32
	// allow is a copy of the constraint's mask (nil without one).
	allow []bool
}

// pick chooses the next token of row from its logits.
func (p *picker) pick(row int, prompt, generated []int, logits []float32) (picked, error) {
	// Log-softmax of the raw logits, for the returned log-probability.
	maxl := math.Inf(-1)
	for _, l := range logits {
		maxl = max(maxl, float64(l))
	}
	if math.IsNaN(maxl) || math.IsInf(maxl, 0) {
		return picked{}, fmt.Errorf("dragon: sampling row %d: logits are not finite", row)
	}
	for _, l := range logits {
		if math.IsNaN(float64(l)) {
			return picked{}, fmt.Errorf("dragon: sampling row %d: logits are not finite", row)
		}
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l) - maxl)
	}
	lse := maxl + math.Log(z)

	var out picked
	p.cand = p.cand[:0]
	if p.constrain != nil {
		for i := range p.allow {
			p.allow[i] = true
		}
		p.prompt = append(p.prompt[:0], prompt...)
		p.gen = append(p.gen[:0], generated...)
		if err := p.constrain(row, p.prompt, p.gen, p.allow); err != nil {
			return picked{}, fmt.Errorf("dragon: sampling row %d: constraint after %d tokens: %w", row, len(generated), err)
		}
		for i, ok := range p.allow {
			if ok {
				p.cand = append(p.cand, i)
			}
		}
		if len(p.cand) == 0 {
			return picked{}, fmt.Errorf("dragon: sampling row %d: the constraint forbids every token after %d generated", row, len(generated))
		}
		out.allow = slices.Clone(p.allow)
	} else {
		for i := range logits {
			p.cand = append(p.cand, i)
		}
	}
	// The allowed tokens' log-sum-exp, for the renormalised log-probability.
	mlse := lse
	if out.allow != nil {
		var zm float64
		for _, c := range p.cand {
			zm += math.Exp(float64(logits[c]) - maxl)
		}
		mlse = maxl + math.Log(zm)
	}
	// H = -Σ p·log p over the allowed tokens, log p = l - mlse.
	var h float64
	for _, c := range p.cand {
		if lp := float64(logits[c]) - mlse; !math.IsInf(lp, -1) {
			h -= math.Exp(lp) * lp
		}
	}
	out.ent = float32(h)
	out.tok = p.choose(p.rngs[row], logits)
	out.lp = float32(float64(logits[out.tok]) - lse)
	out.mlp = float32(float64(logits[out.tok]) - mlse)
	return out, nil
}

// choose picks among p.cand: greedy, or sampled with rng after temperature,
// top-k and top-p. Ties go to the lower token id.
func (p *picker) choose(rng *rand.Rand, logits []float32) int {
	if p.opts.Temperature == 0 {
		best := p.cand[0]
		for _, c := range p.cand[1:] {
			if logits[c] > logits[best] {
				best = c
			}
		}
		return best
	}
	cand := p.cand
	if k := p.opts.TopK; (k > 0 && k < len(cand)) || (p.opts.TopP > 0 && p.opts.TopP < 1) {
		// Most likely first; equal logits by id, so the order is total.
		slices.SortFunc(cand, func(a, b int) int {
			switch {
			case logits[a] > logits[b]:
				return -1
			case logits[a] < logits[b]:
				return 1
			}
			return a - b
		})
		if k > 0 && k < len(cand) {
			cand = cand[:k]
		}
	}
	inv := 1 / p.opts.Temperature
	maxl := math.Inf(-1)
	for _, c := range cand {
		maxl = max(maxl, float64(logits[c])*inv)
	}
	p.prob = p.prob[:0]
	var z float64
	for _, c := range cand {
		e := math.Exp(float64(logits[c])*inv - maxl)
		p.prob = append(p.prob, e)
		z += e
	}
	if tp := p.opts.TopP; tp > 0 && tp < 1 {
		// cand is sorted by decreasing probability: keep the shortest
		// prefix whose mass reaches tp.
		var cum float64
		for i, e := range p.prob {
			cum += e / z
			if cum >= tp {
				cand, p.prob = cand[:i+1], p.prob[:i+1]
				break
			}
		}
		z = 0
		for _, e := range p.prob {
			z += e
		}
	}
	u := rng.Float64() * z
	for i, e := range p.prob {
		u -= e
		if u < 0 {
			return cand[i]
		}
	}
	return cand[len(cand)-1]
}
