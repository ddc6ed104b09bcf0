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
	"time"

	"dragonx/kernels/postproc"
	"dragonx/kernels/sample"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// TestCompactExpandRoundTrip: for random walks of several families'
// grammars, with and without WithThreadLimits, Expand(Compact(s)) == s,
// the stream ends with exactly one <eos>, and it holds exactly the tokens
// at the positions the grammar without options does not force; a grammar
// built with limits gives the same stream as one without.
func TestCompactExpandRoundTrip(t *testing.T) {
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for _, fam := range []string{"GMM", "C2D", "SFM", "NRM", "CBR", "TBG", "C3D", "DEP"} {
		t.Run(fam, func(t *testing.T) {
			f, v, g := setup(t, fam, 0)
			lim := limited(t, f, v)
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
// options) allows more than one token or that write a decision's value,
// then <eos> unless the last of them was: the definition of a decision
// stream, by Allowed and by the script's text (valueTokens).
func choices(t testing.TB, g *Grammar, script []int) []int {
	t.Helper()
	value := valueTokens(t, g, script)
	st := g.Start()
	var out []int
	for i, tok := range script {
		if len(st.Allowed()) > 1 || value[i] {
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

// valueTokens marks the tokens of script that write a sampled decision's
// value, read from the text: in a "(Sample... = VALUE)" group, the tokens
// after the "=" up to the ")", brackets and spaces aside, but those of a
// list's last number (a perfect tile's last factor, which the others
// determine).
func valueTokens(t testing.TB, g *Grammar, script []int) []bool {
	t.Helper()
	out := make([]bool, len(script))
	var line strings.Builder
	inValue := false
	var group []int // the marked tokens of the value being read
	list := false   // the value is a list
	for i, tok := range script {
		s, ok := g.v.Token(tok)
		if !ok {
			t.Fatalf("token %d has no text", tok)
		}
		if s == "\n" {
			line.Reset()
			inValue = false
			continue
		}
		text := line.String()
		if inValue && strings.TrimSpace(s) == ")" {
			inValue = false
			if list {
				unmarkLastNumber(g, script, group, out)
			}
		}
		if inValue && len(group) == 0 && strings.Contains(s, "[") {
			list = true
		}
		if inValue && strings.Trim(s, " []") != "" {
			out[i] = true
			group = append(group, i)
		}
		line.WriteString(s)
		if !inValue && strings.TrimSpace(s) == "=" {
			open := strings.LastIndex(text, "(")
			inValue = open >= 0 && strings.HasPrefix(strings.TrimSpace(text[open+1:]), "Sample") && !strings.Contains(text[open:], ")")
			group, list = group[:0], false
		}
	}
	return out
}

// unmarkLastNumber unmarks the tokens of the last number of a list value
// (group: the value's marked tokens, in order): its last token and, while
// a token continues the one before it ("##"), the ones before.
func unmarkLastNumber(g *Grammar, script, group []int, out []bool) {
	for k := len(group) - 1; k >= 0; k-- {
		out[group[k]] = false
		if s, _ := g.v.Token(script[group[k]]); !strings.HasPrefix(s, "##") {
			return
		}
	}
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
			lim := limited(t, f, v)
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
						if len(st.plainAllowed()) > 1 || st.valueNext() {
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
					checkComplete(ctx, t, st, wg == lim, w)
				}
			}
		})
	}
}

// checkComplete fails the test unless st, fed walk w's expansion, is a
// complete script, within the thread limits where limits (as
// WithThreadLimits promises).
func checkComplete(ctx context.Context, t *testing.T, st *State, limits bool, w int) {
	t.Helper()
	if !st.Done() {
		t.Fatalf("walk %d: the expansion is not complete", w)
	}
	if limits {
		if err := verdictOf(ctx, st, threadPostprocs()); errors.Is(err, errThreads) {
			t.Fatalf("walk %d under limits: %v", w, err)
		}
	}
}

// TestDecisionStateErrors: Next refuses a prefix that does not extend
// what it was fed, and a token not allowed at a decision (wrapping
// ErrNotInGrammar) without changing the state; after the stream's <eos> it
// allows nothing, and a token after it is refused.
func TestDecisionStateErrors(t *testing.T) {
	_, _, g := setup(t, "C2D", 0)
	stream, err := g.Compact(walk(t, g, rand.New(rand.NewPCG(8, 8))))
	if err != nil {
		t.Fatal(err)
	}
	d := g.StartDecisions()
	first, err := d.Next(stream[:1])
	if err != nil {
		t.Fatal(err)
	}
	first = slices.Clone(first)
	if _, err := d.Next(nil); err == nil {
		t.Fatal("a shorter prefix is accepted")
	}
	if _, err := d.Next([]int{g.close}); err == nil {
		t.Fatal("a different prefix is accepted")
	}
	bad := append(slices.Clone(stream[:1]), g.open)
	if _, err := d.Next(bad); !errors.Is(err, ErrNotInGrammar) {
		t.Fatalf("a token not allowed: %v", err)
	}
	again, err := d.Next(stream[:1])
	if err != nil || !slices.Equal(again, first) {
		t.Fatalf("after a refused token Next gives %v (%v), before %v", again, err, first)
	}
	for i := 2; i <= len(stream); i++ {
		a, err := d.Next(stream[:i])
		if err != nil {
			t.Fatal(err)
		}
		if i < len(stream) && !slices.Contains(a, stream[i]) {
			t.Fatalf("decision %d: %v does not allow the stream's %d", i, a, stream[i])
		}
		if i == len(stream) && len(a) != 0 {
			t.Fatalf("after the stream's <eos>: %v allowed", a)
		}
	}
	if _, err := d.Next(append(slices.Clone(stream), g.eos)); !errors.Is(err, ErrNotInGrammar) {
		t.Fatalf("a token after the <eos>: %v", err)
	}
}

// TestSampledScriptsCompact: the scripts of the sampler's draws (those the
// postprocessors reject too) compact and expand back, with and without
// WithThreadLimits, and a grammar with limits gives the same stream.
func TestSampledScriptsCompact(t *testing.T) {
	for _, fam := range []string{"GMM", "C2D", "SFM", "CBR", "TBG", "DIL"} {
		f, v, g := setup(t, fam, 0)
		lim := limited(t, f, v)
		draws := sampledScripts(t, f, v, 8, false)
		for _, d := range draws {
			stream, err := g.Compact(d.toks)
			if err != nil {
				t.Fatalf("%s draw %d: %v", fam, d.index, err)
			}
			if ls, err := lim.Compact(d.toks); err != nil || !slices.Equal(ls, stream) {
				t.Fatalf("%s draw %d: with limits %v (%v), without %v", fam, d.index, ls, err, stream)
			}
			for _, eg := range []*Grammar{g, lim} {
				back, err := eg.Expand(stream)
				if err != nil || !slices.Equal(back, d.toks) {
					t.Fatalf("%s draw %d: Expand: %v", fam, d.index, err)
				}
			}
		}
		if len(draws) == 0 {
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
func FuzzExpand(f *testing.F) { fuzzExpandIn(f, "C2D", Outer) }

// fuzzExpandIn is FuzzExpand for the streams of layout l of a family's
// first benchmark shape.
func fuzzExpandIn(f *testing.F, family string, l Layout) {
	fn, v, g := setup(f, family, 0)
	lim := limited(f, fn, v)
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
			stream, err := g.CompactIn(l, walk(f, wg, rand.New(rand.NewPCG(seed, 9))))
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
		script, err := eg.ExpandIn(l, stream)
		if err != nil {
			if !errors.Is(err, ErrNotInGrammar) {
				t.Fatalf("an error that does not wrap ErrNotInGrammar: %v", err)
			}
			return
		}
		back, err := eg.CompactIn(l, script)
		if err != nil || !slices.Equal(back, stream) {
			t.Fatalf("CompactIn(ExpandIn(%v)) = %v, %v", stream, back, err)
		}
	})
}

// BenchmarkDecisions measures, per script token, Expand of a decision
// stream and a walk of it through DecisionState.Next (each call feeds one
// decision and the forced tokens before the next), against the baseline of
// feeding the same script to a State token by token (Allowed, then Feed):
// GMM/0, C2D/0 and C3D/0, without and with WithThreadLimits. The three are
// interleaved on the same scripts, so that the ratios (expand/feed,
// next/feed) are of one run.
func BenchmarkDecisions(b *testing.B) {
	for _, name := range []string{"GMM", "C2D", "C3D", "GMM/limits", "C2D/limits", "C3D/limits"} {
		fam, limits, _ := strings.Cut(name, "/")
		b.Run(name, func(b *testing.B) {
			f, v, g := setup(b, fam, 0)
			if limits != "" {
				g = limited(b, f, v)
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
			var feed, expand, next time.Duration
			toks := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(streams)
				t0 := time.Now()
				st := g.Start()
				for _, tok := range scripts[k] {
					st.Allowed()
					if err := st.Feed(tok); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				if _, err := g.Expand(streams[k]); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				d := g.StartDecisions()
				for j := range streams[k] {
					if _, err := d.Next(streams[k][:j]); err != nil {
						b.Fatal(err)
					}
				}
				t3 := time.Now()
				feed, expand, next = feed+t1.Sub(t0), expand+t2.Sub(t1), next+t3.Sub(t2)
				toks += len(scripts[k])
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(toks) }
			b.ReportMetric(per(feed), "feed-ns/token")
			b.ReportMetric(per(expand), "expand-ns/token")
			b.ReportMetric(per(next), "next-ns/token")
			b.ReportMetric(float64(expand)/float64(feed), "expand/feed")
			b.ReportMetric(float64(next)/float64(feed), "next/feed")
		})
	}
}

// TestOutCursors: sketches the thread limits leave out, and templates a
// decision rules out, count for what the grammar without options allows
// (the positions a decision stream keeps) and never for what is allowed.
// No workload of the tests has either (the CUDA rules' sketches always
// have a script within the limits, and sketches that share a decision do
// not differ in its limits), so the cases are made here from real
// templates.
func TestOutCursors(t *testing.T) {
	ctx := context.Background()
	// lockstep walks a and b (states of grammars that must allow the same
	// tokens) and p (the grammar without options, whose Allowed a's
	// plainAllowed must give) along random walks; it returns how many
	// positions a had an out cursor at.
	lockstep := func(t *testing.T, a, b, p func() *State) int {
		outs := 0
		for w := 0; w < 20; w++ {
			r := rand.New(rand.NewPCG(uint64(w), 5))
			as, bs, ps := a(), b(), p()
			for !as.Done() {
				got := slices.Clone(as.Allowed())
				if want := bs.Allowed(); !slices.Equal(got, want) {
					t.Fatalf("walk %d, %d tokens: allowed %v, want %v", w, len(as.Tokens()), got, want)
				}
				if got, want := as.plainAllowed(), ps.Allowed(); !slices.Equal(got, want) {
					t.Fatalf("walk %d, %d tokens: plain set %v, the plain grammar's %v", w, len(as.Tokens()), got, want)
				}
				if slices.ContainsFunc(as.live, func(c cursor) bool { return c.out }) {
					outs++
				}
				tok := got[r.IntN(len(got))]
				for _, st := range []*State{as, bs, ps} {
					if err := st.Feed(tok); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		return outs
	}
	t.Run("a sketch left out", func(t *testing.T) {
		// SFM/0's four sketches, the first one as if the limits left it
		// out, against a grammar of the other three.
		_, _, g := setup(t, "SFM", 0)
		cut := *g
		cut.limited, cut.templates, cut.outside, cut.plain = true, g.templates[1:], g.templates[:1], g
		three := *g
		three.templates = g.templates[1:]
		three.plain = &three
		if outs := lockstep(t, cut.Start, three.Start, g.Start); outs == 0 {
			t.Fatal("no out cursor: not the case the test means")
		}
		for w := uint64(0); w < 8; w++ {
			script := walk(t, &cut, rand.New(rand.NewPCG(w, 6)))
			s1, err1 := cut.Compact(script)
			s2, err2 := g.Compact(script)
			if err1 != nil || err2 != nil || !slices.Equal(s1, s2) {
				t.Fatalf("Compact: %v (%v) with a sketch left out, %v (%v) without", s1, err1, s2, err2)
			}
		}
	})
	t.Run("a template ruled out by a decision", func(t *testing.T) {
		// GMM/0's sketch twice: with the CUDA limits, and with tighter
		// ones (64 threads, 2 vthreads), which a decision within the
		// CUDA limits can rule out. Together they allow what the first
		// alone does.
		f, v, g := setup(t, "GMM", 0)
		lim := limited(t, f, v)
		sp, err := sample.NewSpace(ctx, f, 1, sample.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.Sketches()) != 1 || len(lim.templates) != 1 {
			t.Fatalf("%d sketches: not the case the test means", len(sp.Sketches()))
		}
		tight := postproc.CUDALimits()
		tight.MaxThreadsPerBlock, tight.MaxVThread = 64, 2
		tt, err := lim.template(ctx, sp.Sketches()[0], config{limits: &tight})
		if err != nil {
			t.Fatal(err)
		}
		two := *lim
		two.templates = []*template{lim.templates[0], tt}
		if outs := lockstep(t, two.Start, lim.Start, g.Start); outs == 0 {
			t.Fatal("no template was ruled out: not the case the test means")
		}
	})
}

// TestMultiTokenNumbers: with extents above vocab.MaxNumber, tile factors
// of several tokens are decisions token by token: streams of walks (which
// take a longer number half the time they can), with and without thread
// limits, hold continuation tokens, compact and expand back, and the
// limited state knows the positions the grammar without options keeps
// even where the limits rule out the longer number (204 and 2048, "204
// ##8", both divide 104,448 = 2048 x 51).
func TestMultiTokenNumbers(t *testing.T) {
	ctx := context.Background()
	v, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	f := build(t, rowSum(1, 2048*51, 1))
	g, err := New(ctx, f, v, 1)
	if err != nil {
		t.Fatal(err)
	}
	lim := limited(t, f, v)
	isCont := func(id int) bool {
		s, _ := v.Token(id)
		return strings.HasPrefix(s, "##")
	}
	id1, _ := v.ID("1")
	id204, _ := v.ID("204")
	cont := 0
	for w := uint64(0); w < 40; w++ {
		for gi, wg := range []*Grammar{g, lim} {
			r := rand.New(rand.NewPCG(w, uint64(gi)))
			st, ps := wg.Start(), g.Start()
			ones := 0
			for !st.Done() {
				if got, want := st.plainAllowed(), ps.Allowed(); !slices.Equal(got, want) {
					t.Fatalf("walk %d, %d tokens: plain set %v, the plain grammar's %v", w, len(st.Tokens()), got, want)
				}
				a := st.Allowed()
				tok := a[r.IntN(len(a))]
				// Half the time, a longer number when there is one; in
				// walk 0, the first tiling of j is [1 1 204 ...]: 204
				// threads, where the limits allow 204 and not 2048.
				if i := slices.IndexFunc(a, isCont); i >= 0 && len(a) > 1 && r.IntN(2) == 0 {
					tok = a[i]
				}
				if w == 0 && len(a) > 1 && ones <= 2 {
					if ones < 2 {
						tok = id1
					} else {
						tok = id204
					}
					ones++
				}
				if err := st.Feed(tok); err != nil {
					t.Fatal(err)
				}
				if err := ps.Feed(tok); err != nil {
					t.Fatal(err)
				}
			}
			script := st.Tokens()
			stream, err := wg.Compact(script)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range stream {
				if isCont(id) {
					cont++
				}
			}
			if back, err := wg.Expand(stream); err != nil || !slices.Equal(back, script) {
				t.Fatalf("walk %d: Expand: %v", w, err)
			}
		}
	}
	if cont == 0 {
		t.Fatal("no continuation token in any stream: not the case the test means")
	}
}
