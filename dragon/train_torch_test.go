//go:build torch

package dragon

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"dragonx/internal/progress"
	"dragonx/internal/torchrt"
)

// Tokens of the reversal task: digits 0-9, then BOS, SEP and EOS.
const (
	revBOS   = 10
	revSEP   = 11
	revEOS   = 12
	revVocab = 13
)

// reversalExamples returns n examples "BOS d1..dk SEP" -> "dk..d1 EOS" with
// k in [minLen, maxLen], none of whose digit strings is in skip; it adds
// the strings it made to skip.
func reversalExamples(rng *rand.Rand, n, minLen, maxLen int, skip map[string]bool) []Example {
	var exs []Example
	for len(exs) < n {
		k := minLen + rng.IntN(maxLen-minLen+1)
		d := randomTokens(rng, k, 10)
		key := fmt.Sprint(d)
		if skip[key] {
			continue
		}
		skip[key] = true
		prompt := append(append([]int{revBOS}, d...), revSEP)
		target := slices.Clone(d)
		slices.Reverse(target)
		exs = append(exs, Example{Prompt: prompt, Target: append(target, revEOS)})
	}
	return exs
}

// exactMatch is the fraction of examples whose greedy continuation is
// exactly the target.
func exactMatch(t *testing.T, m *Model, exs []Example) float64 {
	t.Helper()
	prompts := make([][]int, len(exs))
	for i, ex := range exs {
		prompts[i] = ex.Prompt
	}
	out, err := m.Sample(context.Background(), prompts, SampleOptions{MaxNew: 12, Stop: []int{revEOS}})
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, s := range out {
		if slices.Equal(s.Tokens, exs[i].Target) {
			ok++
		}
	}
	return float64(ok) / float64(len(exs))
}

// TestLearnsReversal trains a small model to reverse digit strings of
// lengths 4-7 and checks that greedy decoding gets at least 95% of held-out
// strings exactly right within 1,500 steps (it usually takes 500-700; the
// test stops as soon as it gets there). A model with a wiring error (mask,
// positions, loss masking, optimizer) stays far below.
func TestLearnsReversal(t *testing.T) {
	rt := newTestRuntime(t)
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 3))
	seen := map[string]bool{}
	heldOut := reversalExamples(rng, 200, 4, 7, seen)
	train := reversalExamples(rng, 4000, 4, 7, seen)
	cfg := Config{Layers: 2, Width: 128, Heads: 4, Context: 16, Vocab: revVocab}
	m := newTestModel(t, rt, cfg, seed(t))
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.LR, tc.MinLR, tc.Warmup, tc.Seed = 1500, 32, 3e-3, 3e-4, 50, seed(t)
	tr, err := NewTrainer(m, tc, train, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	start := time.Now()
	em := exactMatch(t, m, heldOut)
	if em > 0.05 {
		t.Fatalf("untrained model: exact match %.1f%%", 100*em)
	}
	var tokens int
	for em < 0.95 && tr.Step() < tc.Steps {
		st, err := tr.TrainStep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tokens += st.Tokens
		if st.Step >= 300 && st.Step%100 == 0 {
			em = exactMatch(t, m, heldOut)
		}
	}
	eval, err := tr.Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("%d steps in %v (%.0f tok/s): held-out loss %.4f, exact match %.1f%%",
		tr.Step(), el.Round(time.Millisecond), float64(tokens)/el.Seconds(), eval, 100*em)
	if em < 0.95 {
		t.Errorf("held-out exact match %.1f%% after %d steps; want >= 95%%", 100*em, tr.Step())
	}
}

