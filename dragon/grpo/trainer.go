package grpo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"dragonx/dragon"
)

// Trainer runs GRPO steps on a policy. It owns the policy's optimizer; the
// models stay the caller's (close the trainer first). A Trainer is not safe
// for concurrent use. A Step that fails before its first update (sampling,
// rewards, scoring; a cancellation) changes nothing and can be retried; one
// that fails later leaves the policy partly updated, and the trainer then
// refuses to go on: resume from the last checkpoint.
type Trainer struct {
	policy, ref *dragon.Model
	opt         *dragon.Optimizer
	cfg         Config
	obj         Objective
	prompts     []Prompt
	digest      string
	rw          Rewarder
	cur         cursor
	step        int
	failed      error
}

// cursor draws prompts: epoch e visits the prompts in a permutation seeded
// by (Seed, e), so the cursor (epoch, next) is the whole state of the draw.
type cursor struct {
	Epoch int `json:"epoch"`
	Next  int `json:"next"`
	order []int
}

func (c *cursor) draw(seed int64, n int) int {
	perm := func() []int { return rand.New(rand.NewPCG(uint64(seed), uint64(c.Epoch)^0x6772706f)).Perm(n) }
	if c.order == nil {
		c.order = perm()
	}
	if c.Next >= n {
		c.Epoch, c.Next = c.Epoch+1, 0
		c.order = perm()
	}
	i := c.order[c.Next]
	c.Next++
	return i
}

// NewTrainer creates a trainer of policy with a fresh optimizer. ref is the
// frozen reference of the KL term (a policy.Clone() that is then frozen);
// it may be nil only when cfg.Beta is 0. The policy's training mode
// (dropout) is the caller's choice; GRPO usually runs it off
// (SetTraining(false)).
func NewTrainer(policy, ref *dragon.Model, cfg Config, prompts []Prompt, r Rewarder) (*Trainer, error) {
	if policy == nil {
		return nil, errors.New("grpo: no policy model")
	}
	t, err := newTrainer(policy, ref, cfg, prompts, r)
	if err != nil {
		return nil, err
	}
	if t.opt, err = dragon.NewOptimizer(policy, cfg.AdamW); err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	return t, nil
}

func newTrainer(policy, ref *dragon.Model, cfg Config, prompts []Prompt, r Rewarder) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("grpo: no rewarder")
	}
	if ref == nil && cfg.Beta != 0 {
		return nil, fmt.Errorf("grpo: beta is %v but there is no reference model", cfg.Beta)
	}
	pc := policy.Config()
	if ref == policy {
		return nil, errors.New("grpo: the reference is the policy itself (use a frozen Clone)")
	}
	if ref != nil {
		if rc := ref.Config(); rc != pc {
			return nil, fmt.Errorf("grpo: the reference model's config %+v differs from the policy's %+v", rc, pc)
		}
		if ref.Tokenizer() != policy.Tokenizer() {
			return nil, errors.New("grpo: the reference model's tokenizer differs from the policy's")
		}
	}
	for _, s := range cfg.Stop {
		if s < 0 || s >= pc.Vocab {
			return nil, fmt.Errorf("grpo: stop token %d is outside the vocabulary of %d", s, pc.Vocab)
		}
	}
	if err := checkPrompts(pc, prompts); err != nil {
		return nil, err
	}
	return &Trainer{
		policy: policy, ref: ref, cfg: cfg, obj: Objective{Epsilon: cfg.Epsilon, Beta: cfg.Beta},
		prompts: prompts, digest: promptsDigest(prompts), rw: r,
	}, nil
}

// Policy returns the model being trained.
func (t *Trainer) Policy() *dragon.Model { return t.policy }

// Steps returns the number of GRPO steps done.
func (t *Trainer) Steps() int { return t.step }

// Done says whether Config.Steps steps are done (never when Steps is 0).
func (t *Trainer) Done() bool { return t.cfg.Steps > 0 && t.step >= t.cfg.Steps }

