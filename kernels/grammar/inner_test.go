package grammar

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestInnerGolden: the Inner stream of testdata/decisions.golden's GMM/0
// script, worked out by hand from the script's tiles: [1 1 1 1 1] of 1,
// [8 16 1 1 1] of 128, [2 64 1 1 1] of 128 and the reduction's [8 1 16]
// of 128 write 1, 16, 64 and 16 where the Outer stream writes 1, 8, 2
// and 8; the other values are the same.
func TestInnerGolden(t *testing.T) {
	_, v, g := setup(t, "GMM", 0)
	script := walk(t, g, rand.New(rand.NewPCG(27, 1)))
	text := func(stream []int) string {
		var w []string
		for _, id := range stream {
			s, _ := v.Token(id)
			w = append(w, s)
		}
		return strings.Join(w, " ")
	}
	outer, err := g.CompactIn(Outer, script)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(outer), "1 1 1 1 8 16 1 1 2 64 1 1 8 1 0 2 4 <eos>"; got != want {
		t.Fatalf("the golden's script changed: Outer stream %q, want %q", got, want)
	}
	inner, err := g.CompactIn(Inner, script)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(inner), "1 1 1 1 16 16 1 1 64 64 1 1 16 1 0 2 4 <eos>"; got != want {
		t.Fatalf("Inner stream %q, want %q", got, want)
	}
	back, err := g.ExpandIn(Inner, inner)
	if err != nil || !slices.Equal(back, script) {
		t.Fatalf("ExpandIn(Inner) does not give the script back: %v", err)
	}
}

// TestInnerRoundTrip: for random walks of several families' grammars,
// with and without WithThreadLimits, ExpandIn(Inner, CompactIn(Inner, s))
// == s, the stream ends with exactly one <eos>, a grammar with limits
// gives the same stream, and the stream has a token per decision value as
// the Outer stream does (as many tokens, but for values of several
// tokens).
func TestInnerRoundTrip(t *testing.T) {
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM", "CBR", "TBG", "C3D", "DEP", "T2D", "C1D"} {
		t.Run(fam, func(t *testing.T) {
			f, v, g := setup(t, fam, 0)
			lim := limited(t, f, v)
			for w := range walks {
				for gi, wg := range []*Grammar{g, lim} {
					script := walk(t, wg, rand.New(rand.NewPCG(uint64(w), uint64(gi)+7)))
					stream, err := g.CompactIn(Inner, script)
					if err != nil {
						t.Fatalf("walk %d: CompactIn(Inner): %v", w, err)
					}
					if n := len(stream); n == 0 || stream[n-1] != g.eos || slices.Contains(stream[:n-1], g.eos) {
						t.Fatalf("walk %d: the stream %v does not end with one <eos>", w, stream)
					}
					limStream, err := lim.CompactIn(Inner, script)
					if err != nil || !slices.Equal(limStream, stream) {
						t.Fatalf("walk %d: with limits the stream is %v (%v), without %v", w, limStream, err, stream)
					}
					outer, err := g.Compact(script)
					if err != nil {
						t.Fatal(err)
					}
					if d := len(stream) - len(outer); d < -4 || d > 4 {
						t.Fatalf("walk %d: Inner stream of %d tokens, Outer of %d", w, len(stream), len(outer))
					}
					for _, eg := range []*Grammar{g, lim} {
						back, err := eg.ExpandIn(Inner, stream)
						if err != nil {
							t.Fatalf("walk %d: ExpandIn: %v", w, err)
						}
						if !slices.Equal(back, script) {
							t.Fatalf("walk %d: ExpandIn(CompactIn(s)) != s", w)
						}
					}
				}
			}
		})
	}
}

// TestInnerWalk: walks of Inner streams through Next, with and without
// WithThreadLimits, end; their expansion is a script the grammar (with its
// options) accepts token for token, within the thread limits under them,
// and it compacts back to the stream.
func TestInnerWalk(t *testing.T) {
	ctx := context.Background()
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "CBR", "TBG", "C1D", "GRP", "T2D", "DEP", "DIL", "CAP"} {
		t.Run(fam, func(t *testing.T) {
			f, v, g := setup(t, fam, 0)
			lim := limited(t, f, v)
			for w := range walks {
				for gi, wg := range []*Grammar{g, lim} {
					r := rand.New(rand.NewPCG(uint64(w), uint64(gi)+3))
					d := wg.StartDecisionsIn(Inner)
					var stream []int
					for {
						a, err := d.Next(stream)
						if err != nil {
							t.Fatalf("walk %d after %d decisions: %v", w, len(stream), err)
						}
						if len(a) == 0 {
							break
						}
						stream = append(stream, a[r.IntN(len(a))])
					}
					script, err := wg.ExpandIn(Inner, stream)
					if err != nil {
						t.Fatalf("walk %d: ExpandIn: %v", w, err)
					}
					if !slices.Equal(script, d.st.Tokens()) {
						t.Fatalf("walk %d: ExpandIn gives another script than the walk's state", w)
					}
					again, err := wg.CompactIn(Inner, script)
					if err != nil || !slices.Equal(again, stream) {
						t.Fatalf("walk %d: CompactIn(ExpandIn(stream)) %v (%v) != stream %v", w, again, err, stream)
					}
					st := wg.Start()
					for _, tok := range script {
						if err := st.Feed(tok); err != nil {
							t.Fatalf("walk %d: the grammar refuses the expansion: %v", w, err)
						}
					}
					checkComplete(ctx, t, st, wg == lim, w)
				}
			}
		})
	}
}