// TestRun checks Trainer.Run's loss curve, progress events and summary.
func TestRun(t *testing.T) {
	rt := newTestRuntime(t)
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 6))
	seen := map[string]bool{}
	heldOut := reversalExamples(rng, 20, 2, 5, seen)
	train := reversalExamples(rng, 100, 2, 5, seen)
	m := newTestModel(t, rt, Config{Layers: 1, Width: 32, Heads: 2, Context: 12, Vocab: revVocab}, 1)
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.Warmup, tc.EvalEvery = 25, 8, 5, 10
	tr, err := NewTrainer(m, tc, train, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var curve bytes.Buffer
	var events []progress.Event
	sum, err := tr.Run(context.Background(), progress.Func(func(e progress.Event) { events = append(events, e) }), &curve)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&curve).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != tc.Steps+1 || !slices.Equal(rows[0], curveHeader) {
		t.Fatalf("loss curve has %d rows (header %v); want %d", len(rows), rows[0], tc.Steps+1)
	}
	for i, r := range rows[1:] {
		step := i + 1
		if r[0] != strconv.Itoa(step) {
			t.Errorf("curve row %d has step %s", step, r[0])
		}
		if hasEval := r[3] != ""; hasEval != (step%10 == 0 || step == tc.Steps) {
			t.Errorf("curve row of step %d: eval_loss %q", step, r[3])
		}
	}
	first, _ := strconv.ParseFloat(rows[1][2], 64)
	if !(sum.Loss < first) || math.IsNaN(sum.EvalLoss) || sum.Steps != tc.Steps || sum.Tokens <= 0 {
		t.Errorf("summary %+v (first loss %v)", sum, first)
	}
	if n := len(events); n != tc.Steps || events[n-1].Done != int64(tc.Steps) || events[n-1].Total != int64(tc.Steps) ||
		!strings.Contains(events[n-1].Note, "tok/s") || !strings.Contains(events[n-1].Note, "eval") {
		t.Errorf("%d progress events, last %+v", n, events[len(events)-1])
	}
	// A finished trainer's Run does nothing; a cancelled context stops it.
	if s, err := tr.Run(context.Background(), nil, nil); err != nil || s.Steps != tc.Steps || s.Tokens != 0 {
		t.Errorf("Run after the last step: %+v, %v", s, err)
	}
	tr2, err := NewTrainer(m, tc, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr2.Run(ctx, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}

// trainLosses runs steps of tr and returns their losses.
func trainLosses(t *testing.T, tr *Trainer, steps int) []float64 {
	t.Helper()
	var out []float64
	for range steps {
		st, err := tr.TrainStep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st.Loss)
	}
	return out
}