// Config returns the run's configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Close frees the optimizer (not the models).
func (t *Trainer) Close() error {
	if t.opt == nil {
		return nil
	}
	err := t.opt.Close()
	t.opt = nil
	return err
}

// group is one prompt's G samples in a step.
type group struct {
	p       Prompt
	samples []dragon.Sample
	rewards []Reward
}

// Step does one GRPO step: it draws P prompts, samples G completions of
// each, rewards them, and makes Mu updates of the policy on the groups
// whose rewards differ.
func (t *Trainer) Step(ctx context.Context) (StepStats, error) {
	if t.opt == nil {
		return StepStats{}, errors.New("grpo: step: the trainer is closed")
	}
	if t.failed != nil {
		return StepStats{}, fmt.Errorf("grpo: step: an earlier step failed (resume from a checkpoint): %w", t.failed)
	}
	cur := t.cur
	var st StepStats
	if err := t.doStep(ctx, &st); err != nil {
		if st.Updates > 0 {
			// The policy has moved: the step cannot be redone.
			t.failed = err
		} else {
			// Nothing changed but the cursor: the step can be retried (or
			// the run checkpointed, e.g. after a cancellation).
			t.cur = cur
		}
		return StepStats{}, fmt.Errorf("grpo: step %d: %w", t.step+1, err)
	}
	t.step++
	st.Step = t.step
	return st, nil
}

