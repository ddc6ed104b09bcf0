package grammar

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/postproc"
	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

func setup(t testing.TB, family string, index int) (*ir.PrimFunc, *vocab.Vocab, *Grammar) {
	t.Helper()
	spec, err := workload.BenchmarkSpec(family, index)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), f, v, 1)
	if err != nil {
		t.Fatal(err)
	}
	return f, v, g
}

// walk feeds random allowed tokens until the script is done; it fails on
// a dead end (no token allowed before <eos>).
func walk(t testing.TB, g *Grammar, r *rand.Rand) []int {
	t.Helper()
	st := g.Start()
	for !st.Done() {
		a := st.Allowed()
		if len(a) == 0 {
			t.Fatalf("dead end after %d tokens", len(st.Tokens()))
		}
		if err := st.Feed(a[r.IntN(len(a))]); err != nil {
			t.Fatal(err)
		}
	}
	return st.Tokens()
}

// TestRandomWalk: for every benchmark shape, random walks that always
// pick an allowed token end (never a dead end) in a script that decodes
// and replays on the workload; the log says how many the CUDA
// postprocessors also accept (without WithThreadLimits, GPU limits are
// not the grammar's).
func TestRandomWalk(t *testing.T) {
	walks := 8
	if testing.Short() {
		walks = 2
	}
	ctx := context.Background()
	for _, b := range workload.Benchmarks() {
		if testing.Short() && b.Index != 0 {
			continue
		}
		t.Run(b.Name(), func(t *testing.T) {
			f, v, g := setup(t, b.Family, b.Index)
			r := rand.New(rand.NewPCG(uint64(b.Index), 7))
			accepted := 0
			for i := 0; i < walks; i++ {
				toks := walk(t, g, r)
				text, err := v.Decode(toks[:len(toks)-1])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := encode.Decode(ctx, f, []byte(text), encode.Options{Postprocs: []postproc.Postproc{}}); err != nil {
					t.Fatalf("walk %d does not decode: %v\n%s", i, err, text)
				}
				if _, err := encode.Decode(ctx, f, []byte(text), encode.Options{}); err == nil {
					accepted++
				}
			}
			t.Logf("%d walks replay, %d also pass the CUDA postprocessors", walks, accepted)
		})
	}
}

// TestSampledScriptsAllowed: the scripts of the sampler's draws (those
// the postprocessors reject too: the grammar does not judge GPU limits)
// are allowed token for token: the grammar covers the design space.
func TestSampledScriptsAllowed(t *testing.T) {
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM", "CBR", "TBG"} {
		f, v, g := setup(t, fam, 0)
		draws := sampledScripts(t, f, v, 12, false)
		for _, d := range draws {
			st := g.Start()
			for i, tok := range d.toks {
				if err := st.Feed(tok); err != nil {
					t.Fatalf("%s draw %d: token %d: %v", fam, d.index, i, err)
				}
			}
			if !st.Done() {
				t.Fatalf("%s draw %d: not done after <eos>", fam, d.index)
			}
		}
		if len(draws) == 0 {
			t.Errorf("%s: every draw among 12 was rejected in replay", fam)
		}
	}
}

// drawn is the script of one of the sampler's draws.
type drawn struct {
	index int   // the draw's
	toks  []int // <eos> included
}

// sampledScripts returns the scripts of n draws (seed 5) of f's design
// space that replay, as the grammar completes them: the sketch with its
// decisions, then EnterPostproc and <eos>. With accepted, only those the
// postprocessors accept too.
func sampledScripts(t testing.TB, f *ir.PrimFunc, v *vocab.Vocab, n int, accepted bool) []drawn {
	t.Helper()
	ctx := context.Background()
	sp, err := sample.NewSpace(ctx, f, 1, sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := sp.DrawN(ctx, 5, n)
	if err != nil {
		t.Fatal(err)
	}
	eos, _ := v.ID(vocab.EOS)
	var out []drawn
	for _, s := range ss {
		if !s.OK() && (accepted || s.Rejection.Phase == verdict.PhaseReplay) {
			continue
		}
		script, err := encode.Encode(f, s.Trace.WithoutPostproc())
		if err != nil {
			t.Fatal(err)
		}
		toks, err := v.Encode(string(script) + "EnterPostproc\n")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, drawn{index: s.Index, toks: append(toks, eos)})
	}
	return out
}

