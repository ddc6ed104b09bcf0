package sft

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"dragonx/dragon"
	"dragonx/kernels/grammar"
	"dragonx/kernels/judge"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
)

// formatCase is a script-format training line of testdata (its target, a
// whole script) with its workload, and the decision stream of the same
// script (grammar.Compact), as a decisions-format line's target.
type formatCase struct {
	name   string
	spec   *workload.Spec
	lg     *LazyGrammar
	script []int
	stream []int
	inner  []int // the stream in the Inner layout (FormatDecisionsInner)
}

// formatCases reads the first training line of each of families from
// testdata/train.jsonl (script format) and compacts its target.
func formatCases(t *testing.T, voc *vocab.Vocab, families ...string) []formatCase {
	t.Helper()
	f, err := os.Open("testdata/train.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := ReadTrain(f, "train.jsonl", voc.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]*workload.Spec{}
	for _, b := range workload.Benchmarks() {
		specs[b.Spec.Hash()] = b.Spec
	}
	var out []formatCase
	for _, fam := range families {
		i := slices.IndexFunc(recs, func(r TrainRecord) bool { return r.Family == fam })
		if i < 0 {
			t.Fatalf("testdata/train.jsonl has no %s line", fam)
		}
		r := recs[i]
		spec := specs[r.Hash]
		if spec == nil {
			t.Fatalf("line %d: workload %s is not a benchmark shape", i+1, r.Hash)
		}
		lg := NewLazyGrammar(context.Background(), spec, fam, voc, 1)
		g, err := lg.Get()
		if err != nil {
			t.Fatal(err)
		}
		stream, err := g.Compact(r.Target)
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		if len(stream) >= len(r.Target) {
			t.Fatalf("%s: a stream of %d tokens for a script of %d", fam, len(stream), len(r.Target))
		}
		inner, err := g.CompactIn(grammar.Inner, r.Target)
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		out = append(out, formatCase{name: fam, spec: spec, lg: lg, script: r.Target, stream: stream, inner: inner})
	}
	return out
}

// follow feeds toks one at a time to con as a sampler does and fails the
// test at the first token the constraint does not allow.
func follow(t *testing.T, con dragon.RowConstraint, vocabSize int, toks []int) {
	t.Helper()
	allow := make([]bool, vocabSize)
	for i, tok := range toks {
		for k := range allow {
			allow[k] = true
		}
		if err := con(0, nil, toks[:i], allow); err != nil {
			t.Fatalf("after %d tokens: %v", i, err)
		}
		if !allow[tok] {
			t.Fatalf("token %d (%d) is not allowed", i, tok)
		}
	}
}

// TestFormatSameScript: a decisions-format answer (the stream of a
// testdata script) is constrained, expanded and judged as the
// script-format answer of the same script is.
func TestFormatSameScript(t *testing.T) {
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range formatCases(t, voc, "GMM", "C1D", "SFM") {
		t.Run(c.name, func(t *testing.T) {
			follow(t, FormatScript.Constraint(c.lg), voc.VocabSize(), c.script)
			follow(t, FormatDecisions.Constraint(c.lg), voc.VocabSize(), c.stream)
			follow(t, FormatDecisionsInner.Constraint(c.lg), voc.VocabSize(), c.inner)

			for _, tc := range []struct {
				f    Format
				toks []int
			}{{FormatScript, c.script}, {FormatDecisions, c.stream}, {FormatDecisions, append(slices.Clone(c.stream), 5, 6)},
				{FormatDecisionsInner, c.inner}, {FormatDecisionsInner, append(slices.Clone(c.inner), 5, 6)}} {
				got, err := tc.f.Expand(c.lg, tc.toks)
				if err != nil {
					t.Fatalf("%s: %v", tc.f, err)
				}
				if want := c.script; tc.f == FormatScript {
					if !slices.Equal(got, tc.toks) {
						t.Errorf("script format: Expand is not the identity")
					}
				} else if !slices.Equal(got, want) {
					t.Errorf("%s: expands into %d tokens, not the %d of the script", tc.f, len(got), len(want))
				}
			}

			j, err := judge.New(c.spec, judge.Options{Vocab: voc})
			if err != nil {
				t.Fatal(err)
			}
			byScript, err := FormatScript.Judge(ctx, j, nil, c.script)
			if err != nil {
				t.Fatal(err)
			}
			byStream, err := FormatDecisions.Judge(ctx, j, c.lg, c.stream)
			if err != nil {
				t.Fatal(err)
			}
			byInner, err := FormatDecisionsInner.Judge(ctx, j, c.lg, c.inner)
			if err != nil {
				t.Fatal(err)
			}
			if x, y := *byInner, *byStream; x.Tokens != len(c.inner) || func() bool { x.Tokens, y.Tokens = 0, 0; return string(x.JSON()) != string(y.JSON()) }() {
				t.Errorf("the Inner stream is judged otherwise than the Outer one:\ninner  %s\nouter  %s", byInner.JSON(), byStream.JSON())
			}
			if !byScript.OK {
				t.Fatalf("the testdata script fails at %s: %s", byScript.Phase, byScript.Error)
			}
			if byStream.Tokens != len(c.stream) || byScript.Tokens != len(c.script) {
				t.Errorf("tokens judged: %d of the stream's %d, %d of the script's %d", byStream.Tokens, len(c.stream), byScript.Tokens, len(c.script))
			}
			a, b := *byScript, *byStream
			a.Tokens, b.Tokens = 0, 0
			if string(a.JSON()) != string(b.JSON()) {
				t.Errorf("judged differently:\nscript  %s\nstream  %s", a.JSON(), b.JSON())
			}

			// The held-out sample record: the expanded script and the stream.
			var rec, recScript SampleRecord
			h := HeldoutRecord{Task: "construction"}
			if err := rec.judge(ctx, j, FormatDecisions, c.lg, voc, h, dragon.Sample{Tokens: c.stream, Stopped: true}); err != nil {
				t.Fatal(err)
			}
			if err := recScript.judge(ctx, j, FormatScript, nil, voc, h, dragon.Sample{Tokens: c.script, Stopped: true}); err != nil {
				t.Fatal(err)
			}
			if rec.Script == "" || rec.Script != recScript.Script || recScript.Stream != "" {
				t.Errorf("the record's script %q; the script format's %q (stream %q)", rec.Script, recScript.Script, recScript.Stream)
			}
			if n := len(strings.Fields(rec.Stream)); n != len(c.stream)-1 || rec.Tokens != len(c.stream) {
				t.Errorf("the record's stream has %d words, tokens %d; the stream has %d tokens with <eos>", n, rec.Tokens, len(c.stream))
			}
		})
	}
}

// TestFormatBadStream: a decision stream that does not expand is a
// failed attempt at the judge's first phase, with the reason, never an
// error; a cancelled judgement is an error.
func TestFormatBadStream(t *testing.T) {
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := formatCases(t, voc, "GMM")[0]
	j, err := judge.New(c.spec, judge.Options{Vocab: voc})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.lg.Get()
	if err != nil {
		t.Fatal(err)
	}
	// A token the grammar does not allow at the first decision.
	first := g.StartDecisions()
	allowed, err := first.Next(nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := -1
	for tok := 2; tok < voc.VocabSize(); tok++ {
		if !slices.Contains(allowed, tok) {
			bad = tok
			break
		}
	}
	wrongFirst := append([]int{bad}, c.stream[1:]...)
	for _, tc := range []struct {
		name   string
		toks   []int
		tokens int
		want   string
	}{
		{"cut before its <eos>", c.stream[:len(c.stream)-1], len(c.stream) - 1, "decision"},
		{"ends early at <eos>", []int{c.stream[0], 1, 7}, 2, "decision 1"},
		{"a token not allowed", wrongFirst, len(wrongFirst), "decision 0"},
		{"empty", nil, 0, "decision 0"},
		{"the whole script, not a stream", c.script, len(c.script), "decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := FormatDecisions.Judge(ctx, j, c.lg, tc.toks)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || r.Phase != judge.PhaseDecode || !strings.Contains(r.Error, "does not expand") || !strings.Contains(r.Error, tc.want) || r.Tokens != tc.tokens {
				t.Errorf("got ok %v phase %s tokens %d error %q; want a failure at decode after %d tokens mentioning %q", r.OK, r.Phase, r.Tokens, r.Error, tc.tokens, tc.want)
			}
			if _, err := FormatDecisions.Expand(c.lg, tc.toks); !errors.Is(err, grammar.ErrNotInGrammar) {
				t.Errorf("Expand: %v; want ErrNotInGrammar", err)
			}
		})
	}
	// A grammar that cannot be built fails the attempt the same way.
	broken := NewLazyGrammar(ctx, c.spec, "broken", voc, 1, grammar.WithThreadLimits())
	broken.err = errors.New("no grammar here")
	if r, err := FormatDecisions.Judge(ctx, j, broken, c.stream); err != nil || r.OK || r.Phase != judge.PhaseDecode || !strings.Contains(r.Error, "no grammar here") {
		t.Errorf("a broken grammar: %+v, %v", r, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := FormatDecisions.Judge(cancelled, j, c.lg, c.stream[:1]); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled judgement: %v; want context.Canceled", err)
	}
}

// TestFormats: a line's format field, and a mix refused.
func TestFormats(t *testing.T) {
	train := `{"task":"construction","hash":"h","prompt":[5],"target":[6,1]%s}`
	held := `{"task":"construction","index":0,"workload":{"family":"SFM","M":8,"N":8},"hash":"h","prompt":[5]%s}`
	line := func(tmpl, format string) string {
		if format == "" {
			return strings.Replace(tmpl, "%s", "", 1)
		}
		f, _ := json.Marshal(format)
		return strings.Replace(tmpl, "%s", `,"format":`+string(f), 1)
	}
	for _, c := range []struct {
		name    string
		formats []string // one line each
		want    Format
		err     string
	}{
		{"absent", []string{"", ""}, FormatScript, ""},
		{"script", []string{"script", ""}, FormatScript, ""},
		{"decisions", []string{"decisions", "decisions"}, FormatDecisions, ""},
		{"decisions_inner", []string{"decisions_inner", "decisions_inner"}, FormatDecisionsInner, ""},
		{"mixed layouts", []string{"decisions", "decisions_inner"}, "", `record 2 is in format "decisions_inner", heldout.jsonl record 1 in "decisions"`},
		{"mixed", []string{"decisions", "decisions", ""}, "", `record 3 is in format "script", heldout.jsonl record 1 in "decisions"`},
		{"mixed script first", []string{"", "decisions"}, "", `record 2 is in format "decisions"`},
		{"unknown", []string{"decisions", "tokens"}, "", `record 2: format is "tokens"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tl, hl []string
			for _, f := range c.formats {
				tl = append(tl, line(train, f))
				hl = append(hl, line(held, f))
			}
			recs, terr := ReadTrain(strings.NewReader(strings.Join(tl, "\n")), "train.jsonl", 10)
			hs, herr := ReadHeldout(strings.NewReader(strings.Join(hl, "\n")), "heldout.jsonl", 10)
			if c.err != "" {
				if herr == nil || !strings.Contains(herr.Error(), c.err) {
					t.Errorf("heldout.jsonl: %v; want an error with %q", herr, c.err)
				}
				if want := strings.ReplaceAll(c.err, "heldout", "train"); terr == nil || !strings.Contains(terr.Error(), want) {
					t.Errorf("train.jsonl: %v; want an error with %q", terr, want)
				}
				return
			}
			if terr != nil || herr != nil {
				t.Fatal(terr, herr)
			}
			got, err := CheckFormats(recs, hs)
			if err != nil || got != c.want {
				t.Errorf("CheckFormats: %q, %v; want %q", got, err, c.want)
			}
		})
	}
	recs, _ := ReadTrain(strings.NewReader(line(train, "")), "train.jsonl", 10)
	hs, _ := ReadHeldout(strings.NewReader(line(held, "decisions")), "heldout.jsonl", 10)
	if _, err := CheckFormats(recs, hs); err == nil || !strings.Contains(err.Error(), `train.jsonl is in format "script", heldout.jsonl in "decisions"`) {
		t.Errorf("train in script, held-out in decisions: %v", err)
	}
	// A record without the field marshals as before (script format's
	// files and keys unchanged).
	b, _ := json.Marshal(TrainRecord{Task: "construction", Hash: "h", Prompt: []int{5}, Target: []int{1}})
	if strings.Contains(string(b), "format") {
		t.Errorf("a script-format record marshals with a format: %s", b)
	}
}
