//go:build torch

package dragon

import (
	"context"
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"
)

// Scores holds the log-probabilities of a Model.Score call and the
// autograd graph behind them, until Backward or Release frees it. A Scores
// must be released (Backward does it) before the model is closed.
type Scores struct {
	// LogProbs[i][j] is log p(Tokens[j] | Prompt, Tokens[:j]) of
	// completion i (renormalised over Allow[j] when given).
	LogProbs [][]float64
	m        *Model
	chunks   []scoreChunk
}

// scoreChunk is one forward pass kept for backward.
type scoreChunk struct {
	lo, hi int
	a      *arena
	lp     *ts.Tensor // [N] log-probs, padded rows at the end
	n      int        // N
}

// ScoreNoGrad returns the log-probability of every completion token under
// the model, teacher-forced, without dropout or autograd (for a frozen
// reference or the policy that sampled). out[i][j] scores cs[i].Tokens[j].
func (m *Model) ScoreNoGrad(ctx context.Context, cs []Completion, opts ScoreOptions) ([][]float64, error) {
	if err := checkCompletions(m.cfg, cs); err != nil {
		return nil, err
	}
	out := make([][]float64, len(cs))
	for _, ch := range scoreChunks(len(cs), opts.Batch) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := m.do(func() error {
			return noGrad(func() error {
				var a arena
				defer a.reset()
				_, err := m.score(&a, cs, ch[0], ch[1], false, out)
				return err
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Score is ScoreNoGrad with gradients: it keeps the autograd graph so that
// Scores.Backward can accumulate the gradient of a loss of the
// log-probabilities into the model's parameters (for an Optimizer step).
// Dropout applies when the model is in training mode (SetTraining). The
// model must not be frozen.
func (m *Model) Score(ctx context.Context, cs []Completion, opts ScoreOptions) (*Scores, error) {
	if m.frozen {
		return nil, fmt.Errorf("dragon: scoring with gradients: the model is frozen (use ScoreNoGrad)")
	}
	if err := checkCompletions(m.cfg, cs); err != nil {
		return nil, err
	}
	s := &Scores{LogProbs: make([][]float64, len(cs)), m: m}
	for _, ch := range scoreChunks(len(cs), opts.Batch) {
		if err := ctx.Err(); err != nil {
			s.Release()
			return nil, err
		}
		c := scoreChunk{lo: ch[0], hi: ch[1], a: &arena{}}
		err := m.do(func() error {
			var err error
			c.lp, err = m.score(c.a, cs, c.lo, c.hi, m.training, s.LogProbs)
			if err == nil {
				var size []int64
				if size, err = c.lp.Size(); err == nil {
					c.n = int(size[0])
				}
			}
			if err != nil {
				c.a.reset()
			}
			return err
		})
		if err != nil {
			s.Release()
			return nil, err
		}
		s.chunks = append(s.chunks, c)
	}
	return s, nil
}

// score runs completions [lo, hi) of cs through the model and returns the
// log-probabilities of their tokens as a tensor [N] (target rows quantized
// as in training; padded rows at the end), writing the values into
// out[lo:hi]. Torch thread.
func (m *Model) score(a *arena, cs []Completion, lo, hi int, train bool, out [][]float64) (*ts.Tensor, error) {
	exs := make([]Example, hi-lo)
	idx := make([]int, hi-lo)
	masked := false
	for i := range exs {
		c := cs[lo+i]
		exs[i], idx[i] = Example{Prompt: c.Prompt, Target: c.Tokens}, i
		masked = masked || c.Allow != nil
	}
	mb := makeMicroBatch(exs, idx, trainPadding(m.cfg.Context))
	b, t := int64(mb.Rows), int64(mb.Len)
	x := a.view(m.hidden(a, a.int64Tensor(mb.Inputs, b, t), b, t, train), b*t, int64(m.cfg.Width))
	n := len(mb.Targets) + mb.PadTargets
	pos := make([]int64, n)
	labels := make([]int64, n) // padded rows read position 0 and score token 0
	copy(pos, mb.Targets)
	for i, p := range mb.Targets {
		labels[i] = mb.Labels[p]
	}
	logits := m.head(a, a.indexSelect(x, 0, a.int64Tensor(pos, int64(n))))
	if masked {
		v := m.cfg.Vocab
		mask := make([]float64, n*v)
		k := 0 // target row: the completions' tokens in order
		for _, c := range cs[lo:hi] {
			for j := range c.Tokens {
				if c.Allow != nil && c.Allow[j] != nil {
					for tok, ok := range c.Allow[j] {
						if !ok {
							mask[k*v+tok] = math.Inf(-1)
						}
					}
				}
				k++
			}
		}
		logits = a.add(logits, a.floatTensor(mask, m.dtype, int64(n), int64(v)))
	}
	lp := a.logSoftmax(logits, m.dtype)
	lp = a.view(a.gather(lp, 1, a.int64Tensor(labels, int64(n), 1)), int64(n))
	if a.err != nil {
		return nil, a.err
	}
	vals, err := float64Values(lp, m.dtype, n)
	if err != nil {
		return nil, err
	}
	k := 0
	for i, c := range cs[lo:hi] {
		out[lo+i] = vals[k : k+len(c.Tokens) : k+len(c.Tokens)]
		k += len(c.Tokens)
	}
	return lp, nil
}

// Backward accumulates into the model's parameters the gradient of the
// loss whose derivatives with respect to LogProbs are dLoss (same shape):
// Σ dLoss[i][j]·∇LogProbs[i][j]. It frees the graph; Backward and Release
// can be called once. Gradients accumulate across calls until an
// Optimizer's Step (or ZeroGrad).
func (s *Scores) Backward(dLoss [][]float64) error {
	if s.chunks == nil {
		return fmt.Errorf("dragon: backward: the scores were already used or released")
	}
	defer s.Release()
	if len(dLoss) != len(s.LogProbs) {
		return fmt.Errorf("dragon: backward: %d gradient rows for %d completions", len(dLoss), len(s.LogProbs))
	}
	for i, d := range dLoss {
		if len(d) != len(s.LogProbs[i]) {
			return fmt.Errorf("dragon: backward: completion %d: %d gradients for %d tokens", i, len(d), len(s.LogProbs[i]))
		}
		for j, x := range d {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("dragon: backward: completion %d token %d: gradient %v", i, j, x)
			}
		}
	}
	m := s.m
	return m.do(func() error {
		for ci := range s.chunks {
			c := &s.chunks[ci]
			w := make([]float64, c.n)
			k := 0
			for _, d := range dLoss[c.lo:c.hi] {
				k += copy(w[k:], d)
			}
			a := c.a
			a.backward(a.sum(a.mul(c.lp, a.floatTensor(w, m.dtype, int64(c.n))), m.dtype))
			if a.err != nil {
				m.zeroGrads()
				return fmt.Errorf("dragon: backward: %w", a.err)
			}
		}
		return nil
	})
}

// Release frees the graph without a backward pass.
func (s *Scores) Release() error {
	if s.chunks == nil {
		return nil
	}
	chunks := s.chunks
	s.chunks = nil
	return s.m.do(func() error {
		for _, c := range chunks {
			c.a.reset()
		}
		return nil
	})
}

// Minimize does one optimizer step on a loss of log-probabilities: it
// scores cs with gradients, computes loss (in Go), backpropagates its
// derivatives, clips and updates. It returns the loss, the gradient norm
// before clipping and the learning rate. Gradients left by earlier Backward
// calls are included (accumulation); on an error none are left.
func (o *Optimizer) Minimize(ctx context.Context, cs []Completion, opts ScoreOptions, loss LossFunc) (Minimized, error) {
	if o.closed {
		return Minimized{}, ErrClosed
	}
	s, err := o.m.Score(ctx, cs, opts)
	if err != nil {
		o.ZeroGrad()
		return Minimized{}, err
	}
	l, d, err := loss(s.LogProbs)
	if err == nil && (math.IsNaN(l) || math.IsInf(l, 0)) {
		err = fmt.Errorf("dragon: minimize: the loss is %v", l)
	}
	if err != nil {
		s.Release()
		o.ZeroGrad()
		return Minimized{}, fmt.Errorf("dragon: minimize: %w", err)
	}
	if err := s.Backward(d); err != nil {
		o.ZeroGrad()
		return Minimized{}, err
	}
	st, err := o.Step()
	if err != nil {
		return Minimized{}, err
	}
	return Minimized{OptimStep: st, Loss: l, LogProbs: s.LogProbs}, nil
}
