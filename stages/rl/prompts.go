package rl

import (
	"context"
	"fmt"
	"sync"

	"dragonx/dragon"
	"dragonx/dragon/grpo"
	"dragonx/kernels/grammar"
	"dragonx/kernels/vocab"
)

// lazyGrammar builds a workload's script grammar on first use (a run
// draws a few of many tasks; building every workload's design space up
// front would cost minutes at the paper's scale).
type lazyGrammar struct {
	ctx  context.Context
	task Task
	voc  *vocab.Vocab
	seed int64

	mu  sync.Mutex
	g   *grammar.Grammar
	err error
}

func (l *lazyGrammar) get() (*grammar.Grammar, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.g == nil && l.err == nil {
		f, err := l.task.Spec.Build()
		if err == nil {
			l.g, err = grammar.New(l.ctx, f, l.voc, l.seed)
		}
		if err != nil {
			l.err = fmt.Errorf("the grammar of task %s: %w", l.task.ID, err)
		}
	}
	return l.g, l.err
}

// grammarConstraint returns a row constraint following the script grammar
// of lg's workload, one state per row of the group (a row's first call,
// with nothing generated, starts its state afresh).
func grammarConstraint(lg *lazyGrammar) dragon.RowConstraint {
	var mu sync.Mutex
	states := map[int]*grammar.State{}
	return func(row int, _, generated []int, allow []bool) error {
		g, err := lg.get()
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

// prompts builds the trainer's prompt list from the mixed tasks: each
// prompt's MaxNew is max_new or what its prompt leaves of the context; a
// prompt that leaves no room is dropped. With constrained, each prompt
// gets its workload's grammar (one per workload, built on first use).
func prompts(ctx context.Context, sp Spec, tasks []Task, voc *vocab.Vocab, ctxLen int) ([]grpo.Prompt, int) {
	grammars := map[string]*lazyGrammar{}
	var out []grpo.Prompt
	dropped := map[string]bool{}
	for _, t := range MixTasks(tasks, sp.ConstructionShare, sp.Seed) {
		room := ctxLen + 1 - len(t.Prompt)
		if room < 2 {
			dropped[t.ID] = true
			continue
		}
		p := grpo.Prompt{ID: t.ID, Tokens: t.Prompt, MaxNew: min(sp.GRPO.MaxNew, room)}
		if sp.Constrained {
			key := t.Spec.Hash()
			lg, ok := grammars[key]
			if !ok {
				// Built inside a step, which is never cut short: an
				// interruption must not fail a row (the step would differ
				// from an uninterrupted run's).
				lg = &lazyGrammar{ctx: context.WithoutCancel(ctx), task: t, voc: voc, seed: sp.Seed}
				grammars[key] = lg
			}
			p.Constraint = grammarConstraint(lg)
		}
		out = append(out, p)
	}
	return out, len(dropped)
}