// doStep does the step into *st; st.Updates counts the optimizer updates
// made, also on an error.
func (t *Trainer) doStep(ctx context.Context, st *StepStats) error {
	cfg := t.cfg
	P, G := cfg.PromptsPerStep, cfg.Group
	groups := make([]group, P)
	rows := make([]dragon.SampleRow, 0, P*G)
	constrained := false
	for k := range groups {
		p := t.prompts[t.cur.draw(cfg.Seed, len(t.prompts))]
		groups[k].p = p
		constrained = constrained || p.Constraint != nil
		maxNew := cfg.MaxNew
		if p.MaxNew > 0 {
			maxNew = p.MaxNew
		}
		for g := range G {
			rows = append(rows, dragon.SampleRow{Prompt: p.Tokens, MaxNew: maxNew, Seed: sampleSeed(cfg.Seed, t.step, k, g)})
		}
	}
	opts := dragon.SampleOptions{Temperature: cfg.Temperature, TopK: cfg.TopK, Stop: cfg.Stop}
	if constrained {
		opts.RowConstraint = func(row int, prompt, generated []int, allow []bool) error {
			c := groups[row/G].p.Constraint
			if c == nil || row%G >= G-cfg.FreeSamples {
				return nil
			}
			return c(row%G, prompt, generated, allow)
		}
	}
	clock := time.Now()
	lap := func() float64 {
		now := time.Now()
		d := now.Sub(clock).Seconds()
		clock = now
		return d
	}
	samples, err := t.policy.SampleRows(ctx, rows, opts)
	if err != nil {
		return fmt.Errorf("sampling: %w", err)
	}
	if len(samples) != len(rows) {
		return fmt.Errorf("sampling: %d samples for %d rows", len(samples), len(rows))
	}

	*st = StepStats{Samples: P * G, SampleSeconds: lap()}
	compSum, compN := map[string]float64{}, map[string]int{}
	var all []float64
	for k := range groups {
		gr := &groups[k]
		gr.samples = samples[k*G : (k+1)*G]
		toks := make([][]int, G)
		for g, s := range gr.samples {
			toks[g] = slices.Clone(s.Tokens) // the rewarder's to keep or change
			if s.Err != nil {
				st.FailedSamples++
			}
			st.Entropy += mean32(s.Entropy) / float64(P*G)
		}
		rs, err := t.rw.Reward(ctx, gr.p, toks)
		if err != nil {
			return fmt.Errorf("rewarding prompt %q: %w", gr.p.ID, err)
		}
		if len(rs) != G {
			return fmt.Errorf("rewarding prompt %q: %d rewards for %d samples", gr.p.ID, len(rs), G)
		}
		for g, r := range rs {
			if math.IsNaN(r.Total) || math.IsInf(r.Total, 0) {
				return fmt.Errorf("rewarding prompt %q: sample %d has reward %v", gr.p.ID, g, r.Total)
			}
			all = append(all, r.Total)
			for name, v := range r.Components {
				compSum[name] += v
				compN[name]++
			}
		}
		gr.rewards = rs
	}
	st.RewardMean, st.RewardStd = meanStd(all)
	st.RewardSeconds = lap()
	if len(compSum) > 0 {
		st.Components = make(map[string]float64, len(compSum))
		for name, s := range compSum {
			st.Components[name] = s / float64(compN[name])
		}
	}

	// Advantages and the completions that carry signal.
	var cs []dragon.Completion
	var terms []Term
	var used []int // terms' group sizes are set once a group's members are known
	ng := 0
	for _, gr := range groups {
		r := make([]float64, G)
		for g, x := range gr.rewards {
			r[g] = x.Total
		}
		adv, ok := Advantages(r)
		var idx []int
		if ok {
			for g, s := range gr.samples {
				if len(s.Tokens) > 0 {
					idx = append(idx, g)
				}
			}
		}
		if len(idx) == 0 {
			st.SkippedGroups++
			continue
		}
		ng++
		for _, g := range idx {
			cs = append(cs, cfg.completion(gr.p, gr.samples[g]))
			terms = append(terms, Term{Advantage: adv[g]})
			used = append(used, len(idx))
		}
	}
	if ng == 0 {
		return nil
	}
	for i := range terms {
		terms[i].Weight = 1 / float64(ng*used[i])
	}
	so := dragon.ScoreOptions{Batch: cfg.Batch}
	old, err := t.policy.ScoreNoGrad(ctx, cs, so)
	if err != nil {
		return fmt.Errorf("scoring with the sampling policy: %w", err)
	}
	var ref [][]float64
	if t.ref != nil {
		if ref, err = t.ref.ScoreNoGrad(ctx, cs, so); err != nil {
			return fmt.Errorf("scoring with the reference: %w", err)
		}
	}
	st.ScoreSeconds = lap()
	for i := range terms {
		terms[i].Old = old[i]
		if ref != nil {
			terms[i].Ref = ref[i]
		}
	}
	for range cfg.Mu {
		u, err := t.update(ctx, cs, terms)
		if err != nil {
			return err
		}
		st.Loss += u.loss / float64(cfg.Mu)
		st.KL += u.stats.KL / float64(cfg.Mu)
		st.ClipFrac += u.stats.ClipFrac / float64(cfg.Mu)
		if cfg.MaskMass > 0 && st.Updates == 0 {
			st.AllowedMass = math.Exp(u.logMass)
		}
		st.RatioDev = max(st.RatioDev, u.stats.RatioDev)
		st.GradNorm += u.GradNorm / float64(cfg.Mu)
		st.LR = u.LR
		st.Updates++
	}
	st.UpdateSeconds = lap()
	return nil
}

// completion is what the updates score of sample s of prompt p: its tokens
// and, when the prompt's sampling was constrained and the log-probs are
// not over the full vocabulary, the tokens allowed at each position
// (the log-probs are then renormalised over them).
func (c Config) completion(p Prompt, s dragon.Sample) dragon.Completion {
	out := dragon.Completion{Prompt: p.Tokens, Tokens: s.Tokens}
	if p.Constraint != nil && !c.FullVocab {
		out.Allow = s.Allow
	}
	return out
}

// update is one policy update: score, loss, backward per chunk of
// cfg.Batch completions (one graph alive at a time), then one optimizer
// step.
type updateResult struct {
	dragon.OptimStep
	loss    float64
	stats   LossStats
	logMass float64 // the mask-mass term's weighted token mean of log Σ_allowed π (MaskMass > 0)
}

