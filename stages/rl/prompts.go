package rl

import (
	"context"
	"math"

	"dragonx/dragon/grpo"
	"dragonx/kernels/vocab"
	"dragonx/stages/sft"
)

// grammarsOf returns the grammar of a training task's workload, keeping
// within the GPU's thread limits when limits is true.
type grammarsOf func(t Task, limits bool) *sft.LazyGrammar

// grammars returns the grammars of the training tasks' workloads (built on
// first use): the prompts' constraints and, in decisions format, the
// rewarder's expansion of the samples share them. They are built inside a
// step, which is never cut short: an interruption must not fail a row (the
// step would differ from an uninterrupted run's).
func grammars(ctx context.Context, sp Spec, voc *vocab.Vocab) grammarsOf {
	gs := sft.NewGrammars(context.WithoutCancel(ctx), voc, sp.Seed)
	return func(t Task, limits bool) *sft.LazyGrammar { return gs.Of(t.Spec, "task "+t.ID, limits) }
}

// spread reports whether item k (from 0) of a sequence is picked when a
// share of its items is, the picks spread evenly: MixTasks picks the
// construction tasks with it, prompts the grammar-only prompts of each kind.
func spread(share float64, k int) bool {
	return math.Floor(float64(k+1)*share) > math.Floor(float64(k)*share)
}

// prompts builds the trainer's prompt list from the mixed tasks: each
// prompt's MaxNew is max_new or what its prompt leaves of the context; a
// prompt that leaves no room is dropped. With constrained, each prompt
// gets its workload's grammar (grammarOf) as the constraint of the task's
// format (sft.Format.Constraint): with gpu_limits, within the GPU's thread
// limits, except for grammar_only_share of each kind's prompts (picked by
// spread), which sample under the script grammar alone.
func prompts(sp Spec, tasks []Task, grammarOf grammarsOf, ctxLen int) ([]grpo.Prompt, int) {
	var out []grpo.Prompt
	dropped := map[string]bool{}
	kept := map[string]int{} // prompts of each kind so far
	for _, t := range MixTasks(tasks, sp.ConstructionShare, sp.Seed) {
		room := ctxLen + 1 - len(t.Prompt)
		if room < 2 {
			dropped[t.ID] = true
			continue
		}
		p := grpo.Prompt{ID: t.ID, Tokens: t.Prompt, MaxNew: min(sp.GRPO.MaxNew, room)}
		if sp.Constrained {
			limits := sp.GPULimits && !spread(sp.GrammarOnlyShare, kept[t.Kind])
			p.Constraint = t.Format.Constraint(grammarOf(t, limits))
		}
		kept[t.Kind]++
		out = append(out, p)
	}
	return out, len(dropped)
}
