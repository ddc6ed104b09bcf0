package rl

import (
	"context"

	"dragonx/dragon/grpo"
	"dragonx/kernels/vocab"
	"dragonx/stages/sft"
)

// prompts builds the trainer's prompt list from the mixed tasks: each
// prompt's MaxNew is max_new or what its prompt leaves of the context; a
// prompt that leaves no room is dropped. With constrained, each prompt
// gets its workload's grammar (one per workload, built on first use),
// keeping within the GPU's thread limits with gpu_limits.
func prompts(ctx context.Context, sp Spec, tasks []Task, voc *vocab.Vocab, ctxLen int) ([]grpo.Prompt, int) {
	grammars := map[string]*sft.LazyGrammar{}
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
				lg = sft.NewLazyGrammar(context.WithoutCancel(ctx), t.Spec, "task "+t.ID, voc, sp.Seed, sft.GrammarOptions(sp.GPULimits)...)
				grammars[key] = lg
			}
			p.Constraint = sft.GrammarConstraint(lg)
		}
		out = append(out, p)
	}
	return out, len(dropped)
}