// The mask-mass term (Config.MaskMass) of one chunk is
//
//	L_m = -λ Σ_i (w_i/T_i) Σ_j (F_ij - R_ij)
//
// with F_ij the log-prob of token j of completion i over the full
// vocabulary and R_ij the one renormalised over the allowed tokens:
// F - R = log Σ_{allowed} π, so dL_m/dR_ij = +λ·w_i/T_i and
// dL_m/dF_ij = -λ·w_i/T_i. raiseRenormalised adds the first to the GRPO
// loss's derivatives d (before its backward pass); maskMass scores the
// full-vocabulary log-probs and backpropagates the second, one graph
// alive at a time. A completion without a mask has F = R: no term.

// raiseRenormalised adds dL_m/dR to d for the masked completions of cs.
func raiseRenormalised(cs []dragon.Completion, terms []Term, lambda float64, d [][]float64) {
	for i, c := range cs {
		if c.Allow == nil {
			continue
		}
		k := lambda * terms[i].Weight / float64(len(c.Tokens))
		for j := range d[i] {
			d[i][j] += k
		}
	}
}

// maskMass scores the masked completions of cs over the full vocabulary
// with gradients and backpropagates dL_m/dF; renorm holds their
// renormalised log-probs (the GRPO pass's). It returns L_m and the
// weighted sum of the completions' token means of F - R.
func (t *Trainer) maskMass(ctx context.Context, cs []dragon.Completion, terms []Term, renorm [][]float64) (loss, logMass float64, err error) {
	var full []dragon.Completion
	var idx []int
	for i, c := range cs {
		if c.Allow != nil {
			full = append(full, dragon.Completion{Prompt: c.Prompt, Tokens: c.Tokens})
			idx = append(idx, i)
		}
	}
	if len(full) == 0 {
		return 0, 0, nil
	}
	s, err := t.policy.Score(ctx, full, dragon.ScoreOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("scoring over the full vocabulary: %w", err)
	}
	lambda := t.cfg.MaskMass
	d := make([][]float64, len(full))
	for k, i := range idx {
		n := float64(len(cs[i].Tokens))
		w := terms[i].Weight / n
		d[k] = make([]float64, len(full[k].Tokens))
		var sum float64
		for j, f := range s.LogProbs[k] {
			sum += f - renorm[i][j]
			d[k][j] = -lambda * w
		}
		loss -= lambda * w * sum
		logMass += terms[i].Weight * sum / n
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		s.Release()
		return 0, 0, fmt.Errorf("the mask-mass term is not finite (%v)", loss)
	}
	if err := s.Backward(d); err != nil {
		return 0, 0, fmt.Errorf("backward of the mask-mass term: %w", err)
	}
	return loss, logMass, nil
}

func (t *Trainer) update(ctx context.Context, cs []dragon.Completion, terms []Term) (updateResult, error) {
	var u updateResult
	n := len(cs)
	b := t.cfg.Batch
	if b <= 0 {
		b = n
	}
	var wsum float64
	for lo := 0; lo < n; lo += b {
		hi := min(lo+b, n)
		s, err := t.policy.Score(ctx, cs[lo:hi], dragon.ScoreOptions{})
		if err != nil {
			t.opt.ZeroGrad()
			return u, fmt.Errorf("scoring with gradients: %w", err)
		}
		l, d, ls, err := t.obj.Loss(terms[lo:hi], s.LogProbs)
		if err != nil {
			s.Release()
			t.opt.ZeroGrad()
			return u, err
		}
		if t.cfg.MaskMass > 0 {
			raiseRenormalised(cs[lo:hi], terms[lo:hi], t.cfg.MaskMass, d)
		}
		if err := s.Backward(d); err != nil {
			t.opt.ZeroGrad()
			return u, fmt.Errorf("backward: %w", err)
		}
		if t.cfg.MaskMass > 0 {
			ml, lm, err := t.maskMass(ctx, cs[lo:hi], terms[lo:hi], s.LogProbs)
			if err != nil {
				t.opt.ZeroGrad()
				return u, err
			}
			l += ml
			u.logMass += lm
		}
		var w float64
		for _, tm := range terms[lo:hi] {
			w += tm.Weight
		}
		u.loss += l
		u.stats.KL += ls.KL * w
		u.stats.ClipFrac += ls.ClipFrac * w
		u.stats.Ratio += ls.Ratio * w
		u.stats.RatioDev = max(u.stats.RatioDev, ls.RatioDev)
		wsum += w
	}
	u.stats.KL /= wsum
	u.stats.ClipFrac /= wsum
	u.stats.Ratio /= wsum
	u.logMass /= wsum
	var err error
	if u.OptimStep, err = t.opt.Step(); err != nil {
		return u, fmt.Errorf("optimizer: %w", err)
	}
	return u, nil
}

