//go:build torch

package sft

import (
	"context"
	"fmt"
	"time"

	"dragonx/dragon"
	"dragonx/internal/progress"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
)

// eosID is <eos>, always id 1 in kernels/vocab.
const eosID = 1

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
// <eos>, at most max_new tokens) and turns it into text.
func evaluate(ctx context.Context, m *dragon.Model, voc *vocab.Vocab, held []HeldoutRecord, sp Spec, env *job.Env, logf func(string, ...any)) ([]SampleRecord, time.Duration, int, error) {
	tasks := heldoutTasks(held, sp.Eval.Tasks)
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
	start := time.Now()
	generated := 0
	opts := dragon.SampleOptions{MaxNew: sp.Eval.MaxNew, Stop: []int{eosID}, Seed: sp.Seed}
	for b := 0; b < len(todo); b += sampleBatch {
		idx := todo[b:min(b+sampleBatch, len(todo))]
		prompts := make([][]int, len(idx))
		for k, i := range idx {
			prompts[k] = tasks[i].Prompt
		}
		got, err := m.Sample(ctx, prompts, opts)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("sampling held-out tasks: %w", err)
		}
		for k, i := range idx {
			s := got[k]
			generated += len(s.Tokens)
			rec := &out[i]
			rec.Tokens, rec.Stopped = len(s.Tokens), s.Stopped
			ids := s.Tokens
			if s.Stopped {
				ids = ids[:len(ids)-1]
			}
			text, err := voc.Decode(ids)
			if err != nil {
				rec.DecodeError = err.Error()
			} else {
				rec.Script = text
			}
		}
		env.Progress.Report(progress.Event{Done: int64(b + len(idx)), Total: int64(len(todo)), Unit: "samples"})
	}
	el := time.Since(start)
	logf("sampled %d held-out tasks (%d skipped), %d tokens in %.1f s", len(todo), len(tasks)-len(todo), generated, el.Seconds())
	return out, el, generated, nil
}
