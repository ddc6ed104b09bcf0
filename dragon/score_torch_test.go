//go:build torch

package dragon

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// noisyValues returns initValues of cfg with N(0, 0.3) added, so that the
// model's distributions are far from uniform.
func noisyValues(cfg Config, seed int64) [][]float64 {
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	vals := initValues(cfg, seed)
	for _, v := range vals {
		for j := range v {
			v[j] += rng.NormFloat64() * 0.3
		}
	}
	return vals
}

// modelOf builds a model of dtype with the given weights.
func modelOf(t *testing.T, rt *Runtime, cfg Config, dtype gotch.DType, vals [][]float64) *Model {
	t.Helper()
	m, err := rt.newModel(cfg, dtype, func(i int, s paramSpec) (*ts.Tensor, error) {
		return floatTensor(vals[i], dtype, s.Shape)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func completionsOf(prompts [][]int, out []Sample) []Completion {
	cs := make([]Completion, len(out))
	for i, s := range out {
		cs[i] = Completion{Prompt: prompts[i], Tokens: s.Tokens, Allow: s.Allow}
	}
	return cs
}

// TestScoreMatchesSampler: the teacher-forced log-probabilities of sampled
// tokens equal those the sampler reported (temperature 1, no constraint),
// with and without gradients, batched by one and by all.
func TestScoreMatchesSampler(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := modelOf(t, rt, cfg, gotch.Float, noisyValues(cfg, seed(t)))
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 12))
	prompts := [][]int{randomTokens(rng, 3, cfg.Vocab), randomTokens(rng, 7, cfg.Vocab), randomTokens(rng, 1, cfg.Vocab)}
	out, err := m.Sample(context.Background(), prompts, SampleOptions{Temperature: 1, MaxNew: 9, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cs := completionsOf(prompts, out)
	ctx := context.Background()
	for _, batch := range []int{0, 1} {
		ng, err := m.ScoreNoGrad(ctx, cs, ScoreOptions{Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		m.SetTraining(false)
		s, err := m.Score(ctx, cs, ScoreOptions{Batch: batch})
		m.SetTraining(true)
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
		for i := range out {
			for j, lp := range out[i].LogProbs {
				if d := math.Abs(ng[i][j] - float64(lp)); d > 1e-5 {
					t.Errorf("batch %d: completion %d token %d: scored %v, sampler %v", batch, i, j, ng[i][j], lp)
				}
				if s.LogProbs[i][j] != ng[i][j] {
					t.Errorf("batch %d: completion %d token %d: with grad %v, without %v", batch, i, j, s.LogProbs[i][j], ng[i][j])
				}
			}
		}
	}
}

// TestScoreFloat64 compares the float32 scores with those of the same
// weights in float64, and masked scores with a float64 renormalisation of
// Logits over the allowed tokens.
func TestScoreFloat64(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	vals := noisyValues(cfg, seed(t))
	m32 := modelOf(t, rt, cfg, gotch.Float, vals)
	m64 := modelOf(t, rt, cfg, gotch.Double, vals)
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 13))
	var cs []Completion
	for range 4 {
		c := Completion{Prompt: randomTokens(rng, 1+rng.IntN(6), cfg.Vocab), Tokens: randomTokens(rng, 1+rng.IntN(8), cfg.Vocab)}
		c.Allow = make([][]bool, len(c.Tokens))
		for j, tok := range c.Tokens {
			if rng.IntN(3) == 0 {
				continue // nil: all allowed
			}
			c.Allow[j] = make([]bool, cfg.Vocab)
			for v := range c.Allow[j] {
				c.Allow[j][v] = v == tok || rng.IntN(2) == 0
			}
		}
		cs = append(cs, c)
	}
	ctx := context.Background()
	got32, err := m32.ScoreNoGrad(ctx, cs, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got64, err := m64.ScoreNoGrad(ctx, cs, ScoreOptions{Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	renormalised := 0
	for i, c := range cs {
		seq := append(append([]int(nil), c.Prompt...), c.Tokens...)
		logits, err := m64.Logits(seq[:len(seq)-1])
		if err != nil {
			t.Fatal(err)
		}
		for j, tok := range c.Tokens {
			row := logits[len(c.Prompt)-1+j]
			lse := math.Inf(-1)
			for v, l := range row {
				if c.Allow[j] == nil || c.Allow[j][v] {
					lse = logAddExp(lse, float64(l))
				}
			}
			want := float64(row[tok]) - lse
			if d := math.Abs(got64[i][j] - want); d > 1e-5 {
				t.Errorf("completion %d token %d: float64 score %v, renormalised logits %v", i, j, got64[i][j], want)
			}
			if d := math.Abs(got32[i][j] - got64[i][j]); d > 1e-5 {
				t.Errorf("completion %d token %d: float32 %v, float64 %v", i, j, got32[i][j], got64[i][j])
			}
			if c.Allow[j] != nil {
				renormalised++
			}
		}
	}
	if renormalised == 0 {
		t.Fatal("no masked token was checked")
	}
}

func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	m := max(a, b)
	return m + math.Log(math.Exp(a-m)+math.Exp(b-m))
}

// TestScoreGradientCheck: in float64, Scores.Backward of the derivatives of
// a non-linear function of the (partly masked) log-probabilities gives the
// model gradient that finite differences of that function give.
func TestScoreGradientCheck(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := Config{Layers: 2, Width: 8, Heads: 2, Context: 10, Vocab: 7}
	vals := noisyValues(cfg, seed(t))
	m := modelOf(t, rt, cfg, gotch.Double, vals)
	m.SetTraining(false)
	all := make([]bool, cfg.Vocab)
	some := []bool{true, false, true, true, false, true, true}
	cs := []Completion{
		{Prompt: []int{1, 2, 3}, Tokens: []int{4, 5, 6}, Allow: [][]bool{nil, some, all}},
		{Prompt: []int{6}, Tokens: []int{0, 3}},
		{Prompt: []int{2, 2, 5, 1}, Tokens: []int{3, 3, 0, 2, 2}, Allow: [][]bool{some, nil, some, nil, some}},
	}
	for i := range all {
		all[i] = true
	}
	// f = Σ c·lp + ½ Σ lp², so df/dlp = c + lp.
	coef := [][]float64{{0.5, -1, 2}, {1, -0.3}, {0.2, 0.7, -1.1, 0.4, 1.3}}
	f := func(lp [][]float64) (float64, [][]float64) {
		var v float64
		d := make([][]float64, len(lp))
		for i := range lp {
			d[i] = make([]float64, len(lp[i]))
			for j, x := range lp[i] {
				v += coef[i][j]*x + 0.5*x*x
				d[i][j] = coef[i][j] + x
			}
		}
		return v, d
	}
	ctx := context.Background()
	s, err := m.Score(ctx, cs, ScoreOptions{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, d := f(s.LogProbs)
	if err := s.Backward(d); err != nil {
		t.Fatal(err)
	}
	if err := s.Backward(d); err == nil {
		t.Error("a second Backward succeeded")
	}
	grads := make([][]float64, len(m.params))
	err = m.do(func() error {
		var a arena
		defer a.reset()
		for i, p := range m.params {
			g := a.grad(p)
			if a.err != nil {
				return a.err
			}
			var err error
			if grads[i], err = float64Values(g, m.dtype, int(m.specs[i].numel())); err != nil {
				return err
			}
		}
		m.zeroGrads()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	value := func() float64 {
		lp, err := m.ScoreNoGrad(ctx, cs, ScoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := f(lp)
		return v
	}
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 14))
	const h = 1e-5
	for i, sp := range m.specs {
		for range 3 {
			j := rng.IntN(int(sp.numel()))
			orig := vals[i][j]
			set := func(x float64) {
				vals[i][j] = x
				err := m.do(func() error {
					return noGrad(func() error {
						src, err := floatTensor(vals[i], gotch.Double, sp.Shape)
						if err != nil {
							return err
						}
						defer src.Drop()
						if err := m.params[i].Zero_(); err != nil {
							return err
						}
						return m.params[i].Add_(src)
					})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			set(orig + h)
			up := value()
			set(orig - h)
			down := value()
			set(orig)
			fd := (up - down) / (2 * h)
			if g := grads[i][j]; math.Abs(fd-g) > 1e-6*max(1, math.Abs(g)) {
				t.Errorf("%s[%d]: autograd %.10g, finite difference %.10g", sp.Name, j, g, fd)
			}
		}
	}
}

// TestScoreRefusals covers the errors of bad input.
func TestScoreRefusals(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, 1)
	ctx := context.Background()
	no := make([]bool, cfg.Vocab)
	for _, tc := range []struct {
		cs   []Completion
		want string
	}{
		{nil, "no completions"},
		{[]Completion{{Prompt: []int{1}}}, "completion 0 is empty"},
		{[]Completion{{Prompt: nil, Tokens: []int{1}}}, "empty prompt"},
		{[]Completion{{Prompt: []int{1}, Tokens: []int{99}}}, "outside the vocabulary"},
		{[]Completion{{Prompt: []int{1}, Tokens: []int{2}, Allow: [][]bool{no}}}, "not allowed by its mask"},
		{[]Completion{{Prompt: []int{1}, Tokens: []int{2}, Allow: [][]bool{{true}}}}, "entries"},
		{[]Completion{{Prompt: []int{1}, Tokens: []int{2, 3}, Allow: [][]bool{nil}}}, "1 masks for 2 tokens"},
		{[]Completion{{Prompt: make([]int, 20), Tokens: make([]int, 10)}}, "context"},
	} {
		if _, err := m.ScoreNoGrad(ctx, tc.cs, ScoreOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v; want one containing %q", tc.cs, err, tc.want)
		}
	}
	s, err := m.Score(ctx, []Completion{{Prompt: []int{1}, Tokens: []int{2, 3}}}, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Backward([][]float64{{1}}); err == nil {
		t.Error("Backward accepted a gradient of the wrong shape")
	}
}

// TestMinimize: Optimizer.Minimize raises the log-probability of a
// completion when the loss is its negative, reports the gradient norm, and
// leaves a frozen clone (the reference) unchanged.
func TestMinimize(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	m := newTestModel(t, rt, cfg, seed(t))
	m.SetTraining(false)
	ref, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if err := ref.Freeze(); err != nil {
		t.Fatal(err)
	}
	cs := []Completion{{Prompt: []int{1, 2}, Tokens: []int{3, 4, 5}}, {Prompt: []int{7}, Tokens: []int{8, 9}}}
	ctx := context.Background()
	before, err := ref.ScoreNoGrad(ctx, cs, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOptimizer(m, AdamWConfig{LR: 1e-2, MinLR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	negMean := func(lp [][]float64) (float64, [][]float64, error) {
		var v float64
		n := 0
		d := make([][]float64, len(lp))
		for i := range lp {
			n += len(lp[i])
		}
		for i := range lp {
			d[i] = make([]float64, len(lp[i]))
			for j, x := range lp[i] {
				v -= x / float64(n)
				d[i][j] = -1 / float64(n)
			}
		}
		return v, d, nil
	}
	var first, last Minimized
	for step := range 20 {
		r, err := o.Minimize(ctx, cs, ScoreOptions{}, negMean)
		if err != nil {
			t.Fatal(err)
		}
		if r.GradNorm <= 0 || r.Step != step+1 || r.LR != 1e-2 {
			t.Fatalf("step %d: %+v", step, r.OptimStep)
		}
		if step == 0 {
			first = r
		}
		last = r
	}
	if !(last.Loss < first.Loss-0.5) {
		t.Errorf("loss %v -> %v; want a clear decrease", first.Loss, last.Loss)
	}
	if d := math.Abs(first.Loss - -(before[0][0]+before[0][1]+before[0][2]+before[1][0]+before[1][1])/5); d > 1e-5 {
		t.Errorf("first loss %v does not match the reference's scores before training", first.Loss)
	}
	after, err := ref.ScoreNoGrad(ctx, cs, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		for j := range before[i] {
			if after[i][j] != before[i][j] {
				t.Fatalf("the frozen reference changed: %v -> %v", before, after)
			}
		}
	}
	if _, err := ref.Score(ctx, cs, ScoreOptions{}); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("Score of a frozen model: %v", err)
	}
	if _, err := NewOptimizer(ref, o.Config()); err == nil {
		t.Error("NewOptimizer accepted a frozen model")
	}
	if _, err := NewTrainer(ref, DefaultTrainConfig(), []Example{{Prompt: []int{1}, Target: []int{2}}}, nil); err == nil {
		t.Error("NewTrainer accepted a frozen model")
	}
	fresh, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fo, err := NewOptimizer(fresh, o.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	if _, err := fo.Step(); err == nil || !strings.Contains(err.Error(), "no gradient") {
		t.Errorf("a step without a backward pass: %v", err)
	}
	bad := func([][]float64) (float64, [][]float64, error) { return math.NaN(), nil, nil }
	if _, err := o.Minimize(ctx, cs, ScoreOptions{}, bad); err == nil {
		t.Error("Minimize accepted a NaN loss")
	}
}

// TestTrainingSwitch: with dropout, Score in training mode is random and
// differs from ScoreNoGrad; in eval mode it equals it.
func TestTrainingSwitch(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	cfg.Dropout = 0.5
	m := newTestModel(t, rt, cfg, seed(t))
	cs := []Completion{{Prompt: []int{1, 2, 3}, Tokens: []int{4, 5, 6, 7}}}
	ctx := context.Background()
	want, err := m.ScoreNoGrad(ctx, cs, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	score := func() []float64 {
		s, err := m.Score(ctx, cs, ScoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
		return s.LogProbs[0]
	}
	if !m.Training() {
		t.Fatal("a new model is not in training mode")
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if same(score(), want[0]) {
		t.Error("training mode: Score equals the dropout-free scores")
	}
	m.SetTraining(false)
	if got := score(); !same(got, want[0]) {
		t.Errorf("eval mode: Score %v, ScoreNoGrad %v", got, want)
	}
}

// TestClone: a clone has the same logits and is independent of the
// original.
func TestClone(t *testing.T) {
	rt := newTestRuntime(t)
	m := newTestModel(t, rt, tinyConfig(), seed(t))
	m.SetTokenizer("tok")
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Tokenizer() != "tok" || c.Frozen() || !c.Training() {
		t.Errorf("clone: tokenizer %q frozen %v training %v", c.Tokenizer(), c.Frozen(), c.Training())
	}
	a, _ := modelValues(m)
	b, _ := modelValues(c)
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("%s[%d]: clone %v, original %v", m.specs[i].Name, j, b[i][j], a[i][j])
			}
		}
	}
	// A frozen clone scores exactly as the original (eval mode, with
	// gradients): a GRPO ratio against it is exactly 1, its KL exactly 0.
	ref, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ref.Freeze()
	ctx := context.Background()
	sc := []Completion{{Prompt: []int{1, 2, 3}, Tokens: []int{4, 5, 6, 7}}, {Prompt: []int{8}, Tokens: []int{9, 10}}}
	want, err := ref.ScoreNoGrad(ctx, sc, ScoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.SetTraining(false)
	s, err := m.Score(ctx, sc, ScoreOptions{})
	m.SetTraining(true)
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
	for i := range want {
		if !slices.Equal(s.LogProbs[i], want[i]) {
			t.Errorf("completion %d: policy %v, frozen clone %v", i, s.LogProbs[i], want[i])
		}
	}
	o, err := NewOptimizer(c, AdamWConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	cs := []Completion{{Prompt: []int{1}, Tokens: []int{2}}}
	if _, err := o.Minimize(ctx, cs, ScoreOptions{}, func(lp [][]float64) (float64, [][]float64, error) {
		return -lp[0][0], [][]float64{{-1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	a2, _ := modelValues(m)
	b2, _ := modelValues(c)
	if a2[0][0] != a[0][0] || b2[0][0] == b[0][0] {
		t.Errorf("after a step of the clone: original wte[0] %v -> %v, clone %v -> %v", a[0][0], a2[0][0], b[0][0], b2[0][0])
	}
}

// TestOptimizerResume: an optimizer restored from its checkpoint continues
// bit for bit (weights, moments, step, schedule), after a real disturbance
// of libtorch's generator, and hands back the caller's state.
func TestOptimizerResume(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := tinyConfig()
	cfg.Dropout = 0.2 // training mode: the RNG state matters
	m := newTestModel(t, rt, cfg, seed(t))
	ac := AdamWConfig{LR: 1e-2, MinLR: 1e-3, Warmup: 2, Steps: 8, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 0.5}
	o, err := NewOptimizer(m, ac)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	cs := []Completion{{Prompt: []int{1, 2}, Tokens: []int{3, 4, 5}}, {Prompt: []int{7}, Tokens: []int{8, 9}}}
	ctx := context.Background()
	loss := func(lp [][]float64) (float64, [][]float64, error) {
		d := [][]float64{{-1, -0.5, -2}, {-1, 1}}
		var v float64
		for i := range lp {
			for j, x := range lp[i] {
				v += d[i][j] * x
			}
		}
		return v, d, nil
	}
	steps := func(o *Optimizer, n int) []Minimized {
		var out []Minimized
		for range n {
			r, err := o.Minimize(ctx, cs, ScoreOptions{}, loss)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	steps(o, 3)
	var ck bytes.Buffer
	if err := o.WriteCheckpoint(&ck, json.RawMessage(`{"cursor":3}`)); err != nil {
		t.Fatal(err)
	}
	want := steps(o, 4)
	wantVals, _ := modelValues(m)

	disturb(t, rt)
	o2, state, err := rt.ResumeOptimizer(bytes.NewReader(ck.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Model().Close()
	defer o2.Close()
	if string(state) != `{"cursor":3}` || o2.Steps() != 3 || o2.Config() != ac {
		t.Errorf("resumed: state %s, step %d, config %+v", state, o2.Steps(), o2.Config())
	}
	got := steps(o2, 4)
	for i := range want {
		if got[i].Loss != want[i].Loss || got[i].GradNorm != want[i].GradNorm || got[i].LR != want[i].LR || got[i].Step != want[i].Step {
			t.Errorf("step %d: resumed %+v; want %+v", i+4, got[i].OptimStep, want[i].OptimStep)
		}
	}
	gotVals, _ := modelValues(o2.Model())
	for i := range wantVals {
		if !slices.Equal(gotVals[i], wantVals[i]) {
			t.Fatalf("%s differs after the resumed steps", m.specs[i].Name)
		}
	}
	if _, err := rt.ResumeTrainer(bytes.NewReader(ck.Bytes()), []Example{{Prompt: []int{1}, Target: []int{2}}}, nil); err == nil || !strings.Contains(err.Error(), "ResumeOptimizer") {
		t.Errorf("ResumeTrainer of an optimizer checkpoint: %v", err)
	}
	var mk bytes.Buffer
	if err := m.WriteCheckpoint(&mk); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.ResumeOptimizer(&mk); err == nil {
		t.Error("ResumeOptimizer of a model checkpoint succeeded")
	}
	if rm, err := rt.ReadCheckpoint(bytes.NewReader(ck.Bytes())); err != nil {
		t.Errorf("ReadCheckpoint of an optimizer checkpoint: %v", err)
	} else {
		rm.Close()
	}
}

// disturb draws from libtorch's generator, so that a resume that does not
// restore it continues differently.
func disturb(t *testing.T, rt *Runtime) {
	t.Helper()
	err := rt.do(func() error {
		x, err := ts.Rand([]int64{16}, gotch.Float, gotch.CPU)
		if err != nil {
			return err
		}
		x.Drop()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
