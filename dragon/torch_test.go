//go:build torch

package dragon

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"dragonx/internal/torchrt"
)

var (
	testSeed    = flag.Int64("dragon.seed", 1, "seed of the randomised dragon tests")
	testThreads = flag.Int("dragon.threads", 1, "libtorch threads of the dragon tests (their models are small: one thread is as fast, and immune to an oversubscribed machine)")
)

// seed returns the test seed, logging it when it is not the default.
func seed(t testing.TB) int64 {
	t.Helper()
	if *testSeed != 1 {
		t.Logf("seed %d (-dragon.seed)", *testSeed)
	}
	return *testSeed
}

func newTestRuntime(t testing.TB) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeOptions{Seed: 1, Threads: *testThreads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func newTestModel(t testing.TB, rt *Runtime, cfg Config, seed int64) *Model {
	t.Helper()
	m, err := rt.NewModel(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// tinyConfig is small enough for exhaustive checks.
func tinyConfig() Config {
	return Config{Layers: 2, Width: 32, Heads: 4, Context: 24, Vocab: 13}
}

// randomTokens returns n tokens in [0, vocab).
func randomTokens(rng *rand.Rand, n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(vocab)
	}
	return out
}

// rssBytes is the process's resident set size.
func rssBytes(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

func TestRuntimeSettings(t *testing.T) {
	rt, err := NewRuntime(RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	info := rt.Info()
	t.Logf("runtime: %+v", info)
	if info.Threads != DefaultThreads {
		t.Errorf("Info().Threads = %d; want %d", info.Threads, DefaultThreads)
	}
	if !info.MallocTuned {
		t.Error("malloc settings were not applied at load time")
	}
	if !info.DenormalsFlushed {
		t.Error("denormals are not flushed on the torch thread")
	}
	if info.CoreType != os.Getenv("OPENBLAS_CORETYPE") {
		t.Errorf("Info().CoreType = %q; want the environment's %q", info.CoreType, os.Getenv("OPENBLAS_CORETYPE"))
	}
	rt2, err := NewRuntime(RuntimeOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if got := rt2.Info().Threads; got != 1 {
		t.Errorf("Threads: 1 gave %d threads", got)
	}
}

func TestClosedRuntime(t *testing.T) {
	rt, err := NewRuntime(RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.NewModel(tinyConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := m.Logits([]int{1}); err != ErrClosed {
		t.Errorf("Logits on a closed model: %v; want ErrClosed", err)
	}
	rt.Close()
	if _, err := rt.NewModel(tinyConfig(), 1); err != ErrClosed {
		t.Errorf("NewModel on a closed runtime: %v; want ErrClosed", err)
	}
}

// gradEnabled reports the torch thread's autograd mode.
func gradEnabled(t *testing.T, rt *Runtime) bool {
	var on bool
	if err := rt.do(func() error { on = torchrt.GradEnabled(); return nil }); err != nil {
		t.Fatal(err)
	}
	return on
}

func TestGradModeRestored(t *testing.T) {
	rt := newTestRuntime(t)
	m := newTestModel(t, rt, tinyConfig(), 1)
	exs := []Example{{Prompt: []int{1, 2}, Target: []int{3, 4}}}
	tr, err := NewTrainer(m, DefaultTrainConfig(), exs, exs)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	steps := []struct {
		name string
		run  func() error
	}{
		{"Logits", func() error { _, err := m.Logits([]int{1, 2}); return err }},
		{"Sample", func() error {
			_, err := m.Sample(context.Background(), [][]int{{1}}, SampleOptions{MaxNew: 2})
			return err
		}},
		{"Eval", func() error { _, err := tr.Eval(context.Background()); return err }},
		{"TrainStep", func() error { _, err := tr.TrainStep(context.Background()); return err }},
		{"failing Logits", func() error { m.Logits(nil); return nil }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !gradEnabled(t, rt) {
			t.Errorf("autograd is off after %s", s.name)
		}
	}
}

// TestGradientCheck compares the model's autograd gradients with central
// finite differences of the loss, in float64, for entries of every
// parameter tensor: a wiring error anywhere (attention, mask, norms, tied
// head, loss masking) shows up as a mismatch.
func TestGradientCheck(t *testing.T) {
	rt := newTestRuntime(t)
	cfg := Config{Layers: 2, Width: 8, Heads: 2, Context: 8, Vocab: 7}
	rng := rand.New(rand.NewPCG(uint64(seed(t)), 7))
	vals := initValues(cfg, seed(t))
	// Larger weights than the 0.02 init, so every path carries a gradient
	// well above rounding; non-trivial LayerNorm and bias values too.
	for _, v := range vals {
		for j := range v {
			v[j] += rng.NormFloat64() * 0.3
		}
	}
	m, err := rt.newModel(cfg, gotch.Double, func(i int, s paramSpec) (*ts.Tensor, error) {
		return floatTensor(vals[i], gotch.Double, s.Shape)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exs := []Example{
		{Prompt: []int{1, 2, 3}, Target: []int{4, 5, 6}},
		{Prompt: []int{6}, Target: []int{0, 1}},
		{Prompt: []int{2, 2, 5, 1}, Target: []int{3, 3, 0, 4}},
	}
	mb := makeMicroBatch(exs, []int{0, 1, 2}, padding{})
	loss := func() float64 {
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
	// Autograd gradients.
	grads := make([][]float64, len(m.params))
	err = m.do(func() error {
		var a arena
		defer a.reset()
		a.backward(m.lossSum(&a, &mb, true))
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
		return a.err
	})
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-5
	checked := 0
	for i, s := range m.specs {
		n := int(s.numel())
		for range 4 {
			j := rng.IntN(n)
			orig := vals[i][j]
			set := func(x float64) {
				vals[i][j] = x
				err := m.do(func() error {
					return noGrad(func() error {
						src, err := floatTensor(vals[i], gotch.Double, s.Shape)
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
			up := loss()
			set(orig - h)
			down := loss()
			set(orig)
			fd := (up - down) / (2 * h)
			g := grads[i][j]
			if diff := math.Abs(fd - g); diff > 1e-6*max(1, math.Abs(g)) {
				t.Errorf("%s[%d]: autograd %.10g, finite difference %.10g (|diff| %.2g)", s.Name, j, g, fd, diff)
			}
			checked++
		}
	}
	t.Logf("checked %d gradient entries over %d tensors", checked, len(m.specs))
}
