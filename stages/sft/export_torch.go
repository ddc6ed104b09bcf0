//go:build torch

package sft

import (
	"context"
	"time"

	"dragonx/dragon"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/stages/job"
)

// The sft job's helpers that the other stage kinds training the model (rl)
// share.

// Evaluate samples one greedy continuation per held-out task of ev (at
// most context tokens in all, seeded with seed) and judges it, as the sft
// stage's held-out metrics do.
func Evaluate(ctx context.Context, m *dragon.Model, voc *vocab.Vocab, held []HeldoutRecord, ev EvalSpec, seed int64, context int, env *job.Env, logf func(string, ...any)) ([]SampleRecord, []verdict.Phase, time.Duration, int, error) {
	sp := Spec{Eval: ev, Seed: seed}
	sp.Model.Context = context
	return evaluate(ctx, m, voc, held, sp, env, logf)
}
