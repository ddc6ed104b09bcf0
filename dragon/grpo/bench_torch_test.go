//go:build torch

package grpo

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"dragonx/dragon"
)

// evenTokens rewards the share of even tokens: rewards that differ within
// a group, so every group is trained on.
type evenTokens struct{}

func (evenTokens) Reward(_ context.Context, _ Prompt, samples [][]int) ([]Reward, error) {
	out := make([]Reward, len(samples))
	for i, s := range samples {
		n := 0
		for _, x := range s {
			if x%2 == 0 {
				n++
			}
		}
		out[i].Total = float64(n) / float64(max(len(s), 1))
	}
	return out, nil
}

// BenchmarkStep times GRPO steps of P=4 prompts × G=8 samples of 128
// tokens (no stop token) after 128-token prompts on the 6.5M model
// (8 layers, width 256, context 512, vocabulary 512), μ=1 with the
// reference's KL: sampling, three scorings (old policy, reference, policy
// with gradients), backward and the AdamW step. Run it with
//
//	go test -tags=torch -run '^$' -bench Step -benchtime 3x ./dragon/grpo
func BenchmarkStep(b *testing.B) {
	rt := newRuntime(b)
	cfg := dragon.Config{Layers: 8, Width: 256, Heads: 8, Context: 512, Vocab: 512}
	m := newModel(b, rt, cfg, 1)
	m.SetTraining(false)
	ref := frozenClone(b, m)
	rng := rand.New(rand.NewPCG(1, 2))
	prompts := make([]Prompt, 4)
	for i := range prompts {
		p := Prompt{ID: string(rune('a' + i)), Tokens: make([]int, 128)}
		for j := range p.Tokens {
			p.Tokens[j] = 2 + rng.IntN(cfg.Vocab-2)
		}
		prompts[i] = p
	}
	gc := DefaultConfig()
	gc.Stop, gc.MaxNew = nil, 128
	tr, err := NewTrainer(m, ref, gc, prompts, evenTokens{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	b.ResetTimer()
	start := time.Now()
	var sample, score, update float64
	for range b.N {
		st, err := tr.Step(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if st.Updates != 1 {
			b.Fatalf("step %d made %d updates", st.Step, st.Updates)
		}
		sample += st.SampleSeconds / float64(b.N)
		score += st.ScoreSeconds / float64(b.N)
		update += st.UpdateSeconds / float64(b.N)
	}
	b.ReportMetric(sample, "sample-s/step")
	b.ReportMetric(score, "score-s/step")
	b.ReportMetric(update, "update-s/step")
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/step")
	b.ReportMetric(float64(b.N*4*8*128)/time.Since(start).Seconds(), "tok/s")
}
