//go:build torch

package dragon

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCausal checks that a position's logits do not depend on later tokens.
func TestCausal(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 1))
	a := randomTokens(rng, 12, cfg.Vocab)
	b := slices.Clone(a)
	for i := 6; i < len(b); i++ {
		b[i] = (b[i] + 1) % cfg.Vocab
	}
	la, err := m.Logits(a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := m.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if !slices.Equal(la[i], lb[i]) {
			t.Errorf("logits at %d changed when only tokens 6.. changed", i)
		}
	}
	if slices.Equal(la[6], lb[6]) {
		t.Error("logits at 6 did not change when token 6 changed")
	}
}

// lossOf returns the summed loss of the examples idx as one micro-batch.
func lossOf(t *testing.T, m *Model, exs []Example, idx []int) float64 {
	t.Helper()
	return paddedLossOf(t, m, exs, idx, padding{})
}

// paddedLossOf is lossOf with the micro-batch's shape quantized by pad.
func paddedLossOf(t *testing.T, m *Model, exs []Example, idx []int, pad padding) float64 {
	t.Helper()
	mb := makeMicroBatch(exs, idx, pad)
	var v float64
	err := m.do(func() error {
		return noGrad(func() error {
			var a arena
			defer a.reset()
			l := m.lossSum(&a, &mb, false)
			if a.err != nil {
				return a.err
			}
			var err error
			v, err = scalarValue(l, m.dtype)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPaddingAndPromptMasking checks that the loss of a padded batch is the
// sum of its examples' losses alone (padding changes nothing), and that the
// prompt's tokens are not trained on.
func TestPaddingAndPromptMasking(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	exs := []Example{
		{Prompt: []int{1, 2, 3, 4, 5}, Target: []int{6, 7, 8, 9}},
		{Prompt: []int{2}, Target: []int{3}},
		{Prompt: []int{7, 7}, Target: []int{1, 2, 3}},
	}
	var sep float64
	for i := range exs {
		sep += lossOf(t, m, exs, []int{i})
	}
	batched := lossOf(t, m, exs, []int{0, 1, 2})
	if math.Abs(batched-sep) > 1e-4*sep {
		t.Errorf("loss of the padded batch %v; sum of the examples alone %v", batched, sep)
	}
	// The trainer's shape quantization (longer rows, ignored target rows)
	// changes nothing either.
	quantized := paddedLossOf(t, m, exs, []int{0, 1, 2}, padding{Len: 4, MaxLen: cfg.Context, Targets: 16})
	if math.Abs(quantized-sep) > 1e-4*sep {
		t.Errorf("loss of the quantized batch %v; sum of the examples alone %v", quantized, sep)
	}
	// Changing the prompt's last token changes the loss (it is read), but
	// a prompt token's own prediction is never scored: a model loss over
	// exs[0] equals the loss computed from Logits on target positions.
	logits, err := m.Logits(append(slices.Clone(exs[0].Prompt), exs[0].Target[:3]...))
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for i, tok := range exs[0].Target {
		row := logits[len(exs[0].Prompt)-1+i]
		var z float64
		for _, l := range row {
			z += math.Exp(float64(l))
		}
		want += math.Log(z) - float64(row[tok])
	}
	if got := lossOf(t, m, exs, []int{0}); math.Abs(got-want) > 1e-4*want {
		t.Errorf("loss of example 0 = %v; cross-entropy of its target tokens from Logits = %v", got, want)
	}
}

// TestKVCacheMatchesRecompute samples greedily with and without the KV
// cache, from prompts of different lengths in one batch, and checks the
// tokens are identical and the log-probabilities agree; it also checks the
// first token against Logits of each prompt alone.
func TestKVCacheMatchesRecompute(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := Config{Layers: 3, Width: 48, Heads: 4, Context: 40, Vocab: 29}
	m := newTestModel(t, rt, cfg, seed(t))
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 2))
	var prompts [][]int
	for _, n := range []int{1, 5, 9, 3} {
		prompts = append(prompts, randomTokens(rng, n, cfg.Vocab))
	}
	ctx := context.Background()
	// One row exercises the matrix-vector path of decoding, several rows
	// the padding.
	for _, tc := range []struct {
		prompts [][]int
		opts    SampleOptions
	}{
		{prompts, SampleOptions{MaxNew: 25}},
		{prompts, SampleOptions{MaxNew: 25, Temperature: 1, TopK: 5, Seed: 3}},
		{prompts, SampleOptions{Temperature: 0.7, TopP: 0.9, Seed: 4}}, // to the end of the context
		{prompts[2:3], SampleOptions{MaxNew: 25}},
		{prompts[:1], SampleOptions{Temperature: 1, Seed: 5}},
	} {
		prompts, opts := tc.prompts, tc.opts
		kv, err := m.Sample(ctx, prompts, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.NoCache = true
		full, err := m.Sample(ctx, prompts, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range prompts {
			// Each row to the end of the context for its own prompt.
			wantLen := cfg.Context - len(prompts[i]) + 1
			if opts.MaxNew > 0 {
				wantLen = opts.MaxNew
			}
			if len(kv[i].Tokens) != wantLen {
				t.Errorf("%+v: row %d generated %d tokens; want %d", opts, i, len(kv[i].Tokens), wantLen)
			}
			if !slices.Equal(kv[i].Tokens, full[i].Tokens) {
				t.Errorf("%+v: row %d: KV cache %v; recompute %v", opts, i, kv[i].Tokens, full[i].Tokens)
				continue
			}
			for j := range kv[i].LogProbs {
				if d := math.Abs(float64(kv[i].LogProbs[j] - full[i].LogProbs[j])); d > 1e-4 {
					t.Errorf("%+v: row %d token %d: log-prob %v with cache, %v without", opts, i, j, kv[i].LogProbs[j], full[i].LogProbs[j])
				}
			}
		}
	}
	// The first greedy token and its log-prob match Logits of the prompt.
	kv, err := m.Sample(ctx, prompts, SampleOptions{MaxNew: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		lg, err := m.Logits(p)
		if err != nil {
			t.Fatal(err)
		}
		last := lg[len(p)-1]
		best := 0
		var z float64
		for v, l := range last {
			if l > last[best] {
				best = v
			}
			z += math.Exp(float64(l))
		}
		if kv[i].Tokens[0] != best {
			t.Errorf("row %d: first token %d; argmax of Logits %d", i, kv[i].Tokens[0], best)
		}
		if want := float64(last[best]) - math.Log(z); math.Abs(float64(kv[i].LogProbs[0])-want) > 1e-4 {
			t.Errorf("row %d: log-prob %v; from Logits %v", i, kv[i].LogProbs[0], want)
		}
	}
}

func TestSampleStopAndConstraint(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	ctx := context.Background()
	prompts := [][]int{{1, 2}, {3}, {4, 5, 6}}
	// Only even tokens allowed, and after 3 tokens only token 12 (a stop).
	con := func(row int, gen []int, allow []bool) {
		for v := range allow {
			allow[v] = v%2 == 0 && (len(gen) < 3 || v == 12)
		}
	}
	out, err := m.Sample(ctx, prompts, SampleOptions{MaxNew: 10, Temperature: 1, Seed: 9, Stop: []int{12}, Constraint: con})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range out {
		if !s.Stopped || len(s.Tokens) > 4 || s.Tokens[len(s.Tokens)-1] != 12 {
			t.Errorf("row %d: %+v; want a stop on token 12 within 4 tokens", i, s)
		}
		for _, tok := range s.Tokens {
			if tok%2 != 0 {
				t.Errorf("row %d: token %d is forbidden by the constraint", i, tok)
			}
		}
	}
	none := func(_ int, _ []int, allow []bool) { clear(allow) }
	if out, err := m.Sample(ctx, prompts, SampleOptions{MaxNew: 3, Constraint: none}); err != nil {
		t.Fatal(err)
	} else {
		for i, s := range out {
			if s.Err == nil || len(s.Tokens) != 0 {
				t.Errorf("row %d: a constraint that forbids everything: %+v; want Err and no tokens", i, s)
			}
		}
	}
	if _, err := m.Sample(ctx, [][]int{make([]int, cfg.Context+1)}, SampleOptions{}); err == nil {
		t.Error("a prompt longer than the context gave no error")
	}
	if out, err := m.Sample(ctx, [][]int{make([]int, cfg.Context)}, SampleOptions{}); err != nil || len(out[0].Tokens) != 1 {
		t.Errorf("a prompt filling the context: %v, %v; want one token", out, err)
	}
	if _, err := m.Sample(ctx, [][]int{{cfg.Vocab}}, SampleOptions{}); err == nil {
		t.Error("a prompt token outside the vocabulary gave no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Sample(cctx, prompts, SampleOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Sample with a cancelled context: %v; want context.Canceled", err)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	tok, err := NewWordTokenizer([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"})
	if err != nil {
		t.Fatal(err)
	}
	m.SetTokenizer(tok.Identity())
	// Train a few steps so the weights are not the seed's.
	exs := []Example{{Prompt: []int{1, 2}, Target: []int{3, 4, 5}}, {Prompt: []int{6}, Target: []int{7, 8}}}
	tc := DefaultTrainConfig()
	tc.Batch, tc.Warmup = 2, 1
	tr, err := NewTrainer(m, tc, exs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := tr.TrainStep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tr.Close()
	var buf bytes.Buffer
	if err := m.WriteCheckpoint(&buf); err != nil {
		t.Fatal(err)
	}
	m2, err := rt.ReadCheckpoint(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.Config() != cfg || m2.Tokenizer() != tok.Identity() {
		t.Errorf("read back config %+v tokenizer %q; want %+v %q", m2.Config(), m2.Tokenizer(), cfg, tok.Identity())
	}
	in := []int{1, 2, 3, 4, 5, 6, 7}
	want, err := m.Logits(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Logits(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("logits at %d differ after a checkpoint round trip:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
	// A corrupt checkpoint is refused.
	b := slices.Clone(buf.Bytes())
	b[len(b)/2] ^= 1
	if _, err := rt.ReadCheckpoint(bytes.NewReader(b)); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("ReadCheckpoint of a corrupt file: %v; want ErrBadCheckpoint", err)
	}
	// A model-only checkpoint cannot resume training.
	if _, err := rt.ResumeTrainer(bytes.NewReader(buf.Bytes()), exs, nil); err == nil {
		t.Error("ResumeTrainer accepted a model-only checkpoint")
	}
}
