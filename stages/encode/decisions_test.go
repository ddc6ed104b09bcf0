package encode_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/encode"
	"dragonx/kernels/grammar"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages"
	sencode "dragonx/stages/encode"
)

// decisionsExp is example.hcl in decisions format.
func decisionsExp(t *testing.T, extra string) (string, []byte) {
	t.Helper()
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(string(src), "}")
	return path, []byte(string(src[:i]) + extra + "}\n")
}

// grammarsOf returns a function giving a workload's grammar (seed 1, as
// the samplers'), built on first use.
func grammarsOf(t *testing.T, voc *vocab.Vocab) func(*workload.Spec) *grammar.Grammar {
	grammars := map[string]*grammar.Grammar{}
	return func(sp *workload.Spec) *grammar.Grammar {
		if g := grammars[sp.Hash()]; g != nil {
			return g
		}
		f, err := sp.Build()
		if err != nil {
			t.Fatal(err)
		}
		g, err := grammar.New(context.Background(), f, voc, 1)
		if err != nil {
			t.Fatal(err)
		}
		grammars[sp.Hash()] = g
		return g
	}
}

// datasetWorkloads returns the workload of each example of
// testdata/dataset (construction, then refinement): a training line's is
// the one at its position.
func datasetWorkloads(t *testing.T) [][]byte {
	var specs [][]byte
	for _, f := range []string{"construction.jsonl", "refinement.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "dataset", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines(b) {
			var w struct {
				Workload json.RawMessage `json:"workload"`
			}
			if err := json.Unmarshal(l, &w); err != nil {
				t.Fatal(err)
			}
			specs = append(specs, w.Workload)
		}
	}
	return specs
}

func parseSpec(t *testing.T, js []byte) *workload.Spec {
	sp, err := workload.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// ranDecisionsExp runs example.hcl with extra in its encode stage and
// fails unless the stage ran.
func ranDecisionsExp(t *testing.T, extra string) run {
	t.Helper()
	path, src := decisionsExp(t, extra)
	r := runExperiment(t, path, src)
	if r.status != stages.StatusRan {
		t.Fatalf("stage %s: %v", r.status, r.err)
	}
	return r
}

// TestDecisionsFormat encodes testdata/dataset in both formats: the
// decisions lines carry the format, their prompts parse, and every
// target's stream expands (grammar.Expand, seed 1 as the samplers') to
// the script format's target of the same example; the texts are the
// golden's.
func TestDecisionsFormat(t *testing.T) {
	dec := ranDecisionsExp(t, "  format = \"decisions\"\n")
	scr := ranDecisionsExp(t, "")
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	if string(dec.out["vocab"]) != string(scr.out["vocab"]) {
		t.Error("the decisions format's vocabulary is not the script format's")
	}
	grammarOf := grammarsOf(t, voc)
	specs := datasetWorkloads(t)
	dl, sl := lines(dec.out["train"]), lines(scr.out["train"])
	if len(dl) != len(sl) || len(dl) != len(specs) {
		t.Fatalf("%d decisions lines, %d script lines, %d examples", len(dl), len(sl), len(specs))
	}
	for i := range dl {
		var d, s sencode.TrainLine
		if err := json.Unmarshal(dl[i], &d); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sl[i], &s); err != nil {
			t.Fatal(err)
		}
		if d.Format != sencode.FormatDecisions || s.Format != "" || d.Task != s.Task || d.Hash != s.Hash {
			t.Fatalf("line %d: format %q/%q, task %s/%s", i+1, d.Format, s.Format, d.Task, s.Task)
		}
		g := grammarOf(parseSpec(t, specs[i]))
		back, err := g.Expand(d.Target)
		if err != nil {
			t.Fatalf("line %d: the stream does not expand: %v", i+1, err)
		}
		if !slices.Equal(back, s.Target) {
			t.Fatalf("line %d: the stream expands to another script than the script format's target", i+1)
		}
		if len(d.Target)*4 > len(s.Target) || len(d.Prompt) >= len(s.Prompt) {
			t.Errorf("line %d: %d + %d tokens in decisions format, %d + %d in script format", i+1, len(d.Prompt), len(d.Target), len(s.Prompt), len(s.Target))
		}
		p, err := encode.ParseDecisionsPrompt(voc, d.Prompt)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if (p.Source != nil) != (d.Task == sencode.TaskRefinement) {
			t.Fatalf("line %d: a %s prompt with source %v", i+1, d.Task, p.Source)
		}
	}
	hl := lines(dec.out["heldout"])
	for i, l := range hl {
		var h sencode.HeldoutLine
		if err := json.Unmarshal(l, &h); err != nil {
			t.Fatal(err)
		}
		p, err := encode.ParseDecisionsPrompt(voc, h.Prompt)
		if err != nil || h.Format != sencode.FormatDecisions || len(p.Target) != 0 || (p.Source != nil) != (h.Source != nil) {
			t.Fatalf("held-out line %d: format %q: %v", i+1, h.Format, err)
		}
		if h.Source != nil {
			// The prompt's source is the stream of the line's script.
			ids, err := voc.Encode(h.Source.Script)
			if err != nil {
				t.Fatal(err)
			}
			eos, _ := voc.ID(vocab.EOS)
			back, err := grammarOf(parseSpec(t, h.Workload)).Expand(append(slices.Clone(p.Source), eos))
			if err != nil || !slices.Equal(back, append(ids, eos)) {
				t.Fatalf("held-out line %d: the source stream does not expand to the source script (%v)", i+1, err)
			}
		}
	}
	var rep sencode.Report
	if err := json.Unmarshal(dec.out["report"], &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Format != sencode.FormatDecisions || rep.Tokens.Target.Max >= rep.Tokens.Prompt.Max {
		t.Errorf("report: format %q, tokens %+v", rep.Format, rep.Tokens)
	}
	golden := filepath.Join("testdata", "decisions_texts.golden")
	got := string(dec.out["texts"])
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("texts.jsonl differs from %s (-update rewrites it):\n%s", golden, got)
	}
}

