//go:build torch

package dragon

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/sugarme/gotch/ts"

	"dragonx/internal/progress"
	"dragonx/internal/torchrt"
)

// Trainer trains a Model on prompt/target examples: next-token
// cross-entropy on the target tokens only, length-bucketed micro-batches,
// gradient accumulation, global-norm clipping, AdamW (decoupled weight decay
// on matrices only) with a warmup and cosine schedule, and a held-out loss.
// Its state (weights, AdamW moments, step, data cursor, RNG) can be
// checkpointed and resumed exactly.
//
// A Trainer is not safe for concurrent use. The model stays the caller's:
// close the trainer, then the model.
type Trainer struct {
	m           *Model
	cfg         TrainConfig
	train, eval []Example
	evalPlan    [][]int
	plan        [][]int // micro-batches of epoch st.Epoch
	st          trainState
	opt         *Optimizer // its step count is st.Step
	a           arena
	now         func() time.Time
	closed      bool
}

// NewTrainer prepares to train m with cfg on train, measuring the loss on
// eval (which may be empty). Examples must fit the model's context and
// vocabulary.
func NewTrainer(m *Model, cfg TrainConfig, train, eval []Example) (*Trainer, error) {
	t, err := newTrainer(m, cfg, train, eval)
	if err != nil {
		return nil, err
	}
	if err := m.do(func() error { torchrt.ManualSeed(uint64(cfg.Seed)); return nil }); err != nil {
		return nil, err
	}
	if t.opt, err = NewOptimizer(m, cfg.AdamW()); err != nil {
		return nil, err
	}
	return t, nil
}

func newTrainer(m *Model, cfg TrainConfig, train, eval []Example) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(train) == 0 {
		return nil, fmt.Errorf("dragon: no training examples")
	}
	if m.frozen {
		return nil, fmt.Errorf("dragon: training a frozen model")
	}
	if err := checkExamples(m.cfg, "training", train); err != nil {
		return nil, err
	}
	if err := checkExamples(m.cfg, "held-out", eval); err != nil {
		return nil, err
	}
	t := &Trainer{
		m: m, cfg: cfg, train: train, eval: eval,
		evalPlan: planEval(eval, cfg.Batch),
		st:       trainState{Config: cfg, Data: examplesDigest(train)},
		now:      time.Now,
	}
	t.plan = planEpoch(train, cfg.Batch, cfg.Bucket, cfg.Seed, 0)
	return t, nil
}

// Model returns the model being trained.
func (t *Trainer) Model() *Model { return t.m }

// Step returns the number of optimizer steps done.
func (t *Trainer) Step() int { return t.st.Step }

