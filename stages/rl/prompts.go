package rl

import (
	"context"

	"dragonx/dragon/grpo"
	"dragonx/kernels/vocab"
	"dragonx/stages/sft"
)

// grammars returns the grammars of the training tasks' workloads (built on
// first use), keeping within the GPU's thread limits with gpu_limits:
// the prompts' constraint and, in decisions format, the rewarder's
// expansion of the samples share them. They are built inside a step,
// which is never cut short: an interruption must not fail a row (the step
// would differ from an uninterrupted run's).
func grammars(ctx context.Context, sp Spec, voc *vocab.Vocab) func(Task) *sft.LazyGrammar {
	gs := sft.NewGrammars(context.WithoutCancel(ctx), voc, sp.Seed)
	return func(t Task) *sft.LazyGrammar { return gs.Of(t.Spec, "task "+t.ID, sp.GPULimits) }
}

// prompts builds the trainer's prompt list from the mixed tasks: each
// prompt's MaxNew is max_new or what its prompt leaves of the context; a
// prompt that leaves no room is dropped. With constrained, each prompt
// gets its workload's grammar (grammarOf) as the constraint of the task's
// format (sft.Format.Constraint).
func prompts(sp Spec, tasks []Task, grammarOf func(Task) *sft.LazyGrammar, ctxLen int) ([]grpo.Prompt, int) {
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
			p.Constraint = t.Format.Constraint(grammarOf(t))
		}
		out = append(out, p)
	}
	return out, len(dropped)
}