// TestFormatKey: without format, and with format = "script", the stage
// has the same parameters (so the keys of existing experiments hold);
// decisions format and its seed change them; another format is refused.
func TestFormatKey(t *testing.T) {
	params := func(extra string) (string, error) {
		path, src := decisionsExp(t, extra)
		cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{})
		if diags.HasErrors() {
			return "", diags
		}
		var out []string
		for _, st := range cfg.Instances {
			for _, p := range st.Stage.Params() {
				b, _ := json.Marshal(p)
				out = append(out, string(b))
			}
		}
		return strings.Join(out, "\n"), nil
	}
	plain, err := params("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		extra string
		same  bool
		err   string
	}{
		{`  format = "script"` + "\n", true, ""},
		{`  format = "script"` + "\n  seed = 3\n", true, ""},
		{`  format = "decisions"` + "\n", false, ""},
		{`  format = "tokens"` + "\n", false, "want \"script\""},
	} {
		got, err := params(c.extra)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.extra, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if (got == plain) != c.same {
			t.Errorf("%q: the same parameters: %v, want %v", c.extra, got == plain, c.same)
		}
	}
	d1, _ := params("  format = \"decisions\"\n")
	d2, _ := params("  format = \"decisions\"\n  seed = 2\n")
	if d1 == d2 {
		t.Error("the seed does not enter the decisions format's parameters")
	}
}

// TestDecisionsInnerFormat encodes testdata/dataset in decisions_inner
// format: every line carries the format, every target expands in the
// Inner layout (grammar.ExpandIn) to the decisions format's expansion of
// the same example, and a refinement prompt's source is an Inner stream.
func TestDecisionsInnerFormat(t *testing.T) {
	in := ranDecisionsExp(t, "  format = \"decisions_inner\"\n")
	dec := ranDecisionsExp(t, "  format = \"decisions\"\n")
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	grammarOf := grammarsOf(t, voc)
	specs := datasetWorkloads(t)
	il, dl := lines(in.out["train"]), lines(dec.out["train"])
	if len(il) != len(dl) || len(il) != len(specs) {
		t.Fatalf("%d decisions_inner lines, %d decisions lines, %d examples", len(il), len(dl), len(specs))
	}
	differ := 0
	for i := range il {
		var a, b sencode.TrainLine
		if err := json.Unmarshal(il[i], &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(dl[i], &b); err != nil {
			t.Fatal(err)
		}
		if a.Format != sencode.FormatDecisionsInner || a.Hash != b.Hash {
			t.Fatalf("line %d: format %q", i+1, a.Format)
		}
		g := grammarOf(parseSpec(t, specs[i]))
		x, err := g.ExpandIn(grammar.Inner, a.Target)
		if err != nil {
			t.Fatalf("line %d: the Inner stream does not expand: %v", i+1, err)
		}
		y, err := g.Expand(b.Target)
		if err != nil || !slices.Equal(x, y) {
			t.Fatalf("line %d: the two formats' streams expand to different scripts (%v)", i+1, err)
		}
		if !slices.Equal(a.Target, b.Target) {
			differ++
		}
		p, err := encode.ParseDecisionsPrompt(voc, a.Prompt)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if p.Source != nil {
			eos, _ := voc.ID(vocab.EOS)
			if _, err := g.ExpandIn(grammar.Inner, append(slices.Clone(p.Source), eos)); err != nil {
				t.Fatalf("line %d: the source is not an Inner stream: %v", i+1, err)
			}
		}
	}
	if differ == 0 {
		t.Error("no target differs between the layouts: the first factors are not written as inner extents")
	}
	for i, l := range lines(in.out["heldout"]) {
		var h sencode.HeldoutLine
		if err := json.Unmarshal(l, &h); err != nil {
			t.Fatal(err)
		}
		if h.Format != sencode.FormatDecisionsInner {
			t.Fatalf("held-out line %d: format %q", i+1, h.Format)
		}
	}
	var rep sencode.Report
	if err := json.Unmarshal(in.out["report"], &rep); err != nil || rep.Format != sencode.FormatDecisionsInner {
		t.Errorf("report: format %q (%v)", rep.Format, err)
	}
}
