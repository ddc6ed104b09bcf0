//go:build torch

package dragon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The RL benchmarks use the 6.5M model of the sampling benchmark (8 layers,
// width 256, context 512). Run them with
//
//	go test -tags=torch -run '^$' -bench 'Score|GroupSample' -benchtime 3x ./dragon -args -dragon.threads=N
//
// tok/s counts the completion tokens scored or generated.

// BenchmarkScore scores 16 completions of 128 tokens after 128-token
// prompts: without gradients, and with gradients and a backward pass.
func BenchmarkScore(b *testing.B) {
	rt := newTestRuntime(b)
	m := newTestModel(b, rt, benchSampleConfig(), 1)
	m.SetTraining(false)
	rng := rand.New(rand.NewPCG(1, 2))
	var cs []Completion
	for range 16 {
		cs = append(cs, Completion{Prompt: randomTokens(rng, 128, 512), Tokens: randomTokens(rng, 128, 512)})
	}
	ctx := context.Background()
	tokens := 16 * 128
	b.Run("nograd", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.ScoreNoGrad(ctx, cs, ScoreOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(tokens*b.N)/b.Elapsed().Seconds(), "tok/s")
	})
	b.Run("grad+backward", func(b *testing.B) {
		d := make([][]float64, len(cs))
		for i := range d {
			d[i] = make([]float64, 128)
			for j := range d[i] {
				d[i][j] = 1e-3
			}
		}
		for b.Loop() {
			s, err := m.Score(ctx, cs, ScoreOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Backward(d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(tokens*b.N)/b.Elapsed().Seconds(), "tok/s")
		m.do(func() error { m.zeroGrads(); return nil })
	})
}

// BenchmarkGroupSample samples G = 8 completions of 128 tokens of one
// prompt of 128 or 384 tokens: as one group (one prefill, shared), as one
// batch of 8 prefills, and as 8 calls of one row.
func BenchmarkGroupSample(b *testing.B) {
	for _, p := range []int{128, 384} {
		b.Run(fmt.Sprintf("prompt%d", p), func(b *testing.B) { benchGroupSample(b, p) })
	}
}

func benchGroupSample(b *testing.B, promptLen int) {
	rt := newTestRuntime(b)
	m := newTestModel(b, rt, benchSampleConfig(), 1)
	rng := rand.New(rand.NewPCG(1, 3))
	prompt := randomTokens(rng, promptLen, 512)
	const g, n = 8, 128
	rows := make([]SampleRow, g)
	for i := range rows {
		rows[i] = SampleRow{Prompt: prompt, MaxNew: n, Seed: int64(i)}
	}
	opts := SampleOptions{Temperature: 1}
	ctx := context.Background()
	count := func(out []Sample) int {
		t := 0
		for _, s := range out {
			t += len(s.Tokens)
		}
		return t
	}
	for _, mode := range []string{"group", "batch", "separate"} {
		b.Run(mode, func(b *testing.B) {
			tokens := 0
			for b.Loop() {
				switch mode {
				case "group", "batch":
					out, err := m.sampleRows(ctx, rows, opts, mode == "group")
					if err != nil {
						b.Fatal(err)
					}
					tokens += count(out)
				case "separate":
					for _, r := range rows {
						out, err := m.SampleRows(ctx, []SampleRow{r}, opts)
						if err != nil {
							b.Fatal(err)
						}
						tokens += count(out)
					}
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
