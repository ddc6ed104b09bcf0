//go:build torch

package sft

import (
	"context"
	"fmt"
	"os"
	"time"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages/job"
)

// sampleBatch is how many held-out prompts are decoded together.
const sampleBatch = 8

// heldoutTasks picks the first n construction tasks and the first n
// refinement prompts of heldout.jsonl, in its order.
func heldoutTasks(held []HeldoutRecord, n int) []HeldoutRecord {
	var cons, ref []HeldoutRecord
	for _, h := range held {
		switch {
		case h.Task == "construction" && len(cons) < n:
			cons = append(cons, h)
		case h.Task == "refinement" && len(ref) < n:
			ref = append(ref, h)
		}
	}
	return append(cons, ref...)
}

// evaluate samples one greedy continuation per held-out task (stopping at
// <eos>, at most max_new tokens; under the workload's script grammar with
// eval.constrained) and judges it (a decisions-format one as the script
// its stream expands into). It returns the samples, the
// judge's phases, the sampling time and the tokens generated.
func evaluate(ctx context.Context, m *dragon.Model, voc *vocab.Vocab, held []HeldoutRecord, sp Spec, env *job.Env, logf func(string, ...any)) ([]SampleRecord, []verdict.Phase, time.Duration, int, error) {
	tasks := heldoutTasks(held, sp.Eval.Tasks)
	gateDir, err := os.MkdirTemp("", "dragonx-sft-gate-")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	defer os.RemoveAll(gateDir)
	jopts, err := judgeOptions(sp.Eval, voc, sp.Seed, gateDir)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	judges := map[string]*judge.Judge{}
	specs := map[string]*workload.Spec{}
	specOf := func(h HeldoutRecord) (*workload.Spec, error) {
		if s, ok := specs[string(h.Workload)]; ok {
			return s, nil
		}
		s, err := workload.Parse(h.Workload)
		if err != nil {
			return nil, fmt.Errorf("held-out %s task %d: %w", h.Task, h.Index, err)
		}
		specs[string(h.Workload)] = s
		return s, nil
	}
	judgeOf := func(h HeldoutRecord) (*judge.Judge, error) {
		if j, ok := judges[string(h.Workload)]; ok {
			return j, nil
		}
		spec, err := specOf(h)
		if err != nil {
			return nil, err
		}
		j, err := judge.New(spec, jopts)
		if err != nil {
			return nil, fmt.Errorf("held-out %s task %d: %w", h.Task, h.Index, err)
		}
		judges[string(h.Workload)] = j
		return j, nil
	}
	// With eval.constrained, each row samples under its workload's script
	// grammar, built once per workload on first use, with the constraint
	// rl's training samples use; in decisions format the grammar also
	// expands the streams (constrained or not) into scripts.
	format, err := HeldoutFormat(held)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	grammars := NewGrammars(ctx, voc, sp.Seed)
	grammarOf := func(h HeldoutRecord) (*LazyGrammar, error) {
		spec, err := specOf(h)
		if err != nil {
			return nil, err
		}
		return grammars.Of(spec, fmt.Sprintf("held-out %s task %d", h.Task, h.Index), sp.Eval.GPULimits), nil
	}
	// Every judge runs the same phases (same options); none without tasks.
	var phases []verdict.Phase

	out := make([]SampleRecord, len(tasks))
	var todo []int
	for i, h := range tasks {
		out[i] = SampleRecord{Task: h.Task, Index: h.Index, Hash: h.Hash, Family: h.Family, PromptTokens: len(h.Prompt)}
		if len(h.Prompt) >= sp.Model.Context {
			out[i].Skipped = fmt.Sprintf("the prompt of %d tokens leaves no room in the context of %d", len(h.Prompt), sp.Model.Context)
			continue
		}
		todo = append(todo, i)
	}
	// A batch generates at most as many tokens as its longest prompt leaves
	// room for in the context, so prompts with room for max_new tokens are
	// batched, and the others sampled alone: every task gets min(max_new,
	// its own room), whatever the batch it is in.
	var batches [][]int
	var full []int
	for _, i := range todo {
		if len(tasks[i].Prompt)+sp.Eval.MaxNew-1 <= sp.Model.Context {
			full = append(full, i)
		} else {
			batches = append(batches, []int{i})
		}
	}
	for b := 0; b < len(full); b += sampleBatch {
		batches = append(batches, full[b:min(b+sampleBatch, len(full))])
	}
	var sampleTime time.Duration
	generated, done := 0, 0
	for _, idx := range batches {
		opts := dragon.SampleOptions{MaxNew: sp.Eval.MaxNew, Stop: []int{eosID}, Seed: sp.Seed}
		prompts := make([][]int, len(idx))
		rowCons := make([]dragon.RowConstraint, len(idx))
		for k, i := range idx {
			prompts[k] = tasks[i].Prompt
			if sp.Eval.Constrained {
				lg, err := grammarOf(tasks[i])
				if err != nil {
					return nil, nil, 0, 0, err
				}
				rowCons[k] = format.Constraint(lg)
			}
		}
		if sp.Eval.Constrained {
			opts.RowConstraint = func(row int, prompt, generated []int, allow []bool) error {
				return rowCons[row](row, prompt, generated, allow)
			}
		}
		start := time.Now()
		got, err := m.Sample(ctx, prompts, opts)
		if err != nil {
			return nil, nil, 0, 0, fmt.Errorf("sampling held-out tasks: %w", err)
		}
		sampleTime += time.Since(start)
		for k, i := range idx {
			s := got[k]
			generated += len(s.Tokens)
			j, err := judgeOf(tasks[i])
			if err != nil {
				return nil, nil, 0, 0, err
			}
			var lg *LazyGrammar
			if format.Streams() {
				if lg, err = grammarOf(tasks[i]); err != nil {
					return nil, nil, 0, 0, err
				}
			}
			if err := out[i].judge(ctx, j, format, lg, voc, tasks[i], s); err != nil {
				return nil, nil, 0, 0, err
			}
			phases = j.Phases()
		}
		done += len(idx)
		env.Progress.Report(progress.Event{Done: int64(done), Total: int64(len(todo)), Unit: "samples"})
	}
	logf("sampled and judged %d held-out tasks (%d skipped): %d tokens in %.1f s of sampling", len(todo), len(tasks)-len(todo), generated, sampleTime.Seconds())
	return out, phases, sampleTime, generated, nil
}
