package grpo

import (
	"fmt"
	"math"

	"dragonx/dragon"
)

// Term is one sampled completion's part of the GRPO loss: its advantage,
// its weight in the batch and the per-token log-probabilities of the policy
// that sampled it (Old) and of the frozen reference (Ref).
type Term struct {
	// Advantage is the completion's group-normalised reward.
	Advantage float64
	// Weight is the completion's share of the batch: 1/(groups × scored
	// samples of its group), so that the loss is a mean over groups of a
	// mean over samples.
	Weight float64
	// Old[j] is log π_old(token j); Ref[j] is log π_ref(token j) (nil when
	// the loss has no KL term, Beta = 0).
	Old, Ref []float64
}

// LossStats are the by-products of one evaluation of the loss, averaged
// like the loss (token mean per completion, weighted by Term.Weight and
// normalised by the sum of the weights).
type LossStats struct {
	// KL is the k3 estimate of KL(π‖π_ref) (0 without Ref).
	KL float64
	// ClipFrac is the share of tokens whose clipped branch was taken (no
	// gradient from the ratio).
	ClipFrac float64
	// Ratio is the mean of π/π_old; RatioDev the largest |π/π_old - 1| of
	// any token.
	Ratio, RatioDev float64
}

// Objective is the clipped GRPO objective with a k3 KL penalty.
type Objective struct {
	Epsilon, Beta float64
}

// Loss evaluates the GRPO loss of terms at the policy's log-probabilities
// logProbs (logProbs[i][j] for token j of term i) and its derivatives:
//
//	L = - Σ_i w_i · (1/T_i) Σ_j [ min(ρ_ij·A_i, clip(ρ_ij, 1-ε, 1+ε)·A_i) - β·k3_ij ]
//	ρ_ij = exp(logp_ij - old_ij),  k3_ij = exp(ref_ij - logp_ij) - (ref_ij - logp_ij) - 1
//
// dL/dlogp_ij = -(w_i/T_i)·(ρ_ij·A_i·[unclipped branch taken] - β·(1 - exp(ref_ij - logp_ij))).
// The unclipped branch is taken when ρ·A ≤ clip(ρ)·A (ties, e.g. A = 0 or
// ρ inside the range, count as unclipped).
func (o Objective) Loss(terms []Term, logProbs [][]float64) (float64, [][]float64, LossStats, error) {
	var st LossStats
	if len(logProbs) != len(terms) {
		return 0, nil, st, fmt.Errorf("grpo: loss: %d log-prob rows for %d terms", len(logProbs), len(terms))
	}
	var loss, wsum, kl, clipped, ratio float64
	d := make([][]float64, len(terms))
	for i, tm := range terms {
		lp := logProbs[i]
		n := len(lp)
		if n == 0 || len(tm.Old) != n || (o.Beta != 0 && len(tm.Ref) != n) || (tm.Ref != nil && len(tm.Ref) != n) {
			return 0, nil, st, fmt.Errorf("grpo: loss: term %d: %d log-probs, %d old, %d reference", i, n, len(tm.Old), len(tm.Ref))
		}
		d[i] = make([]float64, n)
		c := tm.Weight / float64(n)
		var obj, tkl, tclip, trat float64
		for j, x := range lp {
			r := math.Exp(x - tm.Old[j])
			rc := min(max(r, 1-o.Epsilon), 1+o.Epsilon)
			un, cl := r*tm.Advantage, rc*tm.Advantage
			var g float64
			if un <= cl {
				obj += un
				g = un
			} else {
				obj += cl
				tclip++
			}
			if tm.Ref != nil {
				dr := tm.Ref[j] - x
				e := math.Exp(dr)
				k3 := e - dr - 1
				tkl += k3
				obj -= o.Beta * k3
				g -= o.Beta * (1 - e)
			}
			trat += r
			st.RatioDev = max(st.RatioDev, math.Abs(r-1))
			d[i][j] = -c * g
		}
		loss -= c * obj
		wsum += tm.Weight
		kl += tm.Weight * tkl / float64(n)
		clipped += tm.Weight * tclip / float64(n)
		ratio += tm.Weight * trat / float64(n)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, nil, st, fmt.Errorf("grpo: loss: not finite (%v)", loss)
	}
	if wsum > 0 {
		st.KL, st.ClipFrac, st.Ratio = kl/wsum, clipped/wsum, ratio/wsum
	}
	return loss, d, st, nil
}

// LossFunc is Loss as a dragon.LossFunc (for Optimizer.Minimize).
func (o Objective) LossFunc(terms []Term) dragon.LossFunc {
	return func(logProbs [][]float64) (float64, [][]float64, error) {
		l, d, _, err := o.Loss(terms, logProbs)
		return l, d, err
	}
}

// Advantages normalises the rewards of one group: (r - mean)/(std + 1e-6)
// with the population standard deviation (divided by G). A group whose
// rewards are all equal carries no signal: ok is false and it is skipped.
func Advantages(rewards []float64) (adv []float64, ok bool) {
	if len(rewards) == 0 {
		return nil, false
	}
	lo, hi := rewards[0], rewards[0]
	var mean float64
	for _, r := range rewards {
		lo, hi = min(lo, r), max(hi, r)
		mean += r
	}
	if lo == hi {
		return nil, false
	}
	mean /= float64(len(rewards))
	var v float64
	for _, r := range rewards {
		v += (r - mean) * (r - mean)
	}
	std := math.Sqrt(v / float64(len(rewards)))
	adv = make([]float64, len(rewards))
	for i, r := range rewards {
		adv[i] = (r - mean) / (std + 1e-6)
	}
	return adv, true
}