// limited returns f's grammar WithThreadLimits.
func limited(t testing.TB, f *ir.PrimFunc, v *vocab.Vocab) *Grammar {
	t.Helper()
	g, err := New(context.Background(), f, v, 1, WithThreadLimits())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestDecisionsConstrained: at a tile decision only the divisors that
// can complete a tiling are allowed, the last factor is forced, and a
// token outside the set is refused without changing the state.
func TestDecisionsConstrained(t *testing.T) {
	_, v, g := setup(t, "GMM", 0) // loops of extent 1, 128, 128, 128
	st := g.Start()
	id := func(s string) int {
		x, ok := v.ID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return x
	}
	prefix := []string{"GetBlock", "|", "#1", `"main"`, "\n", "GetBlock", "|", "#0", `"main"`, "\n",
		"Annotate", "b0", `"SSSRRSRS"`, "|", `"meta_schedule.tiling_structure"`, "\n", "GetLoops", "b0", "\n",
		"Split", "l0", "(", "SamplePerfectTile", "l0", "|", "5", "64", "=", "[", "1", "1", "1", "1", "1", "]", ")", "|", "1", "0", "\n",
		"Split", "l1", "(", "SamplePerfectTile", "l1", "|", "5", "64", "=", "["}
	for _, s := range prefix {
		if err := st.Feed(id(s)); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	}
	want := func(vals ...string) {
		t.Helper()
		var ids []int
		for _, s := range vals {
			ids = append(ids, id(s))
		}
		slices.Sort(ids)
		if got := st.Allowed(); !slices.Equal(got, ids) {
			t.Fatalf("allowed %v, want %v", got, ids)
		}
	}
	want("1", "2", "4", "8", "16", "32", "64", "128")
	if err := st.Feed(id("3")); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("feeding 3: %v", err)
	}
	want("1", "2", "4", "8", "16", "32", "64", "128")
	for _, s := range []string{"8", "4", "1"} {
		if err := st.Feed(id(s)); err != nil {
			t.Fatal(err)
		}
	}
	// 128/8/4/1 = 4 left for two factors, the innermost at most 64.
	want("1", "2", "4")
	if err := st.Feed(id("2")); err != nil {
		t.Fatal(err)
	}
	want("2") // forced
	if err := st.Feed(id("2")); err != nil {
		t.Fatal(err)
	}
	want("]")
}

// BenchmarkAllowed measures next-token sets per second along random walks
// (each step: Allowed, then Feed of one of them), GMM/0, C2D/0 and C3D/0,
// without and with WithThreadLimits (the "limits" runs).
func BenchmarkAllowed(b *testing.B) {
	for _, name := range []string{"GMM", "C2D", "C3D", "GMM/limits", "C2D/limits", "C3D/limits"} {
		fam, limits, _ := strings.Cut(name, "/")
		b.Run(name, func(b *testing.B) {
			f, v, g := setup(b, fam, 0)
			if limits != "" {
				var err error
				if g, err = New(context.Background(), f, v, 1, WithThreadLimits()); err != nil {
					b.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			sets := 0
			start := time.Now()
			for i := 0; i < b.N; i++ {
				st := g.Start()
				for !st.Done() {
					a := st.Allowed()
					sets++
					if err := st.Feed(a[r.IntN(len(a))]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(sets)/time.Since(start).Seconds(), "sets/s")
			b.ReportMetric(float64(sets)/float64(b.N), "sets/script")
		})
	}
}

// TestNext: the callback over whole prefixes gives the same sets as
// feeding token by token, and refuses a prefix that does not extend what
// it was fed.
func TestNext(t *testing.T) {
	_, v, g := setup(t, "SFM", 0)
	toks := walk(t, g, rand.New(rand.NewPCG(3, 4)))
	st, ref := g.Start(), g.Start()
	for i := 0; i < len(toks); i++ {
		got, err := st.Next(toks[:i])
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.Allowed(); !slices.Equal(got, want) {
			t.Fatalf("after %d tokens: Next %v, Allowed %v", i, got, want)
		}
		if err := ref.Feed(toks[i]); err != nil {
			t.Fatal(err)
		}
	}
	other := slices.Clone(toks[:3])
	other[0] = v.VocabSize() - 1
	if _, err := st.Next(other); err == nil {
		t.Fatal("a prefix that does not extend the state is accepted")
	}
}

// TestFeedAnything: random tokens of the whole vocabulary are refused
// (ErrNotAllowed) unless allowed, and never break the state or panic.
func TestFeedAnything(t *testing.T) {
	_, v, g := setup(t, "C2D", 0)
	r := rand.New(rand.NewPCG(5, 6))
	for w := 0; w < 20; w++ {
		st := g.Start()
		for !st.Done() {
			tok := r.IntN(v.VocabSize()+4) - 2
			allowed := slices.Contains(st.Allowed(), tok)
			err := st.Feed(tok)
			if allowed != (err == nil) || (err != nil && !errors.Is(err, ErrNotAllowed)) {
				t.Fatalf("token %d (allowed %v): %v", tok, allowed, err)
			}
			if !allowed {
				a := st.Allowed()
				if err := st.Feed(a[r.IntN(len(a))]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