// TestResumeContinuesLossCurve trains 12 steps straight, and 5 steps then a
// checkpoint, a resume and 7 more; the losses must be the same (dropout,
// gradient accumulation, several epochs and the schedule included).
func TestResumeContinuesLossCurve(t *testing.T) {
	rt := newTestRuntime(t)
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 4))
	train := reversalExamples(rng, 40, 2, 6, map[string]bool{})
	cfg := Config{Layers: 2, Width: 32, Heads: 4, Context: 16, Vocab: revVocab, Dropout: 0.2}
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.Accum, tc.Warmup, tc.Bucket, tc.Seed = 12, 4, 2, 3, 2, seed(t)

	m1 := newTestModel(t, rt, cfg, 5)
	tr1, err := NewTrainer(m1, tc, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr1.Close()
	want := trainLosses(t, tr1, 12)

	m2 := newTestModel(t, rt, cfg, 5)
	tr2, err := NewTrainer(m2, tc, train, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := trainLosses(t, tr2, 5)
	var ck bytes.Buffer
	if err := tr2.WriteCheckpoint(&ck); err != nil {
		t.Fatal(err)
	}
	tr2.Close()
	// Disturb libtorch's RNG, as other work between save and resume would
	// (a dropout forward, another trainer): draw from its generator on the
	// torch thread, and check the state moved. (Sample would not do: it
	// draws from Go's RNG only.)
	err = m2.do(func() error {
		before, err := torchrt.RNGState()
		if err != nil {
			return err
		}
		x, err := ts.Rand([]int64{1000}, gotch.Float, gotch.CPU)
		if err != nil {
			return err
		}
		x.Drop()
		after, err := torchrt.RNGState()
		if err != nil {
			return err
		}
		if bytes.Equal(before, after) {
			return errors.New("drawing from libtorch's generator left its state unchanged")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ResumeTrainer(bytes.NewReader(ck.Bytes()), train[1:], nil); err == nil {
		t.Error("ResumeTrainer accepted different training examples")
	}
	tr3, err := rt.ResumeTrainer(bytes.NewReader(ck.Bytes()), train, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr3.Model().Close()
	defer tr3.Close()
	if tr3.Step() != 5 {
		t.Fatalf("resumed at step %d; want 5", tr3.Step())
	}
	got = append(got, trainLosses(t, tr3, 7)...)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
			t.Errorf("step %d: loss %.9g after resume, %.9g straight", i+1, got[i], want[i])
		}
	}
	// Without restoring the RNG (dropout masks) the curve would differ:
	// make sure dropout is really exercised by this test.
	if slices.Equal(got[:5], want[5:10]) {
		t.Error("degenerate loss curve")
	}
}

// TestMemoryFlat checks that neither training nor sampling leaks: after a
// warm-up, the resident set may not grow by more than 1 MB per 1,000
// training steps or per 100,000 sampled tokens (the soak version with
// larger models runs under make bench).
func TestMemoryFlat(t *testing.T) {
	rt := newTestRuntime(t)
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 5))
	train := reversalExamples(rng, 256, 3, 7, map[string]bool{})
	cfg := Config{Layers: 2, Width: 32, Heads: 4, Context: 16, Vocab: revVocab, Dropout: 0.1}
	m := newTestModel(t, rt, cfg, 1)
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.Warmup = 1<<20, 16, 10
	tr, err := NewTrainer(m, tc, train, train[:32])
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The warm-up lets the heap reach its high-water mark: the
	// bucketed micro-batches vary in shape, and glibc keeps what it got.
	steps := 2000
	// FreeOSMemory collects and returns the Go heap's free pages to the
	// OS, so that the Go side's retained pages (which vary run to run by a
	// few MB) do not count as growth.
	measure := func() int64 {
		debug.FreeOSMemory()
		return rssBytes(t)
	}
	trainLosses(t, tr, 1000)
	before := measure()
	trainLosses(t, tr, steps)
	if _, err := tr.Eval(context.Background()); err != nil {
		t.Fatal(err)
	}
	grow := float64(measure()-before) / float64(steps) * 1000
	t.Logf("training: RSS %+.0f KB per 1,000 steps over %d steps (RSS %.1f MB)", grow/1024, steps, float64(before)/(1<<20))
	if grow > 1<<20 {
		t.Errorf("training grows the RSS by %.0f KB per 1,000 steps; want < 1 MB", grow/1024)
	}

	prompts := make([][]int, 64)
	for i := range prompts {
		prompts[i] = train[i].Prompt
	}
	opts := SampleOptions{Temperature: 1, TopK: 8, TopP: 0.95}
	sample := func(n int) int { return sampleTokens(t, m, prompts, &opts, n) }
	sample(50000)
	before = measure()
	n := sample(100000)
	grow = float64(measure()-before) / float64(n) * 100000
	t.Logf("sampling: RSS %+.0f KB per 100,000 tokens over %d tokens", grow/1024, n)
	if grow > 1<<20 {
		t.Errorf("sampling grows the RSS by %.0f KB per 100,000 tokens; want < 1 MB", grow/1024)
	}
}

// sampleTokens samples from prompts with opts, a new seed each round, until
// at least n tokens have come out, and returns how many did.
func sampleTokens(t *testing.T, m *Model, prompts [][]int, opts *SampleOptions, n int) int {
	t.Helper()
	tokens := 0
	for tokens < n {
		opts.Seed++
		out, err := m.Sample(context.Background(), prompts, *opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out {
			tokens += len(s.Tokens)
		}
	}
	return tokens
}

var soak = flag.Bool("dragon.soak", false, "run the memory soak test (minutes; make bench runs it)")

// TestSoak is the long form of TestMemoryFlat, run by make bench: the ~2M
// benchmark model on variable-length examples (so micro-batch shapes vary
// as in real fine-tuning), 1,000 measured training steps after 300 of
// warm-up, then 100,000 sampled tokens in batches of 16 after 20,000 of
// warm-up. The bound is the issue's: under 1 MB of RSS growth per 1,000
// steps and per 100,000 tokens.
func TestSoak(t *testing.T) {
	if !*soak {
		t.Skip("run with -dragon.soak (make bench does)")
	}
	rt := newTestRuntime(t)
	t.Logf("runtime: %+v", rt.Info())
	cfg := benchConfigs()[0]
	cfg.Dropout = 0.1
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 8))
	var train []Example
	for range 2000 {
		n := 64 + rng.IntN(cfg.Context-64)
		p := 1 + rng.IntN(n/2)
		seq := randomTokens(rng, n+1, cfg.Vocab)
		train = append(train, Example{Prompt: seq[:p], Target: seq[p:]})
	}
	m := newTestModel(t, rt, cfg, 1)
	tc := DefaultTrainConfig()
	tc.Steps, tc.Batch, tc.Bucket = 1<<20, 8, 8
	tr, err := NewTrainer(m, tc, train, train[:64])
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// FreeOSMemory collects and returns the Go heap's free pages to the
	// OS, so that the Go side's retained pages (which vary run to run by a
	// few MB) do not count as growth.
	measure := func() int64 {
		debug.FreeOSMemory()
		return rssBytes(t)
	}
	trainLosses(t, tr, 300)
	before := measure()
	inUse0, held0 := torchrt.Heap()
	start := time.Now()
	const steps = 1000
	trainLosses(t, tr, steps)
	if _, err := tr.Eval(context.Background()); err != nil {
		t.Fatal(err)
	}
	grow := float64(measure() - before)
	inUse1, held1 := torchrt.Heap()
	t.Logf("training: %d steps in %v, RSS %.1f MB -> %+.0f KB per 1,000 steps", steps, time.Since(start).Round(time.Second),
		float64(before)/(1<<20), grow/1024*1000/steps)
	t.Logf("training: C heap in use %.1f -> %.1f MB, held by glibc %.1f -> %.1f MB",
		float64(inUse0)/(1<<20), float64(inUse1)/(1<<20), float64(held0)/(1<<20), float64(held1)/(1<<20))
	if grow*1000/steps > 1<<20 {
		t.Errorf("training grows the RSS by %.0f KB per 1,000 steps; want < 1 MB", grow/1024*1000/steps)
	}

	prompts := make([][]int, 16)
	for i := range prompts {
		prompts[i] = train[i].Prompt[:min(len(train[i].Prompt), 32)]
	}
	opts := SampleOptions{Temperature: 1, TopK: 40, MaxNew: 200}
	sample := func(n int) int { return sampleTokens(t, m, prompts, &opts, n) }
	sample(50000)
	before = measure()
	start = time.Now()
	n := sample(100000)
	grow = float64(measure()-before) / float64(n) * 100000
	t.Logf("sampling: %d tokens in %v, RSS %+.0f KB per 100,000 tokens", n, time.Since(start).Round(time.Second), grow/1024)
	if grow > 1<<20 {
		t.Errorf("sampling grows the RSS by %.0f KB per 100,000 tokens; want < 1 MB", grow/1024)
	}
}

