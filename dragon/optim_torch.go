//go:build torch

package dragon

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"dragonx/internal/torchrt"
)

// Optimizer is AdamW over a model's parameters, with clipping to the global
// gradient norm and the learning rate schedule of its AdamWConfig. It takes
// the gradients that are accumulated in the parameters by any loss (the
// Trainer's cross-entropy, Scores.Backward of a policy-gradient loss) and
// applies one update per Step. Its state (moments, step count) is saved by
// Optimizer.WriteCheckpoint and Trainer.WriteCheckpoint.
//
// An Optimizer is not safe for concurrent use. The model stays the
// caller's: close the optimizer, then the model.
type Optimizer struct {
	m          *Model
	cfg        AdamWConfig
	step       int
	mom1, mom2 []*ts.Tensor // paramSpecs order
	c1, c2     *ts.Scalar   // 1-β1, 1-β2
	a          arena
	closed     bool
}

// NewOptimizer creates an optimizer for m's parameters with zero moments.
// m must not be frozen.
func NewOptimizer(m *Model, cfg AdamWConfig) (*Optimizer, error) {
	return newOptimizer(m, cfg, 0, nil)
}

// newOptimizer creates an optimizer at step with moments from vals (first
// moments then second moments, paramSpecs order; nil for zeros).
func newOptimizer(m *Model, cfg AdamWConfig, step int, vals [][]float32) (*Optimizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m.frozen {
		return nil, fmt.Errorf("dragon: optimizer: the model is frozen")
	}
	o := &Optimizer{m: m, cfg: cfg, step: step}
	err := m.do(func() error { return o.initMoments(vals) })
	if err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// initMoments creates the moments. Torch thread.
func (o *Optimizer) initMoments(vals [][]float32) error {
	n := len(o.m.specs)
	if vals != nil && len(vals) != 2*n {
		return fmt.Errorf("dragon: optimizer: %d moment tensors, want %d", len(vals), 2*n)
	}
	for i := range 2 * n {
		s := o.m.specs[i%n]
		var mt *ts.Tensor
		var err error
		if vals == nil {
			mt, err = ts.Zeros(s.Shape, o.m.dtype, gotch.CPU)
		} else {
			mt, err = float32Tensor(vals[i], s.Shape)
		}
		if err != nil {
			return fmt.Errorf("dragon: creating the AdamW moments of %s: %w", s.Name, err)
		}
		if i < n {
			o.mom1 = append(o.mom1, mt)
		} else {
			o.mom2 = append(o.mom2, mt)
		}
	}
	o.c1 = ts.FloatScalar(1 - o.cfg.Beta1)
	o.c2 = ts.FloatScalar(1 - o.cfg.Beta2)
	return nil
}

// Config returns the optimizer's configuration.
func (o *Optimizer) Config() AdamWConfig { return o.cfg }

// Steps returns the number of steps done.
func (o *Optimizer) Steps() int { return o.step }

// Model returns the model the optimizer updates.
func (o *Optimizer) Model() *Model { return o.m }

// Close frees the moments (not the model).
func (o *Optimizer) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	return o.m.do(func() error {
		o.a.reset()
		for _, x := range append(o.mom1, o.mom2...) {
			x.Drop()
		}
		o.mom1, o.mom2 = nil, nil
		for _, s := range []*ts.Scalar{o.c1, o.c2} {
			if s != nil {
				s.Drop()
			}
		}
		o.c1, o.c2 = nil, nil
		return nil
	})
}

// Step clips the gradients accumulated in the model's parameters, applies
// one AdamW update with the schedule's learning rate, and zeroes the
// gradients. A non-finite gradient norm is an error and changes nothing
// but the gradients (zeroed) and the step count (unchanged).
func (o *Optimizer) Step() (OptimStep, error) {
	if o.closed {
		return OptimStep{}, ErrClosed
	}
	var st OptimStep
	err := o.m.do(func() error {
		var err error
		st, err = o.stepLocked()
		return err
	})
	return st, err
}

