//go:build torch

package dragon

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
)

// sameSamples checks that got and want have the same tokens and
// log-probabilities within 1e-5.
func sameSamples(t *testing.T, what string, got, want Sample) {
	t.Helper()
	if !slices.Equal(got.Tokens, want.Tokens) || got.Stopped != want.Stopped {
		t.Errorf("%s: tokens %v (stopped %v); want %v (stopped %v)", what, got.Tokens, got.Stopped, want.Tokens, want.Stopped)
		return
	}
	for j := range got.LogProbs {
		if d := math.Abs(float64(got.LogProbs[j] - want.LogProbs[j])); d > 1e-5 {
			t.Errorf("%s: token %d: log-prob %v; want %v", what, j, got.LogProbs[j], want.LogProbs[j])
		}
	}
}

// TestSampleRowsIndependent: row i of a batch equals its prompt sampled
// alone with the same row seed, and Sample's rows use RowSeed.
func TestSampleRowsIndependent(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := modelOf(t, rt, cfg, gotch.Float, noisyValues(cfg, seed(t)))
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 15))
	ctx := context.Background()
	opts := SampleOptions{Temperature: 1, TopK: 8}
	var rows []SampleRow
	for i := range 4 {
		rows = append(rows, SampleRow{Prompt: randomTokens(rng, 1+rng.IntN(6), cfg.Vocab), MaxNew: 5 + i, Seed: rng.Int64()})
	}
	batch, err := m.SampleRows(ctx, rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		alone, err := m.SampleRows(ctx, []SampleRow{r}, opts)
		if err != nil {
			t.Fatal(err)
		}
		sameSamples(t, "row "+string(rune('0'+i)), batch[i], alone[0])
	}
	// Sample: row i is seeded with RowSeed(Seed, i), whatever its batch.
	prompts := [][]int{rows[0].Prompt, rows[1].Prompt, rows[2].Prompt}
	opts.MaxNew, opts.Seed = 6, 42
	out, err := m.Sample(ctx, prompts, opts)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := m.SampleRows(ctx, []SampleRow{{Prompt: prompts[2], MaxNew: 6, Seed: RowSeed(42, 2)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameSamples(t, "Sample row 2", out[2], alone[0])
	if RowSeed(42, 0) == RowSeed(43, 0) || RowSeed(42, 0) == RowSeed(42, 1) || RowSeed(42, 1) == RowSeed(43, 0) {
		t.Error("RowSeed collides on neighbouring seeds and rows")
	}
}

// TestSampleGroupShared: rows with the same prompt share one prefill and
// give the samples of separate prefills and of the prompt alone.
func TestSampleGroupShared(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := modelOf(t, rt, cfg, gotch.Float, noisyValues(cfg, seed(t)))
	ctx := context.Background()
	a, b := []int{3, 1, 4, 1, 5}, []int{9, 2}
	var rows []SampleRow
	for i, p := range [][]int{a, b, a, a, b} {
		rows = append(rows, SampleRow{Prompt: slices.Clone(p), MaxNew: 7, Seed: int64(100 + i)})
	}
	opts := SampleOptions{Temperature: 1}
	shared, err := m.SampleRows(ctx, rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.lastPrefillRows != 2 {
		t.Errorf("shared: %d rows prefilled; want 2", m.lastPrefillRows)
	}
	separate, err := m.sampleRows(ctx, rows, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.lastPrefillRows != 5 {
		t.Errorf("separate: %d rows prefilled; want 5", m.lastPrefillRows)
	}
	distinct := map[string]bool{}
	for i := range rows {
		sameSamples(t, "shared vs separate row "+string(rune('0'+i)), shared[i], separate[i])
		distinct[promptKey(shared[i].Tokens)] = true
	}
	if len(distinct) < 4 {
		t.Errorf("the group's samples are not diverse: %v", shared)
	}
	alone, err := m.SampleRows(ctx, rows[3:4], opts)
	if err != nil {
		t.Fatal(err)
	}
	sameSamples(t, "shared row 3 vs alone", shared[3], alone[0])
}

// TestSampleRowFailures: a row whose constraint fails or allows nothing
// reports it on its Sample; the other rows are those of a batch without
// it. The constraint sees each row's prompt.
func TestSampleRowFailures(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := modelOf(t, rt, cfg, gotch.Float, noisyValues(cfg, seed(t)))
	ctx := context.Background()
	rows := []SampleRow{
		{Prompt: []int{1, 2}, MaxNew: 6, Seed: 1},
		{Prompt: []int{3}, MaxNew: 6, Seed: 2},
		{Prompt: []int{4, 5, 6}, MaxNew: 6, Seed: 3},
	}
	boom := errors.New("grammar error")
	con := func(row int, prompt, gen []int, allow []bool) error {
		if !slices.Equal(prompt, rows[row].Prompt) {
			t.Errorf("row %d: constraint saw prompt %v", row, prompt)
		}
		prompt[0] = 12 // a copy: no effect
		switch {
		case row == 1 && len(gen) == 2:
			return boom
		case row == 2 && len(gen) == 3:
			clear(allow)
		default:
			allow[0] = false
		}
		return nil
	}
	opts := SampleOptions{Temperature: 1, RowConstraint: con}
	out, err := m.SampleRows(ctx, rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out[1].Err, boom) || len(out[1].Tokens) != 2 {
		t.Errorf("row 1: %d tokens, Err %v; want 2 tokens and the constraint's error", len(out[1].Tokens), out[1].Err)
	}
	if out[2].Err == nil || !strings.Contains(out[2].Err.Error(), "forbids every token") || len(out[2].Tokens) != 3 {
		t.Errorf("row 2: %d tokens, Err %v; want 3 tokens and a forbids-every-token error", len(out[2].Tokens), out[2].Err)
	}
	alone, err := m.SampleRows(ctx, rows[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Err != nil || len(out[0].Tokens) != 6 || len(out[0].Allow) != 6 {
		t.Errorf("row 0: %+v", out[0])
	}
	sameSamples(t, "row 0 vs alone", out[0], alone[0])
	for i, r := range rows {
		if r.Prompt[0] == 12 {
			t.Errorf("row %d: the constraint changed the prompt", i)
		}
	}
	for _, s := range out {
		for _, tok := range s.Tokens {
			if tok == 0 {
				t.Errorf("token 0 was forbidden: %v", s.Tokens)
			}
		}
	}
	if _, err := m.SampleRows(ctx, rows, SampleOptions{RowConstraint: con, Constraint: func(int, []int, []bool) {}}); err == nil {
		t.Error("both constraints set: no error")
	}
}

// TestSampleRowMaxNew: each row generates up to its own MaxNew, or to the
// context for its own prompt (not the longest one's).
func TestSampleRowMaxNew(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	ctx := context.Background()
	long := make([]int, cfg.Context-2)
	for i := range long {
		long[i] = 1 + i%5
	}
	rows := []SampleRow{{Prompt: long, Seed: 1}, {Prompt: []int{2}, MaxNew: 0, Seed: 2}, {Prompt: []int{3, 4}, MaxNew: 4, Seed: 3}}
	for _, noCache := range []bool{false, true} {
		out, err := m.SampleRows(ctx, rows, SampleOptions{Temperature: 1, NoCache: noCache})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{3, cfg.Context, 4} {
			if len(out[i].Tokens) != want {
				t.Errorf("nocache %v row %d: %d tokens; want %d", noCache, i, len(out[i].Tokens), want)
			}
		}
	}
}

// TestScoreMatchesConstrainedSampler: Score with the masks the sampler
// recorded gives the sampler's renormalised log-probabilities.
func TestScoreMatchesConstrainedSampler(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := modelOf(t, rt, cfg, gotch.Float, noisyValues(cfg, seed(t)))
	ctx := context.Background()
	prompts := [][]int{{1, 2, 3}, {4}}
	con := func(_ int, gen []int, allow []bool) {
		for v := range allow {
			allow[v] = (v+len(gen))%3 != 0
		}
	}
	out, err := m.Sample(ctx, prompts, SampleOptions{Temperature: 1, MaxNew: 8, Seed: 5, Constraint: con})
	if err != nil {
		t.Fatal(err)
	}
	lp, err := m.ScoreNoGrad(ctx, completionsOf(prompts, out), ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range out {
		for j := range s.Tokens {
			if d := math.Abs(lp[i][j] - float64(s.MaskedLogProbs[j])); d > 1e-5 {
				t.Errorf("row %d token %d: scored %v, sampler %v", i, j, lp[i][j], s.MaskedLogProbs[j])
			}
			if s.MaskedLogProbs[j] <= s.LogProbs[j] {
				t.Errorf("row %d token %d: renormalised %v not above %v", i, j, s.MaskedLogProbs[j], s.LogProbs[j])
			}
		}
	}
}

// TestGroupLoopMemoryFlat: an RL-like loop (group sampling with per-row
// lengths and a constraint, scoring with gradients and an optimizer step,
// a frozen reference's scores) does not grow the resident set.
func TestGroupLoopMemoryFlat(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := Config{Layers: 2, Width: 32, Heads: 4, Context: 32, Vocab: 16}
	m := newTestModel(t, rt, cfg, seed(t))
	m.SetTraining(false)
	ref, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ref.Freeze()
	o, err := NewOptimizer(m, AdamWConfig{LR: 1e-3, MinLR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 16))
	ctx := context.Background()
	con := func(_ int, _, gen []int, allow []bool) error {
		allow[len(gen)%cfg.Vocab] = false
		return nil
	}
	tokens := 0
	iter := func() {
		var rows []SampleRow
		for range 2 {
			p := randomTokens(rng, 1+rng.IntN(8), cfg.Vocab)
			for range 4 {
				rows = append(rows, SampleRow{Prompt: p, MaxNew: 4 + rng.IntN(12), Seed: rng.Int64()})
			}
		}
		out, err := m.SampleRows(ctx, rows, SampleOptions{Temperature: 1, Stop: []int{1}, RowConstraint: con})
		if err != nil {
			t.Fatal(err)
		}
		cs := make([]Completion, len(out))
		for i, s := range out {
			cs[i] = Completion{Prompt: rows[i].Prompt, Tokens: s.Tokens, Allow: s.Allow}
			tokens += len(s.Tokens)
		}
		if _, err := ref.ScoreNoGrad(ctx, cs, ScoreOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Minimize(ctx, cs, ScoreOptions{}, func(lp [][]float64) (float64, [][]float64, error) {
			d := make([][]float64, len(lp))
			var v float64
			for i := range lp {
				d[i] = make([]float64, len(lp[i]))
				for j, x := range lp[i] {
					d[i][j] = 1e-3
					v += 1e-3 * x
				}
			}
			return v, d, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	measure := func() int64 {
		debug.FreeOSMemory()
		return rssBytes(t)
	}
	for range 300 {
		iter()
	}
	before := measure()
	tokens = 0
	const n = 1000
	for range n {
		iter()
	}
	grow := measure() - before
	t.Logf("%d iterations, %d sampled tokens: RSS %+.0f KB (RSS %.1f MB)", n, tokens, float64(grow)/1024, float64(before)/(1<<20))
	if grow > 1<<20 {
		t.Errorf("the loop grows the RSS by %.0f KB over %d iterations; want < 1 MB", float64(grow)/1024, n)
	}
}

// TestSampleNonFiniteLogits: a model whose logits are NaN fails every row
// on its Sample, not the call.
func TestSampleNonFiniteLogits(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	vals := initValues(cfg, seed(t))
	lnfB := len(vals) - 1
	vals[lnfB][0] = math.NaN()
	m := modelOf(t, rt, cfg, gotch.Float, vals)
	out, err := m.Sample(context.Background(), [][]int{{1, 2}, {3}}, SampleOptions{Temperature: 1, MaxNew: 4})
	if err != nil {
		t.Fatalf("Sample failed the call: %v", err)
	}
	for i, s := range out {
		if s.Err == nil || !strings.Contains(s.Err.Error(), "not finite") || len(s.Tokens) != 0 {
			t.Errorf("row %d: %+v; want a not-finite error and no tokens", i, s)
		}
	}
}
