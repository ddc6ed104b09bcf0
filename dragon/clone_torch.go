//go:build torch

package dragon

import (
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// SetTraining switches the model between training mode (the default:
// Trainer steps and Score with gradients apply dropout) and eval mode (no
// dropout anywhere). Sampling, Logits, held-out losses and ScoreNoGrad never
// apply dropout. Policy-gradient training usually runs in eval mode, so
// that the log-probabilities it trains on are those the sampler drew from.
func (m *Model) SetTraining(on bool) { m.training = on && !m.frozen }

// Training reports whether the model is in training mode (see SetTraining).
func (m *Model) Training() bool { return m.training }

// Frozen reports whether Freeze was called.
func (m *Model) Frozen() bool { return m.frozen }

// Freeze makes the model a fixed reference: its parameters stop requiring
// gradients, it is put in eval mode for good, and NewOptimizer, NewTrainer
// and Score (with gradients) refuse it. It cannot be undone.
func (m *Model) Freeze() error {
	err := m.do(func() error {
		for i, p := range m.params {
			if err := p.RequiresGrad_(false); err != nil {
				return fmt.Errorf("dragon: freezing %s: %w", m.specs[i].Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.frozen, m.training = true, false
	return nil
}

// Clone returns an independent copy of the model: same config, tokenizer
// identity, mode and weights (bit for bit), in new tensors. Updating either
// leaves the other as it is. A clone of a frozen model is not frozen;
// Clone then Freeze makes the frozen reference of policy-gradient training.
func (m *Model) Clone() (*Model, error) {
	var vals [][]float64
	var vals32 [][]float32
	err := m.do(func() error {
		var err error
		if m.dtype == gotch.Double {
			vals = make([][]float64, len(m.params))
			for i, t := range m.params {
				if vals[i], err = float64Values(t, m.dtype, int(m.specs[i].numel())); err != nil {
					return fmt.Errorf("dragon: cloning %s: %w", m.specs[i].Name, err)
				}
			}
			return nil
		}
		vals32, err = m.paramValues()
		return err
	})
	if err != nil {
		return nil, err
	}
	c, err := m.rt.newModel(m.cfg, m.dtype, func(i int, s paramSpec) (*ts.Tensor, error) {
		if vals != nil {
			return newTensor(unsafe.Pointer(&vals[i][0]), len(vals[i]), s.Shape, gotch.Double)
		}
		return float32Tensor(vals32[i], s.Shape)
	})
	if err != nil {
		return nil, err
	}
	c.tok = m.tok
	c.training = m.training || m.frozen
	return c, nil
}