// ZeroGrad zeroes the gradients accumulated in the model's parameters
// (after a Scores.Backward whose step is abandoned).
func (o *Optimizer) ZeroGrad() error {
	if o.closed {
		return ErrClosed
	}
	return o.m.do(func() error { o.m.zeroGrads(); return nil })
}

// stepLocked is Step on the torch thread.
func (o *Optimizer) stepLocked() (OptimStep, error) {
	defer o.m.zeroGrads()
	st := OptimStep{LR: o.cfg.LRAt(o.step)}
	err := noGrad(func() error {
		var err error
		st.GradNorm, err = o.update(st.LR)
		return err
	})
	if err != nil {
		return st, fmt.Errorf("dragon: optimizer step %d: %w", o.step+1, err)
	}
	o.step++
	st.Step = o.step
	return st, nil
}

// update clips the gradients to the global norm cfg.Clip and applies one
// AdamW step with learning rate lr. Torch thread, no grad.
func (o *Optimizer) update(lr float64) (float64, error) {
	a := &o.a
	defer a.reset()
	m := o.m
	grads := make([]*ts.Tensor, len(m.params))
	norms := make([]*ts.Tensor, len(m.params))
	for i, p := range m.params {
		grads[i] = a.grad(p)
		if a.err != nil {
			return 0, a.err
		}
		if ok, err := grads[i].Defined(); err != nil || !ok {
			return 0, fmt.Errorf("dragon: %s has no gradient (no backward pass yet)", m.specs[i].Name)
		}
		norms[i] = a.norm(grads[i])
	}
	total := a.norm(a.stack(norms))
	if a.err != nil {
		return 0, a.err
	}
	gnorm, err := scalarValue(total, m.dtype)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(gnorm) || math.IsInf(gnorm, 0) {
		return gnorm, fmt.Errorf("dragon: gradient norm is %v; no update", gnorm)
	}
	if c := o.cfg.Clip; c > 0 && gnorm > c {
		s := ts.FloatScalar(c / (gnorm + 1e-6))
		for _, g := range grads {
			a.inplace("mul_", g.MulScalar_(s))
		}
		s.Drop()
	}
	// AdamW with bias correction, written so that one addcdiv applies it:
	// p += m / d with d = -(bc1/lr)·(sqrt(v)/sqrt(bc2) + eps).
	// That divides by lr: at lr = 0 (the last step of a cosine to
	// min_lr = 0) the factors are -Inf, and where v = 0 (a parameter that
	// never had a gradient) d = 0·(-Inf) = NaN. The update lr·m/(...) is
	// then exactly 0, so the parameters are left as they are (the moments
	// still advance). The same holds for an lr so small that the factors
	// overflow float32, the tensors' type (lr below ~1e-38): its update,
	// lr times a ratio of moments of order 1, is below float32's normal
	// range, which the runtime flushes to zero.
	k := float64(o.step + 1)
	bc1 := 1 - math.Pow(o.cfg.Beta1, k)
	bc2 := 1 - math.Pow(o.cfg.Beta2, k)
	fa, fb := -bc1/(lr*math.Sqrt(bc2)), -bc1/lr*o.cfg.Eps
	move := lr > 0 && math.Abs(fa) <= math.MaxFloat32 && math.Abs(fb) <= math.MaxFloat32
	sa := ts.FloatScalar(fa)
	sb := ts.FloatScalar(fb)
	decay := ts.FloatScalar(1 - lr*o.cfg.WeightDecay)
	defer func() { sa.Drop(); sb.Drop(); decay.Drop() }()
	for i, p := range m.params {
		g, m1, m2 := grads[i], o.mom1[i], o.mom2[i]
		if a.err != nil {
			break
		}
		a.inplace("lerp_", m1.Lerp_(g, o.c1))
		a.inplace("lerp_", m2.Lerp_(a.mul(g, g), o.c2))
		if !move {
			continue
		}
		d := a.sqrt(m2)
		if a.err != nil {
			break
		}
		a.inplace("mul_", d.MulScalar_(sa))
		a.inplace("add_", d.AddScalar_(sb))
		if m.specs[i].Decay && o.cfg.WeightDecay > 0 {
			a.inplace("mul_", p.MulScalar_(decay))
		}
		a.inplace("addcdiv_", p.Addcdiv_(m1, d))
	}
	return gnorm, a.err
}