// state is the trainer's part of a checkpoint (the optimizer's caller
// state).
type state struct {
	Config   Config `json:"config"`
	Step     int    `json:"step"`
	Cursor   cursor `json:"cursor"`
	Prompts  string `json:"prompts"`
	Training bool   `json:"training"`
}

// WriteCheckpoint writes everything an exact resume needs: the policy, the
// optimizer's moments and step, libtorch's RNG state (the optimizer's
// checkpoint), and the trainer's step, configuration, prompt cursor and a
// digest of the prompts. The sampler's random streams are seeded per row
// from (Seed, step, prompt, sample) and the cursor's permutation from
// (Seed, epoch), so no other Go random state exists.
func (t *Trainer) WriteCheckpoint(w io.Writer) error {
	if t.opt == nil {
		return errors.New("grpo: checkpoint: the trainer is closed")
	}
	if t.failed != nil {
		return fmt.Errorf("grpo: checkpoint: refused after a failed step: %w", t.failed)
	}
	js, err := json.Marshal(state{Config: t.cfg, Step: t.step, Cursor: t.cur, Prompts: t.digest, Training: t.policy.Training()})
	if err != nil {
		return fmt.Errorf("grpo: checkpoint: %w", err)
	}
	if err := t.opt.WriteCheckpoint(w, js); err != nil {
		return fmt.Errorf("grpo: checkpoint: %w", err)
	}
	return nil
}

// ResumeTrainer restores a trainer from a checkpoint of
// Trainer.WriteCheckpoint: a new policy model (the caller closes it after
// the trainer: Trainer.Policy), the optimizer, libtorch's RNG, the step and
// the prompt cursor. prompts must be the ones the run started with.
func ResumeTrainer(rt *dragon.Runtime, r io.Reader, ref *dragon.Model, prompts []Prompt, rw Rewarder) (*Trainer, error) {
	opt, raw, err := rt.ResumeOptimizer(r)
	if err != nil {
		return nil, fmt.Errorf("grpo: resume: %w", err)
	}
	fail := func(err error) (*Trainer, error) {
		m := opt.Model()
		opt.Close()
		m.Close()
		return nil, fmt.Errorf("grpo: resume: %w", err)
	}
	var s state
	if raw == nil {
		return fail(errors.New("the checkpoint holds an optimizer without GRPO state"))
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fail(fmt.Errorf("reading the GRPO state: %w", err))
	}
	if s.Config.AdamW != opt.Config() {
		return fail(errors.New("the GRPO state's optimizer configuration differs from the optimizer's"))
	}
	if promptsDigest(prompts) != s.Prompts {
		return fail(errors.New("the prompts differ from the run's"))
	}
	policy := opt.Model()
	policy.SetTraining(s.Training)
	t, err := newTrainer(policy, ref, s.Config, prompts, rw)
	if err != nil {
		return fail(err)
	}
	t.opt, t.step, t.cur = opt, s.Step, s.Cursor
	return t, nil
}

func mean32(xs []float32) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)))
}