// TestInnerAllowedUnderLimits: at a tile's first factor (of an extent up
// to 1024: one token a value), Next in Inner allows the inner extent of
// exactly the first factors that a fresh State of the grammar accepts
// after the same script prefix, with and without thread limits.
func TestInnerAllowedUnderLimits(t *testing.T) {
	for _, fam := range []string{"GMM", "C2D", "T2D"} {
		f, v, g := setup(t, fam, 0)
		lim := limited(t, f, v)
		for _, wg := range []*Grammar{g, lim} {
			script := walk(t, wg, rand.New(rand.NewPCG(5, 5)))
			stream, err := wg.CompactIn(Inner, script)
			if err != nil {
				t.Fatal(err)
			}
			d := wg.StartDecisionsIn(Inner)
			tiles := 0
			for k := 0; k < len(stream); k++ {
				a, err := d.Next(stream[:k])
				if err != nil {
					t.Fatal(err)
				}
				dec := d.innerTile()
				if dec == nil || len(d.buf) > 0 {
					continue
				}
				if dec.rest > 1024 {
					continue // a first factor of several tokens: Feed accepts its prefixes too
				}
				tiles++
				// Independently of the decision's candidates: the first
				// factors a fresh State of the grammar accepts after the
				// same script prefix.
				var want []int
				for c := int64(1); c <= dec.rest; c++ {
					if dec.rest%c != 0 {
						continue
					}
					st := wg.Start()
					ok := true
					for _, tok := range append(slices.Clone(d.st.Tokens()), d.st.numTokens(c)...) {
						if st.Feed(tok) != nil {
							ok = false
							break
						}
					}
					if ok {
						want = append(want, d.st.numTokens(dec.rest / c)[0])
					}
				}
				slices.Sort(want)
				want = slices.Compact(want)
				if !slices.Equal(a, want) {
					t.Fatalf("%s decision %d: Next allows %v, the first factors' inner extents start with %v", fam, k, a, want)
				}
			}
			if tiles == 0 {
				t.Fatalf("%s: no tile written in Inner", fam)
			}
		}
	}
}

// TestInnerDistinct: a tile whose inner extents are not told apart token
// by token (3840's 128 and 1280: "128" and "128 ##0") is written Outer;
// 4096's are told apart ("409 ##6" starts no other).
func TestInnerDistinct(t *testing.T) {
	_, _, g := setup(t, "GMM", 0)
	d := g.StartDecisionsIn(Inner)
	for _, c := range []struct {
		extent int64
		want   bool
	}{{3840, false}, {4096, true}, {128, true}, {131072, true}} {
		dec := &decision{list: true, opened: true, n: 3, rest: c.extent, maxInner: -1}
		dec.setFactors(d.st)
		if got := d.innerDistinct(dec); got != c.want {
			t.Errorf("extent %d: distinct %v, want %v", c.extent, got, c.want)
		}
	}
}

// TestInnerErrors: in the middle of an inner extent of several tokens, a
// token that continues none is refused (wrapping ErrNotInGrammar) and the
// state is unchanged; a stream that stops inside one does not expand.
func TestInnerErrors(t *testing.T) {
	_, v, g := setup(t, "GMM", 0)
	d := g.StartDecisionsIn(Inner)
	a, err := d.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.innerTile() == nil {
		t.Fatal("GMM/0's stream does not start at a tile's first factor")
	}
	first := slices.Clone(a)
	bad, _ := v.Encode("[")
	if _, err := d.Next(bad); !errors.Is(err, ErrNotInGrammar) {
		t.Fatalf("a bracket as an inner extent: %v", err)
	}
	again, err := d.Next(nil)
	if err != nil || !slices.Equal(again, first) {
		t.Fatalf("after a refused token Next gives %v (%v), before %v", again, err, first)
	}
	if _, err := g.ExpandIn(Inner, first[:1]); !errors.Is(err, ErrNotInGrammar) {
		t.Fatalf("a stream of one value expands: %v", err)
	}
}

// FuzzExpandInner: ExpandIn(Inner) never panics; what it accepts is a
// stream CompactIn gives back, and every error wraps ErrNotInGrammar
// (the input as FuzzExpand's).
func FuzzExpandInner(f *testing.F) { fuzzExpandIn(f, "T2D", Inner) }
