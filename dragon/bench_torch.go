//go:build torch

package dragon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"dragonx/internal/progress"
)

// Bench measures, in one process and with one thread setting: the fp32
// sgemm peak, the training throughput of three model sizes (random tokens,
// every position trained on, full fwd+bwd+clip+AdamW steps) and the
// sampling throughput with and without the KV cache. MFU compares training
// GFLOP/s with the peak of the same run.
func Bench(ctx context.Context, opts BenchOptions, rep progress.Reporter) (*BenchReport, error) {
	if rep == nil {
		rep = progress.Nop{}
	}
	rt, err := NewRuntime(RuntimeOptions{Threads: opts.Threads, Seed: 1})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	r := &BenchReport{Runtime: rt.Info()}
	cfgs := benchConfigs()
	total := int64(len(cfgs) + 2)
	phase := func(done int64, note string) {
		rep.Report(progress.Event{Done: done, Total: total, Unit: "phases", Note: note})
	}

	phase(0, "sgemm peak")
	trial := time.Second
	if opts.Quick {
		trial = 300 * time.Millisecond
	}
	if r.SgemmPeakGFLOPS, err = sgemmPeak(ctx, rt, 1024, trial, 3); err != nil {
		return nil, err
	}
	for i, cfg := range cfgs {
		phase(int64(i+1), fmt.Sprintf("training %.1fM", float64(cfg.NumParams())/1e6))
		tr, err := benchTrain(ctx, rt, cfg, 16, 256, opts.Quick)
		if err != nil {
			return nil, err
		}
		tr.MFU = tr.GFLOPS / r.SgemmPeakGFLOPS
		r.Train = append(r.Train, tr)
	}
	phase(total-1, "sampling")
	if r.Sample, err = benchSample(ctx, rt, opts.Quick); err != nil {
		return nil, err
	}
	phase(total, "done")
	return r, nil
}

// sgemmPeak returns the best rate, in GFLOP/s, of trials of about trial
// each, multiplying two n×n fp32 matrices (2n³ FLOPs per product) on the
// runtime's thread.
func sgemmPeak(ctx context.Context, rt *Runtime, n int64, trial time.Duration, trials int) (float64, error) {
	best := 0.0
	err := rt.do(func() error {
		var in, out arena
		defer in.reset()
		defer out.reset()
		y := in.keep(ts.Randn([]int64{n, n}, gotch.Float, gotch.CPU))
		z := in.keep(ts.Randn([]int64{n, n}, gotch.Float, gotch.CPU))
		if in.err != nil {
			return in.err
		}
		for range 3 { // warm up: OpenMP pool, page faults
			out.matmul(y, z)
			out.free()
		}
		for range trials {
			if err := ctx.Err(); err != nil {
				return err
			}
			start := time.Now()
			reps := 0
			for time.Since(start) < trial {
				out.matmul(y, z)
				out.free()
				reps++
			}
			best = max(best, float64(reps)*2*float64(n*n*n)/time.Since(start).Seconds()/1e9)
		}
		return out.err
	})
	return best, err
}

// randomExamples returns n examples of length t+1 random tokens whose
// first token is the prompt: every position is trained on.
func randomExamples(rng *rand.Rand, n, t, vocab int) []Example {
	exs := make([]Example, n)
	for i := range exs {
		seq := make([]int, t+1)
		for j := range seq {
			seq[j] = rng.IntN(vocab)
		}
		exs[i] = Example{Prompt: seq[:1], Target: seq[1:]}
	}
	return exs
}

// benchTrain times training steps of cfg at batch×seqLen tokens per step.
func benchTrain(ctx context.Context, rt *Runtime, cfg Config, batch, seqLen int, quick bool) (BenchTrain, error) {
	res := BenchTrain{Params: cfg.NumParams(), Config: cfg, SeqLen: seqLen, Batch: batch}
	m, err := rt.NewModel(cfg, 1)
	if err != nil {
		return res, err
	}
	defer m.Close()
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.Bucket, tc.Warmup, tc.EvalEvery = 1<<30, batch, 1, 10, 0
	rng := rand.New(rand.NewPCG(1, 2))
	tr, err := NewTrainer(m, tc, randomExamples(rng, 8*batch, seqLen, cfg.Vocab), nil)
	if err != nil {
		return res, err
	}
	defer tr.Close()
	warm, minSteps, minTime := 2, 5, 10*time.Second
	if quick {
		warm, minSteps, minTime = 1, 2, 0
	}
	for range warm {
		if _, err := tr.TrainStep(ctx); err != nil {
			return res, err
		}
	}
	tokens := 0
	start := time.Now()
	for res.Steps < minSteps || time.Since(start) < minTime {
		st, err := tr.TrainStep(ctx)
		if err != nil {
			return res, err
		}
		tokens += st.Tokens
		res.Steps++
	}
	res.Seconds = time.Since(start).Seconds()
	res.TokensPerS = float64(tokens) / res.Seconds
	res.GFLOPS = res.TokensPerS * cfg.TrainFLOPsPerToken(seqLen) / 1e9
	return res, nil
}

// median returns the median of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchSample times sampling with and without the KV cache: a 32-token
// prompt and 256 new tokens (64 when quick) of one sequence, top-k 20 at
// temperature 1, no stop token (so every run generates the same count).
func benchSample(ctx context.Context, rt *Runtime, quick bool) (BenchSample, error) {
	cfg := benchSampleConfig()
	res := BenchSample{Params: cfg.NumParams(), Config: cfg, Batch: 1, Prompt: 32, New: 256}
	if quick {
		res.New = 64
	}
	m, err := rt.NewModel(cfg, 1)
	if err != nil {
		return res, err
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	prompts := func(b int) [][]int {
		out := make([][]int, b)
		for i := range out {
			out[i] = make([]int, res.Prompt)
			for j := range out[i] {
				out[i][j] = rng.IntN(cfg.Vocab)
			}
		}
		return out
	}
	rate := func(b int, noCache bool) (float64, error) {
		opts := SampleOptions{MaxNew: res.New, Temperature: 1, TopK: 20, Seed: 5, NoCache: noCache}
		if _, err := m.Sample(ctx, prompts(b), SampleOptions{MaxNew: 4, NoCache: noCache}); err != nil {
			return 0, err // warm-up
		}
		start := time.Now()
		out, err := m.Sample(ctx, prompts(b), opts)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, s := range out {
			n += len(s.Tokens)
		}
		return float64(n) / time.Since(start).Seconds(), nil
	}
	// The two are timed alternately, three times each (once when quick),
	// and each rate is the median: the machine's speed drifts over seconds,
	// and the ratio of one timing of each can be off by a third.
	rounds := 3
	if quick {
		rounds = 1
	}
	var kv, nokv []float64
	for range rounds {
		r, err := rate(1, false)
		if err != nil {
			return res, err
		}
		kv = append(kv, r)
		if r, err = rate(1, true); err != nil {
			return res, err
		}
		nokv = append(nokv, r)
	}
	res.KVTokensPerS, res.NoKVTokensPerS = median(kv), median(nokv)
	if !quick {
		if res.KVBatch16TokensPerS, err = rate(16, false); err != nil {
			return res, err
		}
	}
	return res, nil
}