// momentValues copies the moments out (first then second). Torch thread.
func (o *Optimizer) momentValues() ([][]float32, error) {
	var vals [][]float32
	n := len(o.m.specs)
	for i, x := range append(append([]*ts.Tensor(nil), o.mom1...), o.mom2...) {
		v, err := float32Values(x, o.m.dtype, int(o.m.specs[i%n].numel()))
		if err != nil {
			return nil, fmt.Errorf("dragon: reading the AdamW moments: %w", err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// zeroGrads zeroes every parameter's gradient. Torch thread.
func (m *Model) zeroGrads() {
	for _, p := range m.params {
		g, err := p.Grad(false)
		if err != nil {
			continue
		}
		if ok, err := g.Defined(); err == nil && ok {
			g.Zero_()
		}
		g.Drop()
	}
}

// WriteCheckpoint writes everything an exact resume of the optimizer needs
// as one checkpoint file: the model, AdamW's moments, the step count,
// libtorch's RNG state, and state, the caller's own resume state as JSON
// (nil for none; a policy-gradient stage's step, seeds, curves' cursor).
// Runtime.ReadCheckpoint reads the model from it, Runtime.ResumeOptimizer
// the whole optimizer.
func (o *Optimizer) WriteCheckpoint(w io.Writer, state json.RawMessage) error {
	if o.closed {
		return ErrClosed
	}
	if state != nil && !json.Valid(state) {
		return fmt.Errorf("dragon: writing the optimizer checkpoint: the caller's state is not valid JSON")
	}
	st := &optimState{Config: o.cfg, Step: o.step, State: state}
	var vals [][]float32
	err := o.m.do(func() error {
		var err error
		if vals, err = o.m.paramValues(); err != nil {
			return err
		}
		mom, err := o.momentValues()
		if err != nil {
			return err
		}
		vals = append(vals, mom...)
		st.TorchRNG, err = torchrt.RNGState()
		return err
	})
	if err != nil {
		return err
	}
	return writeCheckpoint(w, &checkpoint{Config: o.m.cfg, Tokenizer: o.m.tok, Optim: st, Values: vals})
}

// ResumeOptimizer restores an optimizer and its model from a checkpoint
// written by Optimizer.WriteCheckpoint, with libtorch's RNG state, and
// returns the caller's state stored with it. The model is new (in training
// mode: set the mode the run used); close it after the optimizer.
func (r *Runtime) ResumeOptimizer(rd io.Reader) (*Optimizer, json.RawMessage, error) {
	ck, err := readCheckpoint(rd)
	if err != nil {
		return nil, nil, err
	}
	if ck.Optim == nil {
		what := "a model only"
		if ck.Train != nil {
			what = "a trainer's state (Runtime.ResumeTrainer reads it)"
		}
		return nil, nil, fmt.Errorf("dragon: resuming an optimizer: the checkpoint holds %s", what)
	}
	m, err := r.modelFrom(ck)
	if err != nil {
		return nil, nil, err
	}
	n := len(m.specs)
	o, err := newOptimizer(m, ck.Optim.Config, ck.Optim.Step, ck.Values[n:])
	if err == nil {
		err = m.do(func() error { return torchrt.SetRNGState(ck.Optim.TorchRNG) })
		if err != nil {
			o.Close()
		}
	}
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("dragon: resuming an optimizer: %w", err)
	}
	return o, ck.Optim.State, nil
}