// Close frees the optimizer state (not the model).
func (t *Trainer) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	err := t.m.do(func() error { t.a.reset(); return nil })
	if t.opt != nil {
		if cerr := t.opt.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// nextBatch returns the next micro-batch's example indices, moving to the
// next epoch's plan when one ends.
func (t *Trainer) nextBatch() []int {
	if t.st.Next >= len(t.plan) {
		t.st.Epoch++
		t.st.Next = 0
		t.plan = planEpoch(t.train, t.cfg.Batch, t.cfg.Bucket, t.cfg.Seed, t.st.Epoch)
	}
	idx := t.plan[t.st.Next]
	t.st.Next++
	return idx
}

// TrainStep runs one optimizer step over Accum micro-batches.
func (t *Trainer) TrainStep(ctx context.Context) (StepStats, error) {
	if t.closed {
		return StepStats{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return StepStats{}, err
	}
	start := t.now()
	mbs := make([]microBatch, t.cfg.Accum)
	stats := StepStats{LR: t.opt.cfg.LRAt(t.opt.step)}
	for i := range mbs {
		mbs[i] = makeMicroBatch(t.train, t.nextBatch(), trainPadding(t.m.cfg.Context))
		stats.Tokens += mbs[i].Tokens
		stats.Targets += len(mbs[i].Targets)
	}
	var lossSum float64
	err := t.m.do(func() error {
		var err error
		lossSum, stats.GradNorm, err = t.step(mbs, stats.Targets)
		return err
	})
	if err != nil {
		return StepStats{}, fmt.Errorf("dragon: step %d: %w", t.st.Step+1, err)
	}
	t.st.Step++
	t.st.Tokens += int64(stats.Tokens)
	stats.Step = t.st.Step
	stats.Loss = lossSum / float64(stats.Targets)
	stats.Elapsed = t.now().Sub(start)
	return stats, nil
}

// step accumulates the gradients of mbs (the loss normalised by the
// step's target count, so accumulation equals one large batch), then clips
// and updates through the optimizer. It returns the summed loss and the
// gradient norm before clipping. Torch thread.
func (t *Trainer) step(mbs []microBatch, targets int) (lossSum, gnorm float64, err error) {
	a := &t.a
	defer a.reset()
	inv := ts.FloatScalar(1 / float64(targets))
	defer inv.Drop()
	for i := range mbs {
		loss := t.m.lossSum(a, &mbs[i], t.m.training)
		a.backward(a.mulScalar(loss, inv))
		if a.err != nil {
			t.m.zeroGrads()
			return 0, 0, a.err
		}
		v, err := scalarValue(loss, t.m.dtype)
		if err != nil {
			t.m.zeroGrads()
			return 0, 0, err
		}
		lossSum += v
		a.free()
	}
	st, err := t.opt.stepLocked()
	return lossSum, st.GradNorm, err
}

// Eval returns the mean cross-entropy per target token of the held-out
// examples (NaN when there are none), without dropout or autograd.
func (t *Trainer) Eval(ctx context.Context) (float64, error) {
	if t.closed {
		return 0, ErrClosed
	}
	if len(t.eval) == 0 {
		return math.NaN(), nil
	}
	var sum float64
	var n int
	for _, idx := range t.evalPlan {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		mb := makeMicroBatch(t.eval, idx, trainPadding(t.m.cfg.Context))
		err := t.m.do(func() error {
			return noGrad(func() error {
				a := &t.a
				defer a.reset()
				loss := t.m.lossSum(a, &mb, false)
				if a.err != nil {
					return a.err
				}
				v, err := scalarValue(loss, t.m.dtype)
				sum += v
				return err
			})
		})
		if err != nil {
			return 0, fmt.Errorf("dragon: held-out loss: %w", err)
		}
		n += len(mb.Targets)
	}
	return sum / float64(n), nil
}

// curveHeader is the loss curve's CSV header; eval_loss is empty on steps
// without a held-out measurement.
var curveHeader = []string{"step", "lr", "loss", "eval_loss", "grad_norm", "tokens", "tokens_per_s", "elapsed_s"}

// Run trains until the configured number of steps, measuring the held-out
// loss every EvalEvery steps and after the last. It reports progress to rep
// (steps, with tokens/s and losses in the note; the Reporter computes the
// ETA) and writes the loss curve to curve as CSV (header first, one row per
// step; nil writes nothing). A resumed trainer continues where its
// checkpoint left off, with the same step numbers. Cancelling ctx stops it
// between steps; the trainer can then be checkpointed.
func (t *Trainer) Run(ctx context.Context, rep progress.Reporter, curve io.Writer) (RunSummary, error) {
	if rep == nil {
		rep = progress.Nop{}
	}
	var cw *csv.Writer
	if curve != nil {
		cw = csv.NewWriter(curve)
		cw.Write(curveHeader)
	}
	start := t.now()
	sum := RunSummary{Loss: math.NaN(), EvalLoss: math.NaN()}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 7, 64) }
	for t.st.Step < t.cfg.Steps {
		st, err := t.TrainStep(ctx)
		if err != nil {
			return sum, err
		}
		sum.Tokens += int64(st.Tokens)
		sum.Loss = st.Loss
		elapsed := t.now().Sub(start)
		eval := ""
		if (t.cfg.EvalEvery > 0 && st.Step%t.cfg.EvalEvery == 0) || st.Step == t.cfg.Steps {
			if len(t.eval) > 0 {
				if sum.EvalLoss, err = t.Eval(ctx); err != nil {
					return sum, err
				}
				eval = f(sum.EvalLoss)
			}
		}
		tps := float64(sum.Tokens) / max(elapsed.Seconds(), 1e-9)
		if cw != nil {
			cw.Write([]string{strconv.Itoa(st.Step), f(st.LR), f(st.Loss), eval, f(st.GradNorm),
				strconv.Itoa(st.Tokens), f(tps), f(elapsed.Seconds())})
			cw.Flush()
			if err := cw.Error(); err != nil {
				return sum, fmt.Errorf("dragon: writing the loss curve: %w", err)
			}
		}
		note := fmt.Sprintf("loss %.4f", st.Loss)
		if !math.IsNaN(sum.EvalLoss) {
			note += fmt.Sprintf(" eval %.4f", sum.EvalLoss)
		}
		note += fmt.Sprintf(" %.0f tok/s", tps)
		rep.Report(progress.Event{Done: int64(st.Step), Total: int64(t.cfg.Steps), Unit: "steps", Note: note})
	}
	sum.Steps = t.st.Step
	sum.Elapsed = t.now().Sub(start)
	return sum, nil
}