// TestZeroMinLRFinite trains with min_lr = 0 to the last step, whose
// learning rate is exactly 0, and checks every weight stays finite and
// unchanged by that step; likewise with a min_lr so small (1e-45) that the
// AdamW factors, which divide by it, overflow float32. The position
// embeddings past the longest example never get a gradient, so their
// second moments stay 0: the AdamW step must not divide by the learning
// rate there (it once computed 0·(-Inf) = NaN).
func TestZeroMinLRFinite(t *testing.T) {
	for _, minLR := range []float64{0, 1e-45} {
		t.Run(fmt.Sprint(minLR), func(t *testing.T) {
			rt := newTestRuntime(t)
			rng := rand.New(rand.NewPCG(uint64(seed(t)), 9))
			train := reversalExamples(rng, 32, 2, 4, map[string]bool{})
			m := newTestModel(t, rt, Config{Layers: 1, Width: 32, Heads: 2, Context: 32, Vocab: revVocab}, 1)
			tc := DefaultTrainConfig()
			tc.Steps, tc.Batch, tc.Warmup, tc.MinLR = 6, 8, 2, minLR
			if lr := tc.LRAt(tc.Steps - 1); lr != minLR {
				t.Fatalf("the last step's learning rate is %v; the test needs exactly %v", lr, minLR)
			}
			tr, err := NewTrainer(m, tc, train, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			before, err := modelValues(m)
			if err != nil {
				t.Fatal(err)
			}
			trainLosses(t, tr, tc.Steps-1)
			mid, err := modelValues(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.TrainStep(context.Background()); err != nil {
				t.Fatal(err)
			}
			after, err := modelValues(m)
			if err != nil {
				t.Fatal(err)
			}
			for i, vs := range after {
				name := m.specs[i].Name
				for j, v := range vs {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s[%d] = %v after the step with lr %v", name, j, v, minLR)
					}
					// Such a learning rate changes nothing (the decay too is
					// lr-scaled).
					if v != mid[i][j] {
						t.Fatalf("%s[%d] changed from %v to %v at lr %v", name, j, mid[i][j], v, minLR)
					}
				}
			}
			if slices.EqualFunc(before, mid, slices.Equal) {
				t.Error("the steps before the last did not train")
			}
		})
	}
}

// modelValues copies m's parameters out.
func modelValues(m *Model) ([][]float32, error) {
	var vals [][]float32
	err := m.do(func() error {
		var err error
		vals, err = m.paramValues()
		return err
	})
	return vals, err
}
