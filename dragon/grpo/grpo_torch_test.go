//go:build torch

package grpo

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dragonx/dragon"
)

var testThreads = flag.Int("grpo.threads", 1, "libtorch threads of the grpo tests")

// Tokens of the toy task: digits 0-9 are tokens 0-9, then SEP and EOS.
const (
	tSEP   = 10
	tEOS   = 11
	tVocab = 12
)

func newRuntime(t testing.TB) *dragon.Runtime {
	t.Helper()
	rt, err := dragon.NewRuntime(dragon.RuntimeOptions{Seed: 1, Threads: *testThreads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func newModel(t testing.TB, rt *dragon.Runtime, cfg dragon.Config, seed int64) *dragon.Model {
	t.Helper()
	m, err := rt.NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// frozenClone is the frozen reference copy of m.
func frozenClone(t testing.TB, m *dragon.Model) *dragon.Model {
	t.Helper()
	ref, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	if err := ref.Freeze(); err != nil {
		t.Fatal(err)
	}
	return ref
}

// reversal is the verifiable toy task: a prompt "d1..dk SEP" asks for
// "dk..d1 EOS". A sample earns 1 when exactly right, else half the share
// of the target's positions it got right times partial (a denser signal).
type reversal struct{ partial float64 }

func reversed(prompt []int) []int {
	want := slices.Clone(prompt[:len(prompt)-1])
	slices.Reverse(want)
	return append(want, tEOS)
}

func (rv reversal) Reward(_ context.Context, p Prompt, samples [][]int) ([]Reward, error) {
	want := reversed(p.Tokens)
	out := make([]Reward, len(samples))
	for i, s := range samples {
		right := 0
		for j := range min(len(s), len(want)) {
			if s[j] == want[j] {
				right++
			}
		}
		correct, partial := 0.0, float64(right)/float64(len(want))
		if slices.Equal(s, want) {
			correct = 1
		}
		total := correct + rv.partial*partial*(1-correct)
		out[i] = Reward{Total: total, Components: map[string]float64{"correct": correct, "partial": partial}}
	}
	return out, nil
}

// reversalPrompts returns n distinct prompts of k in [lo, hi] digits, none
// in skip (which gets them).
func reversalPrompts(rng *rand.Rand, n, lo, hi int, skip map[string]bool) []Prompt {
	var ps []Prompt
	for len(ps) < n {
		k := lo + rng.IntN(hi-lo+1)
		d := make([]int, k)
		for i := range d {
			d[i] = rng.IntN(10)
		}
		key := fmt.Sprint(d)
		if skip[key] {
			continue
		}
		skip[key] = true
		ps = append(ps, Prompt{ID: key, Tokens: append(d, tSEP), MaxNew: k + 1})
	}
	return ps
}

func toyConfig() dragon.Config {
	return dragon.Config{Layers: 2, Width: 32, Heads: 4, Context: 16, Vocab: tVocab}
}

func testConfig() Config {
	c := DefaultConfig()
	c.PromptsPerStep, c.Group, c.Beta, c.Stop, c.Seed = 3, 6, 0.1, []int{tEOS}, 7
	c.AdamW.LR = 1e-3
	return c
}

// oneStep makes one GRPO step of m with a fresh trainer.
func oneStep(t *testing.T, m, ref *dragon.Model, cfg Config, prompts []Prompt, rw Rewarder) StepStats {
	t.Helper()
	tr, err := NewTrainer(m, ref, cfg, prompts, rw)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	st, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMuOneIdenticalReference: with μ = 1 and the reference a frozen clone
// of the policy, the first update sees a ratio of exactly 1 and a KL of
// exactly 0; after that update the policy has moved (a second update of
// μ = 2 sees a ratio ≠ 1 and a KL > 0).
func TestMuOneIdenticalReference(t *testing.T) {
	rt := newRuntime(t)
	rng := rand.New(rand.NewPCG(1, 1))
	prompts := reversalPrompts(rng, 8, 2, 4, map[string]bool{})
	for _, mu := range []int{1, 2} {
		m := newModel(t, rt, toyConfig(), 3)
		m.SetTraining(false)
		ref := frozenClone(t, m)
		cfg := testConfig()
		cfg.Mu, cfg.Batch = mu, 5 // several scoring passes
		st := oneStep(t, m, ref, cfg, prompts, reversal{partial: 0.5})
		t.Logf("μ=%d: %+v", mu, st)
		if st.Updates != mu || st.SkippedGroups == cfg.PromptsPerStep {
			t.Fatalf("μ=%d: %d updates, %d groups skipped: the test needs updates", mu, st.Updates, st.SkippedGroups)
		}
		if mu == 1 && (st.RatioDev != 0 || st.KL != 0 || st.ClipFrac != 0) {
			t.Errorf("μ=1: max |ratio-1| %g, KL %g, clip fraction %g; want exactly 0", st.RatioDev, st.KL, st.ClipFrac)
		}
		if mu == 2 && (st.RatioDev == 0 || st.KL == 0) {
			t.Errorf("μ=2: max |ratio-1| %g, KL %g; the second update should see a moved policy", st.RatioDev, st.KL)
		}
	}
}

// TestClipActsWithMu: with μ > 1 the later updates of a step see a policy
// that has moved, and with a large learning rate some tokens' ratios leave
// [1-ε, 1+ε], so the clip takes its branch (μ = 1 never clips: above).
// The same holds with the log-probs over the full vocabulary under a
// constraint (FullVocab), whose first update still sees a ratio of 1.
func TestClipActsWithMu(t *testing.T) {
	rt := newRuntime(t)
	rng := rand.New(rand.NewPCG(1, 1))
	prompts := reversalPrompts(rng, 8, 2, 4, map[string]bool{})
	// A constraint that hides token 9 at every position.
	constrained := slices.Clone(prompts)
	for i := range constrained {
		constrained[i].Constraint = func(_ int, _, _ []int, allow []bool) error {
			allow[9] = false
			return nil
		}
	}
	for _, tc := range []struct {
		name    string
		prompts []Prompt
		full    bool
	}{{"unconstrained", prompts, false}, {"constrained, full vocabulary", constrained, true}} {
		m := newModel(t, rt, toyConfig(), 3)
		m.SetTraining(false)
		cfg := testConfig()
		cfg.Mu, cfg.Beta, cfg.FullVocab = 4, 0, tc.full
		cfg.AdamW.LR = 3e-2
		st := oneStep(t, m, nil, cfg, tc.prompts, reversal{partial: 0.5})
		t.Logf("%s, μ=4: %+v", tc.name, st)
		if st.Updates != 4 {
			t.Fatalf("%s: %d updates, want 4", tc.name, st.Updates)
		}
		if st.ClipFrac == 0 || st.RatioDev <= cfg.Epsilon {
			t.Errorf("%s: clip fraction %g, max |ratio-1| %g: the clip never acted", tc.name, st.ClipFrac, st.RatioDev)
		}
	}
}

// nines records, per row of a group, how many samples held token 9.
type nines struct {
	reversal
	rows []int
}

func (n *nines) Reward(ctx context.Context, p Prompt, samples [][]int) ([]Reward, error) {
	for g, s := range samples {
		if slices.Contains(s, 9) {
			n.rows[g]++
		}
	}
	return n.reversal.Reward(ctx, p, samples)
}

// TestFreeSamples: the last FreeSamples rows of a constrained prompt's
// group sample without its constraint (here one that hides token 9); the
// others keep it.
func TestFreeSamples(t *testing.T) {
	rt := newRuntime(t)
	rng := rand.New(rand.NewPCG(3, 3))
	prompts := reversalPrompts(rng, 8, 3, 4, map[string]bool{})
	for i := range prompts {
		prompts[i].Constraint = func(_ int, _, _ []int, allow []bool) error {
			allow[9] = false
			return nil
		}
	}
	m := newModel(t, rt, toyConfig(), 3)
	m.SetTraining(false)
	cfg := testConfig()
	cfg.Beta, cfg.FullVocab, cfg.FreeSamples, cfg.PromptsPerStep = 0, true, 2, 8
	rw := &nines{reversal: reversal{partial: 0.5}, rows: make([]int, cfg.Group)}
	tr, err := NewTrainer(m, nil, cfg, prompts, rw)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for range 3 {
		if _, err := tr.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	free := 0
	for g, n := range rw.rows {
		if g < cfg.Group-cfg.FreeSamples && n > 0 {
			t.Errorf("row %d sampled under the constraint holds token 9 in %d samples", g, n)
		}
		if g >= cfg.Group-cfg.FreeSamples {
			free += n
		}
	}
	if free == 0 {
		t.Errorf("no free sample holds token 9 (rows %v): the constraint was applied to them", rw.rows)
	}
	cfg.FreeSamples = cfg.Group
	if _, err := NewTrainer(m, nil, cfg, prompts, rw); err == nil {
		t.Error("free_samples = group accepted")
	}
}

func statsCurve(t *testing.T, tr *Trainer, n int) []StepStats {
	t.Helper()
	var out []StepStats
	for range n {
		st, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

func checkpoint(t *testing.T, tr *Trainer) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteCheckpoint(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// disturbRNGs draws from Go's global generator and from libtorch's (a
// forward pass with dropout of another model).
func disturbRNGs(t *testing.T, rt *dragon.Runtime) {
	t.Helper()
	_ = rand.Int64()
	cfg := toyConfig()
	cfg.Dropout = 0.5
	m := newModel(t, rt, cfg, 99)
	m.SetTraining(true)
	s, err := m.Score(context.Background(), []dragon.Completion{{Prompt: []int{1, 2, 3}, Tokens: []int{4, 5, 6}}}, dragon.ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
}

// TestResumeContinuesCurve runs 6 steps straight, and 3 steps, a
// checkpoint, a disturbance of every RNG, a resume and 3 more: the stats
// must be the same, and so must the final checkpoints, byte for byte. The
// policy trains with dropout (libtorch's RNG) and μ = 2 over more prompts
// than a step takes (the cursor crosses an epoch). The trainer that goes on
// after the disturbance without a resume must differ (the disturbance
// matters).
func TestResumeContinuesCurve(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	prompts := reversalPrompts(rng, 7, 2, 4, map[string]bool{})
	mcfg := toyConfig()
	mcfg.Dropout = 0.2
	cfg := testConfig()
	cfg.Mu, cfg.Batch = 2, 7
	// Each run gets its own runtime, which seeds libtorch's (process-wide)
	// generator: both start from the same RNG state.
	newTrainer := func(rt *dragon.Runtime) *Trainer {
		m := newModel(t, rt, mcfg, 4)
		ref := frozenClone(t, m)
		m.SetTraining(true)
		tr, err := NewTrainer(m, ref, cfg, prompts, reversal{partial: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	a := newTrainer(newRuntime(t))
	want := statsCurve(t, a, 6)
	wantCk := checkpoint(t, a)

	rt := newRuntime(t)
	b := newTrainer(rt)
	got := statsCurve(t, b, 3)
	ck := checkpoint(t, b)
	disturbRNGs(t, rt)
	// b goes on after the disturbance without restoring libtorch's RNG
	// (more disturbance for c).
	diverged := statsCurve(t, b, 3)
	same := true
	for i, st := range diverged {
		same = same && st.Loss == want[3+i].Loss && st.GradNorm == want[3+i].GradNorm
	}
	if same {
		t.Error("the disturbance of libtorch's RNG changed nothing: the test does not exercise it")
	}
	if _, err := ResumeTrainer(rt, bytes.NewReader(ck), b.ref, prompts[1:], reversal{partial: 0.5}); err == nil {
		t.Error("ResumeTrainer accepted other prompts")
	}
	c, err := ResumeTrainer(rt, bytes.NewReader(ck), b.ref, prompts, reversal{partial: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Policy().Close()
	defer c.Close()
	if c.Steps() != 3 || !c.Policy().Training() {
		t.Fatalf("resumed at step %d, training %v; want 3, true", c.Steps(), c.Policy().Training())
	}
	got = append(got, statsCurve(t, c, 3)...)
	for i := range want {
		w, g := want[i], got[i]
		if w.Loss != g.Loss || w.RewardMean != g.RewardMean || w.KL != g.KL || w.GradNorm != g.GradNorm || w.Entropy != g.Entropy {
			t.Errorf("step %d: resumed %+v\nstraight %+v", i+1, g, w)
		}
	}
	if !bytes.Equal(checkpoint(t, c), wantCk) {
		t.Error("the resumed run's final checkpoint differs from the straight run's")
	}
}

// flaky fails when fail is set, else rewards as reversal.
type flaky struct {
	reversal
	fail *bool
}

func (f flaky) Reward(ctx context.Context, p Prompt, samples [][]int) ([]Reward, error) {
	if *f.fail {
		return nil, fmt.Errorf("the judge is down")
	}
	return f.reversal.Reward(ctx, p, samples)
}

// TestFailedStepRetries: a step that fails before updating the policy (here
// its rewarder) changes nothing: the trainer can checkpoint and retry it,
// and the run goes on as if it had not failed.
func TestFailedStepRetries(t *testing.T) {
	rt := newRuntime(t)
	prompts := reversalPrompts(rand.New(rand.NewPCG(3, 3)), 5, 2, 4, map[string]bool{})
	cfg := testConfig()
	fail := false
	run := func() *Trainer {
		m := newModel(t, rt, toyConfig(), 5)
		m.SetTraining(false)
		tr, err := NewTrainer(m, frozenClone(t, m), cfg, prompts, flaky{reversal{0.5}, &fail})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	want := statsCurve(t, run(), 3)
	tr := run()
	got := statsCurve(t, tr, 1)
	fail = true
	if _, err := tr.Step(context.Background()); err == nil {
		t.Fatal("a step whose rewarder failed succeeded")
	}
	fail = false
	checkpoint(t, tr)
	got = append(got, statsCurve(t, tr, 2)...)
	for i := range want {
		if want[i].Loss != got[i].Loss || want[i].RewardMean != got[i].RewardMean || want[i].GradNorm != got[i].GradNorm {
			t.Errorf("step %d: %+v after a failed attempt, %+v without", i+1, got[i], want[i])
		}
	}
}

func TestNewTrainerRefuses(t *testing.T) {
	rt := newRuntime(t)
	m := newModel(t, rt, toyConfig(), 1)
	ref := frozenClone(t, m)
	good := reversalPrompts(rand.New(rand.NewPCG(4, 4)), 3, 2, 4, map[string]bool{})
	cfg := testConfig()
	for _, c := range []struct {
		name    string
		ref     *dragon.Model
		cfg     func(*Config)
		prompts []Prompt
	}{
		{"the policy as its own reference", m, nil, good},
		{"no reference with beta > 0", nil, nil, good},
		{"a group of one", ref, func(c *Config) { c.Group = 1 }, good},
		{"epsilon 0", ref, func(c *Config) { c.Epsilon = 0 }, good},
		{"greedy sampling", ref, func(c *Config) { c.Temperature = 0 }, good},
		{"a stop token outside the vocabulary", ref, func(c *Config) { c.Stop = []int{tVocab} }, good},
		{"no prompts", ref, nil, nil},
		{"an empty prompt", ref, nil, []Prompt{{ID: "e"}}},
		{"a token outside the vocabulary", ref, nil, []Prompt{{ID: "v", Tokens: []int{1, tVocab}}}},
		{"a prompt filling the context", ref, nil, []Prompt{{ID: "l", Tokens: make([]int, toyConfig().Context)}}},
	} {
		cc := cfg
		if c.cfg != nil {
			c.cfg(&cc)
		}
		if tr, err := NewTrainer(m, c.ref, cc, c.prompts, reversal{}); err == nil {
			tr.Close()
			t.Errorf("%s: accepted", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	cfg.Beta = 0
	tr, err := NewTrainer(m, nil, cfg, good, reversal{})
	if err != nil {
		t.Errorf("beta 0 without a reference: %v", err)
	} else {
		tr.Close()
	}
}

// byPosition rewards sample i of a group with i: rewards that always
// differ, whatever the samples.
type byPosition struct{}

func (byPosition) Reward(_ context.Context, _ Prompt, samples [][]int) ([]Reward, error) {
	out := make([]Reward, len(samples))
	for i := range out {
		out[i].Total = float64(i)
	}
	return out, nil
}

// TestConstraintMasksScoring: a prompt's constraint that forces every token
// (one allowed token: sample g repeats digit g, then EOS) is called with
// the sample's index in its group, and its masks go into scoring: each
// forced token then has log-probability 0 under the masked distribution,
// so the loss has no gradient at all. (Scored without the masks, these
// samples, which differ within a group, give a gradient norm of 2.4: checked
// by deleting the masks in the trainer.)
func TestConstraintMasksScoring(t *testing.T) {
	rt := newRuntime(t)
	m := newModel(t, rt, toyConfig(), 6)
	m.SetTraining(false)
	prompts := reversalPrompts(rand.New(rand.NewPCG(5, 5)), 4, 2, 4, map[string]bool{})
	cfg := testConfig()
	maxRow := -1
	for i := range prompts {
		p := prompts[i].Tokens
		prompts[i].Constraint = func(row int, prompt, generated []int, allow []bool) error {
			maxRow = max(maxRow, row)
			want := row % 10 // sample g repeats digit g, then EOS
			if len(generated) == len(p)-1 {
				want = tEOS
			}
			for j := range allow {
				allow[j] = j == want
			}
			return nil
		}
	}
	st := oneStep(t, m, frozenClone(t, m), cfg, prompts, byPosition{})
	if maxRow < 0 || maxRow >= cfg.Group {
		t.Errorf("the constraint saw row %d; want the index in the group, 0..%d", maxRow, cfg.Group-1)
	}
	if st.Updates != 1 || st.GradNorm != 0 || st.KL != 0 || st.FailedSamples != 0 {
		t.Errorf("forced samples: %+v; want one update with a zero gradient and KL", st)
	}
}

// hiddenShare is how the policy's unconstrained probability of token 9,
// which the constraint hides and no answer holds, compares with that of
// the wrong digits the constraint allows: the mean over the answers'
// positions of p(9) / mean p(wrong digit). Learning the task lowers every
// wrong token; this ratio asks whether 9 falls as they do.
func hiddenShare(t *testing.T, m *dragon.Model, prompts []Prompt) float64 {
	t.Helper()
	var sum float64
	var n int
	for _, p := range prompts {
		want := reversed(p.Tokens)
		for j := range want {
			var cs []dragon.Completion
			for tok := range 10 {
				cs = append(cs, dragon.Completion{Prompt: p.Tokens, Tokens: append(slices.Clone(want[:j]), tok)})
			}
			lp, err := m.ScoreNoGrad(context.Background(), cs, dragon.ScoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var wrong float64
			for tok := range 9 {
				if tok != want[j] {
					wrong += math.Exp(lp[tok][j])
				}
			}
			wrong /= 8
			if want[j] == tEOS {
				wrong = wrong * 8 / 9 // every digit is wrong there
			}
			sum += math.Exp(lp[9][j]) / wrong
			n++
		}
	}
	return sum / float64(n)
}

// TestLearnsWhatTheMaskHides: a constraint hides token 9, which no answer
// holds (the prompts have no 9). Trained under the constraint with the
// log-probs renormalised over the allowed tokens, the policy gets no
// reason to lower its unconstrained probability of 9; with the log-probs
// over the whole vocabulary and some samples drawn without the
// constraint (FullVocab, FreeSamples), the free samples that write a 9 are
// the group's worst, and the policy learns to avoid it.
func TestLearnsWhatTheMaskHides(t *testing.T) {
	rt := newRuntime(t)
	rng := rand.New(rand.NewPCG(5, 5))
	var prompts []Prompt
	for _, p := range reversalPrompts(rng, 40, 2, 4, map[string]bool{}) {
		if !slices.Contains(p.Tokens, 9) {
			p.Constraint = func(_ int, _, _ []int, allow []bool) error {
				allow[9] = false
				return nil
			}
			prompts = append(prompts, p)
		}
	}
	// The modes: renormalised log-probs (the default), the full vocabulary
	// alone, free samples alone, both.
	type mode struct{ full, free bool }
	modes := []mode{{false, false}, {true, false}, {false, true}, {true, true}}
	share := map[mode]float64{}
	var start float64
	for _, md := range modes {
		m := newModel(t, rt, toyConfig(), 11)
		m.SetTraining(false)
		start = hiddenShare(t, m, prompts)
		cfg := testConfig()
		cfg.Beta, cfg.Mu, cfg.PromptsPerStep, cfg.AdamW.LR = 0, 2, 4, 5e-3
		cfg.FullVocab = md.full
		if md.free {
			cfg.FreeSamples = 3
		}
		tr, err := NewTrainer(m, nil, cfg, prompts, reversal{partial: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		statsCurve(t, tr, 60)
		tr.Close()
		share[md] = hiddenShare(t, m, prompts)
	}
	t.Logf("unconstrained p(9) / p(wrong digit) on the answers' positions: %.3f at the start; after 60 steps %.3f masked, %.3f full vocabulary, %.3f free samples, %.3f both",
		start, share[modes[0]], share[modes[1]], share[modes[2]], share[modes[3]])
	if both, masked := share[modes[3]], share[modes[0]]; !(both < start/2 && both < masked/2) {
		t.Errorf("p(9) / p(wrong digit): start %.3f, masked %.3f, full vocabulary + free samples %.3f: want the last below half of both", start, masked, both)
	}
}

// TestMaskMassForcedTokens: with every token forced (TestConstraintMasksScoring's
// constraint), GRPO's renormalised loss has no gradient; the mask-mass
// term does (it raises the forced tokens' full-vocabulary probability),
// reports the allowed tokens' mass before the update, and a few steps
// raise that mass.
func TestMaskMassForcedTokens(t *testing.T) {
	rt := newRuntime(t)
	m := newModel(t, rt, toyConfig(), 6)
	m.SetTraining(false)
	prompts := reversalPrompts(rand.New(rand.NewPCG(5, 5)), 4, 2, 4, map[string]bool{})
	for i := range prompts {
		p := prompts[i].Tokens
		prompts[i].Constraint = func(row int, prompt, generated []int, allow []bool) error {
			want := row % 10
			if len(generated) == len(p)-1 {
				want = tEOS
			}
			for j := range allow {
				allow[j] = j == want
			}
			return nil
		}
	}
	cfg := testConfig()
	cfg.MaskMass, cfg.Beta, cfg.AdamW.LR = 1, 0, 5e-3
	tr, err := NewTrainer(m, nil, cfg, prompts, byPosition{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	curve := statsCurve(t, tr, 8)
	first, last := curve[0], curve[len(curve)-1]
	if first.GradNorm == 0 || !(first.AllowedMass > 0 && first.AllowedMass < 1) {
		t.Errorf("first step: gradient norm %v, allowed mass %v; want a gradient and a mass in (0, 1)", first.GradNorm, first.AllowedMass)
	}
	if !(last.AllowedMass > 2*first.AllowedMass) {
		t.Errorf("allowed mass %.4f after 8 steps, %.4f at the first: want it at least doubled", last.AllowedMass, first.AllowedMass)
	}
	t.Logf("the forced tokens' full-vocabulary mass: %.4f at the first step, %.4f at the eighth", first.AllowedMass, last.AllowedMass)
}
