package sft

import (
	"context"
	"fmt"
	"sync"

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

// GPULimitsWithoutGrammar is the diagnostic of a stage (rl, bench) that
// sets gpu_limits = true without constrained = true.
const GPULimitsWithoutGrammar = "gpu_limits = true needs constrained = true: the GPU's thread limits are kept by the script grammar the samples are drawn under."

// Grammars are the LazyGrammars of the workloads a stage samples for, one
// per workload (by its hash) and thread-limits choice, made on first use:
// the constraints and the expansion of decision streams (Format.Expand)
// share them. It is safe for concurrent use.
type Grammars struct {
	ctx  context.Context
	voc  *vocab.Vocab
	seed int64

	mu sync.Mutex
	m  map[grammarKey]*LazyGrammar
}

// grammarKey names a workload's grammar with or without the thread limits.
type grammarKey struct {
	hash      string
	gpuLimits bool
}

// NewGrammars returns an empty set of grammars, each to be built with ctx
// and seed in vocabulary voc.
func NewGrammars(ctx context.Context, voc *vocab.Vocab, seed int64) *Grammars {
	return &Grammars{ctx: ctx, voc: voc, seed: seed, m: map[grammarKey]*LazyGrammar{}}
}

// Of returns the grammar of spec's scripts, within the GPU's thread limits
// with gpuLimits (GrammarOptions); name says whose it is in errors (the
// first caller's name for the workload).
func (gs *Grammars) Of(spec *workload.Spec, name string, gpuLimits bool) *LazyGrammar {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	k := grammarKey{spec.Hash(), gpuLimits}
	lg, ok := gs.m[k]
	if !ok {
		lg = NewLazyGrammar(gs.ctx, spec, name, gs.voc, gs.seed, GrammarOptions(gpuLimits)...)
		gs.m[k] = lg
	}
	return lg
}
