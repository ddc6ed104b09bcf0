package grammar

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
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

// TestSampledScriptsCompact: the scripts of the sampler's draws (those the
// postprocessors reject too) compact and expand back, with and without
// WithThreadLimits, and a grammar with limits gives the same stream.
func TestSampledScriptsCompact(t *testing.T) {
	ctx := context.Background()
	for _, fam := range []string{"GMM", "C2D", "SFM", "CBR", "TBG", "DIL"} {
		f, v, g := setup(t, fam, 0)
		lim, err := New(ctx, f, v, 1, WithThreadLimits())
		if err != nil {
			t.Fatal(err)
		}
		sp, err := sample.NewSpace(ctx, f, 1, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sp.DrawN(ctx, 5, 8)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range ss {
			if !s.OK() && s.Rejection.Phase == verdict.PhaseReplay {
				continue
			}
			n++
			script, err := encode.Encode(f, s.Trace)
			if err != nil {
				t.Fatal(err)
			}
			if !s.OK() {
				script = append(script, "EnterPostproc\n"...) // as in TestSampledScriptsAllowed
			}
			toks, err := v.Encode(string(script))
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, g.eos)
			stream, err := g.Compact(toks)
			if err != nil {
				t.Fatalf("%s draw %d: %v", fam, s.Index, err)
			}
			if ls, err := lim.Compact(toks); err != nil || !slices.Equal(ls, stream) {
				t.Fatalf("%s draw %d: with limits %v (%v), without %v", fam, s.Index, ls, err, stream)
			}
			for _, eg := range []*Grammar{g, lim} {
				back, err := eg.Expand(stream)
				if err != nil || !slices.Equal(back, toks) {
					t.Fatalf("%s draw %d: Expand: %v", fam, s.Index, err)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: every draw was rejected in replay", fam)
		}
	}
}

// TestDecisionsGolden: one script of GMM/0 (a random walk) with the
// decisions each line holds, and its decision stream, as text
// (testdata/decisions.golden; -update rewrites it).
func TestDecisionsGolden(t *testing.T) {
	_, v, g := setup(t, "GMM", 0)
	script := walk(t, g, rand.New(rand.NewPCG(27, 1)))
	stream, err := g.Compact(script)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(id int) string {
		s, ok := v.Token(id)
		if !ok {
			t.Fatalf("token %d outside the vocabulary", id)
		}
		return s
	}
	var b strings.Builder
	spec, _ := workload.BenchmarkSpec("GMM", 0)
	fmt.Fprintf(&b, "# workload %s\n# each line of the script, then (after \"> \") the tokens of it that the grammar does not force\n", spec.Label())
	st := g.Start()
	var line, chosen []int
	for _, id := range script {
		if len(st.Allowed()) > 1 {
			chosen = append(chosen, id)
		}
		if err := st.Feed(id); err != nil {
			t.Fatal(err)
		}
		if id == g.eos {
			break
		}
		line = append(line, id)
		if id != g.nl {
			continue
		}
		text, err := v.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(text)
		if len(chosen) > 0 {
			var words []string
			for _, c := range chosen {
				words = append(words, tok(c))
			}
			fmt.Fprintf(&b, "> %s\n", strings.Join(words, " "))
		}
		line, chosen = line[:0], chosen[:0]
	}
	var words []string
	for _, id := range stream {
		words = append(words, tok(id))
	}
	fmt.Fprintf(&b, "# the decision stream: %d tokens for a script of %d\n%s\n", len(stream), len(script), strings.Join(words, " "))
	golden(t, "testdata/decisions.golden", b.String())
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with the file at path (rewriting it with -update).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (-update rewrites it); got:\n%s", path, got)
	}
}

// FuzzExpand: Expand never panics; what it accepts is a stream Compact
// gives back, and every error wraps ErrNotInGrammar. The input is read as
// token ids (two bytes each, little-endian, shifted so that a few are
// negative or beyond the vocabulary); a leading odd byte picks the grammar
// with thread limits.
func FuzzExpand(f *testing.F) {
	fn, v, g := setup(f, "C2D", 0)
	lim, err := New(context.Background(), fn, v, 1, WithThreadLimits())
	if err != nil {
		f.Fatal(err)
	}
	toBytes := func(limits bool, stream []int) []byte {
		b := []byte{0}
		if limits {
			b[0] = 1
		}
		for _, id := range stream {
			b = binary.LittleEndian.AppendUint16(b, uint16(id+2))
		}
		return b
	}
	for seed := uint64(0); seed < 4; seed++ {
		for _, wg := range []*Grammar{g, lim} {
			stream, err := g.Compact(walk(f, wg, rand.New(rand.NewPCG(seed, 9))))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(toBytes(wg == lim, stream))
			f.Add(toBytes(wg != lim, stream[:len(stream)/2]))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		eg := g
		if data[0]%2 == 1 {
			eg = lim
		}
		var stream []int
		for b := data[1:]; len(b) >= 2; b = b[2:] {
			stream = append(stream, int(binary.LittleEndian.Uint16(b))-2)
		}
		script, err := eg.Expand(stream)
		if err != nil {
			if !errors.Is(err, ErrNotInGrammar) {
				t.Fatalf("an error that does not wrap ErrNotInGrammar: %v", err)
			}
			return
		}
		back, err := eg.Compact(script)
		if err != nil || !slices.Equal(back, stream) {
			t.Fatalf("Compact(Expand(%v)) = %v, %v", stream, back, err)
		}
	})
}

// BenchmarkDecisions measures, per script token, Expand of a decision
// stream and a walk through DecisionState.Next (each call feeds one
// decision and the forced tokens before the next), GMM/0, C2D/0 and
// C3D/0, without and with WithThreadLimits; "Feed" is the baseline: the
// same scripts fed token by token to a State (Allowed, then Feed).
func BenchmarkDecisions(b *testing.B) {
	for _, name := range []string{"GMM", "C2D", "C3D", "GMM/limits", "C2D/limits", "C3D/limits"} {
		fam, limits, _ := strings.Cut(name, "/")
		f, v, g := setup(b, fam, 0)
		if limits != "" {
			var err error
			if g, err = New(context.Background(), f, v, 1, WithThreadLimits()); err != nil {
				b.Fatal(err)
			}
		}
		var streams, scripts [][]int
		for seed := uint64(0); seed < 8; seed++ {
			script := walk(b, g, rand.New(rand.NewPCG(seed, 3)))
			stream, err := g.Compact(script)
			if err != nil {
				b.Fatal(err)
			}
			streams, scripts = append(streams, stream), append(scripts, script)
		}
		perToken := func(b *testing.B, run func(k int)) {
			toks := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(streams)
				run(k)
				toks += len(scripts[k])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(toks), "ns/token")
		}
		b.Run(name+"/Feed", func(b *testing.B) {
			perToken(b, func(k int) {
				st := g.Start()
				for _, tok := range scripts[k] {
					st.Allowed()
					if err := st.Feed(tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(name+"/Expand", func(b *testing.B) {
			perToken(b, func(k int) {
				if _, err := g.Expand(streams[k]); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(name+"/Next", func(b *testing.B) {
			perToken(b, func(k int) {
				d := g.StartDecisions()
				for i := range streams[k] {
					if _, err := d.Next(streams[k][:i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
