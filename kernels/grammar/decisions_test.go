package grammar

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCompactExpandRoundTrip: for random walks of several families'
// grammars, with and without WithThreadLimits, Expand(Compact(s)) == s,
// the stream ends with exactly one <eos>, and it holds exactly the tokens
// at the positions the grammar without options does not force; a grammar
// built with limits gives the same stream as one without.
func TestCompactExpandRoundTrip(t *testing.T) {
	ctx := context.Background()
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM", "CBR", "TBG", "C3D", "DEP"} {
		t.Run(fam, func(t *testing.T) {
			f, v, g := setup(t, fam, 0)
			lim, err := New(ctx, f, v, 1, WithThreadLimits())
			if err != nil {
				t.Fatal(err)
			}
			eos := g.eos
			for w := 0; w < walks; w++ {
				for gi, wg := range []*Grammar{g, lim} {
					script := walk(t, wg, rand.New(rand.NewPCG(uint64(w), uint64(gi))))
					stream, err := g.Compact(script)
					if err != nil {
						t.Fatalf("walk %d: Compact: %v", w, err)
					}
					if n := len(stream); n == 0 || stream[n-1] != eos || slices.Contains(stream[:n-1], eos) {
						t.Fatalf("walk %d: the stream %v does not end with one <eos>", w, stream)
					}
					if want := choices(t, g, script); !slices.Equal(stream, want) {
						t.Fatalf("walk %d: stream %v, want the unforced tokens %v", w, stream, want)
					}
					limStream, err := lim.Compact(script)
					if err != nil {
						t.Fatalf("walk %d: Compact with limits: %v", w, err)
					}
					if !slices.Equal(limStream, stream) {
						t.Fatalf("walk %d: with limits the stream is %v, without %v", w, limStream, stream)
					}
					for _, eg := range []*Grammar{g, lim} {
						back, err := eg.Expand(stream)
						if err != nil {
							t.Fatalf("walk %d: Expand: %v", w, err)
						}
						if !slices.Equal(back, script) {
							t.Fatalf("walk %d: Expand(Compact(s)) != s", w)
						}
					}
					if len(stream) >= len(script) {
						t.Fatalf("walk %d: a stream of %d tokens for a script of %d", w, len(stream), len(script))
					}
				}
			}
		})
	}
}

// choices returns the tokens of script at the positions where g (without
// options) allows more than one token, then <eos> unless the last of them
// was: the definition of a decision stream, by Allowed.
func choices(t testing.TB, g *Grammar, script []int) []int {
	t.Helper()
	st := g.Start()
	var out []int
	for _, tok := range script {
		if len(st.Allowed()) > 1 {
			out = append(out, tok)
		}
		if err := st.Feed(tok); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) == 0 || out[len(out)-1] != g.eos {
		out = append(out, g.eos)
	}
	return out
}

// TestExpandErrors: a token not allowed, a stream that ends early (at its
// <eos> or its end) and tokens after its <eos> are errors wrapping
// ErrNotInGrammar.
func TestExpandErrors(t *testing.T) {
	_, _, g := setup(t, "GMM", 0)
	script := walk(t, g, rand.New(rand.NewPCG(1, 1)))
	stream, err := g.Compact(script)
	if err != nil {
		t.Fatal(err)
	}
	if len(stream) < 3 {
		t.Fatalf("a stream of %d tokens: not the case the test means", len(stream))
	}
	bad := slices.Clone(stream)
	bad[1] = g.open // '[' is never a decision's value
	cases := map[string][]int{
		"not allowed":      bad,
		"early <eos>":      append(slices.Clone(stream[:1]), g.eos),
		"no <eos>":         stream[:len(stream)-1],
		"empty":            nil,
		"after the <eos>":  append(slices.Clone(stream), g.eos),
		"out of the vocab": append([]int{-1}, stream[1:]...),
	}
	for name, s := range cases {
		if _, err := g.Expand(s); !errors.Is(err, ErrNotInGrammar) {
			t.Errorf("%s: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, err := g.Compact(script[:len(script)-1]); !errors.Is(err, ErrNotInGrammar) {
		t.Errorf("Compact of a script without its <eos>: %v", err)
	}
}

// walkDecisions walks a decision stream through Next, choosing uniformly
// among the tokens allowed at each decision, until the stream's <eos>.
func walkDecisions(t testing.TB, g *Grammar, r *rand.Rand) []int {
	t.Helper()
	d := g.StartDecisions()
	var stream []int
	for {
		a, err := d.Next(stream)
		if err != nil {
			t.Fatalf("after %d decisions: %v", len(stream), err)
		}
		if len(a) == 0 {
			return stream
		}
		stream = append(stream, a[r.IntN(len(a))])
	}
}

// TestDecisionWalk: walks of decision streams, with and without
// WithThreadLimits, end; their expansion is a script the grammar (with its
// options) accepts token for token, whose Compact is the stream; at each
// decision Next allows what the grammar's State allows at that position.
func TestDecisionWalk(t *testing.T) {
	ctx := context.Background()
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "CBR", "TBG", "C1D", "GRP", "T2D"} {
		t.Run(fam, func(t *testing.T) {
			f, v, g := setup(t, fam, 0)
			lim, err := New(ctx, f, v, 1, WithThreadLimits())
			if err != nil {
				t.Fatal(err)
			}
			for w := 0; w < walks; w++ {
				for gi, wg := range []*Grammar{g, lim} {
					stream := walkDecisions(t, wg, rand.New(rand.NewPCG(uint64(w), uint64(gi))))
					script, err := wg.Expand(stream)
					if err != nil {
						t.Fatalf("walk %d: Expand: %v", w, err)
					}
					again, err := wg.Compact(script)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(again, stream) {
						t.Fatalf("walk %d: Compact(Expand(stream)) %v != stream %v", w, again, stream)
					}
					// The grammar with its options accepts the script, and
					// at every unforced position allows what Next allowed.
					st, d := wg.Start(), wg.StartDecisions()
					k := 0
					for _, tok := range script {
						if len(st.plainAllowed()) > 1 {
							want := slices.Clone(st.Allowed())
							got, err := d.Next(stream[:k])
							if err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(got, want) {
								t.Fatalf("walk %d decision %d: Next allows %v, the state %v", w, k, got, want)
							}
							k++
						}
						if err := st.Feed(tok); err != nil {
							t.Fatalf("walk %d: the grammar refuses the expansion: %v", w, err)
						}
					}
					if !st.Done() {
						t.Fatalf("walk %d: the expansion is not complete", w)
					}
				}
			}
		})
	}
}
