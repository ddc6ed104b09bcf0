package sft

import (
	"context"
	"fmt"
	"sync"

	"dragonx/dragon"
	"dragonx/kernels/grammar"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// LazyGrammar builds a workload's script grammar (kernels/grammar) on first
// use: a run samples a few of many workloads, and building every design
// space up front would cost minutes at the paper's scale. It is shared by
// the stage kinds that sample under the grammar (rl's training samples,
// the held-out evaluation with eval.constrained).
type LazyGrammar struct {
	ctx  context.Context
	spec *workload.Spec
	name string
	voc  *vocab.Vocab
	seed int64
	opts []grammar.Option

	mu  sync.Mutex
	g   *grammar.Grammar
	err error
}

// NewLazyGrammar returns the grammar of spec's scripts, built with ctx and
// opts (grammar.WithThreadLimits) on the first Get; name says whose grammar
// it is in errors (e.g. "task 3").
func NewLazyGrammar(ctx context.Context, spec *workload.Spec, name string, voc *vocab.Vocab, seed int64, opts ...grammar.Option) *LazyGrammar {
	return &LazyGrammar{ctx: ctx, spec: spec, name: name, voc: voc, seed: seed, opts: opts}
}

// GrammarOptions returns the grammar options of a stage's attributes:
// grammar.WithThreadLimits with gpu_limits = true.
//
// It is gpu_limits' only use, so the stage kinds refuse gpu_limits
// without constrained, saying GPULimitsWithoutGrammar.
func GrammarOptions(gpuLimits bool) []grammar.Option {
	if gpuLimits {
		return []grammar.Option{grammar.WithThreadLimits()}
	}
	return nil
}

// Get builds the grammar on its first call and returns it, or why it could
// not be built (the same error on every call).
func (l *LazyGrammar) Get() (*grammar.Grammar, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.g == nil && l.err == nil {
		f, err := l.spec.Build()
		if err == nil {
			l.g, err = grammar.New(l.ctx, f, l.voc, l.seed, l.opts...)
		}
		if err != nil {
			l.err = fmt.Errorf("the grammar of %s: %w", l.name, err)
		}
	}
	return l.g, l.err
}

// GrammarConstraint returns a row constraint following the script grammar
// of lg's workload, one state per row (a row's first call, with nothing
// generated, starts its state afresh).
func GrammarConstraint(lg *LazyGrammar) dragon.RowConstraint {
	var mu sync.Mutex
	states := map[int]*grammar.State{}
	return func(row int, _, generated []int, allow []bool) error {
		g, err := lg.Get()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		st := states[row]
		if st == nil || len(generated) == 0 || len(generated) < len(st.Tokens()) {
			st = g.Start()
			states[row] = st
		}
		next, err := st.Next(generated)
		if err != nil {
			return err
		}
		ok := make([]bool, len(allow))
		for _, t := range next {
			if t >= 0 && t < len(ok) {
				ok[t] = true
			}
		}
		for i := range allow {
			allow[i] = allow[i] && ok[i]
		}
		return nil
	}
}

// GPULimitsWithoutGrammar is the diagnostic of a stage (rl, bench) that
// sets gpu_limits = true without constrained = true.
const GPULimitsWithoutGrammar = "gpu_limits = true needs constrained = true: the GPU's thread limits are kept by the script grammar the samples are drawn under."