// WriteCheckpoint writes everything an exact resume needs as one
// checkpoint file: the model, AdamW's moments, the step, the data cursor and
// libtorch's RNG state. Runtime.ReadCheckpoint reads the model from it,
// Runtime.ResumeTrainer the whole trainer.
func (t *Trainer) WriteCheckpoint(w io.Writer) error {
	if t.closed {
		return ErrClosed
	}
	var vals [][]float32
	st := t.st
	err := t.m.do(func() error {
		var err error
		if vals, err = t.m.paramValues(); err != nil {
			return err
		}
		mom, err := t.opt.momentValues()
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
	return writeCheckpoint(w, &checkpoint{Config: t.m.cfg, Tokenizer: t.m.tok, Train: &st, Values: vals})
}

// ResumeTrainer restores a trainer from a checkpoint written by
// Trainer.WriteCheckpoint. train must be the same examples (the checkpoint
// records their digest); eval may differ. The training config is the
// checkpoint's. The returned trainer's Model is new: close it after the
// trainer.
func (r *Runtime) ResumeTrainer(rd io.Reader, train, eval []Example) (*Trainer, error) {
	ck, err := readCheckpoint(rd)
	if err != nil {
		return nil, err
	}
	if ck.Train == nil {
		if ck.Optim != nil {
			return nil, fmt.Errorf("dragon: resuming: the checkpoint holds an optimizer's state, not a trainer's (Runtime.ResumeOptimizer reads it)")
		}
		return nil, fmt.Errorf("dragon: resuming: the checkpoint holds a model only (no training state)")
	}
	if d := examplesDigest(train); d != ck.Train.Data {
		return nil, fmt.Errorf("dragon: resuming: the training examples differ from the checkpoint's (%s, checkpoint %s)", d, ck.Train.Data)
	}
	m, err := r.modelFrom(ck)
	if err != nil {
		return nil, err
	}
	t, err := newTrainer(m, ck.Train.Config, train, eval)
	if err != nil {
		m.Close()
		return nil, err
	}
	t.st = *ck.Train
	t.st.TorchRNG = nil
	t.plan = planEpoch(train, t.cfg.Batch, t.cfg.Bucket, t.cfg.Seed, t.st.Epoch)
	n := len(m.specs)
	if t.opt, err = newOptimizer(m, t.cfg.AdamW(), t.st.Step, ck.Values[n:]); err != nil {
		t.Close()
		m.Close()
		return nil, fmt.Errorf("dragon: resuming: %w", err)
	}
	if err = m.do(func() error { return torchrt.SetRNGState(ck.Train.TorchRNG) }); err != nil {
		t.Close()
		m.Close()
		return nil, fmt.Errorf("dragon: resuming: %w", err)
	}
	return t, nil
}
