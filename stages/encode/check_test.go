package encode_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"dragonx/kernels/dataset"
	"dragonx/kernels/vocab"
	"dragonx/stages"
	"dragonx/stages/encode"
	_ "dragonx/stages/exec"
)

// localExp encodes the four files next to the experiment file.
const localExp = `stage "encode" {
  kind              = "encode"
  construction      = "construction.jsonl"
  refinement        = "refinement.jsonl"
  test_construction = "test_construction.jsonl"
  test_refinement   = "test_refinement.jsonl"
}
`

// copyDataset copies testdata/dataset into a fresh directory and returns
// it, with an experiment file encoding it.
func copyDataset(t *testing.T) (dir string, exp string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{dataset.ConstructionFile, dataset.RefinementFile, dataset.TestConstructionFile, dataset.TestRefinementFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "dataset", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, localExp
}

// edit replaces the first match of re on line n (from 1) of a file.
func edit(t *testing.T, path string, n int, re, repl string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := bytes.Split(b, []byte{'\n'})
	rx := regexp.MustCompile(re)
	loc := rx.FindSubmatchIndex(ls[n-1])
	if loc == nil {
		t.Fatalf("%s line %d: no match for %s", path, n, re)
	}
	with := rx.Expand(nil, []byte(repl), ls[n-1], loc)
	ls[n-1] = append(append(append([]byte(nil), ls[n-1][:loc[0]]...), with...), ls[n-1][loc[1]:]...)
	if err := os.WriteFile(path, bytes.Join(ls, []byte{'\n'}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptedExamples: an example whose trace JSON, script, kernel text
// or latency was altered fails the stage, with a message naming the file,
// line and first differing byte.
func TestCorruptedExamples(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		line       int
		re, repl   string
		want       []string
	}{
		// The target's trace: a decision changed (the last [[i,d]] pair).
		{"target trace", dataset.RefinementFile, 2, `("target":\{.*"trace":\[.*\[\d+,)(\d+)(\]\]\])`, "${1}99${3}",
			[]string{"refinement.jsonl:2 ", "the target script decodes to another trace than the example's: first difference at byte "}},
		// The source's trace: one instruction kind renamed.
		{"source trace", dataset.RefinementFile, 1, `("source":\{.*?"trace":\[\[\[)"GetBlock"`, `${1}"GetBlocks"`,
			[]string{"refinement.jsonl:1 ", "the source script decodes to another trace", "first difference at byte 12 (of 2280 and 2279)"}},
		{"construction trace", dataset.ConstructionFile, 3, `"trace":\[\[\["GetBlock",\[\],\["[A-Za-z_]+"`, `"trace":[[["GetBlock",[],["nope"`,
			[]string{"construction.jsonl:3 ", "the target script decodes to another trace"}},
		{"script", dataset.ConstructionFile, 1, `(SampleCategorical \| [^=]*= )4`, `${1}5`,
			[]string{"construction.jsonl:1 ", "the target script decodes to another trace"}},
		{"script block", dataset.ConstructionFile, 2, `GetBlock \| #1`, `GetBlock | #2`,
			[]string{"construction.jsonl:2 ", "the target script does not decode", "block #2"}},
		{"script syntax", dataset.TestRefinementFile, 1, `"script":"GetBlock`, `"script":"GetBlok`,
			[]string{"test_refinement.jsonl:1 ", "the source script does not decode"}},
		{"kernel", dataset.TestConstructionFile, 2, `("kernel":"kernel \\"main\\"\\nparam \\"[A-Za-z_]+\\" float32 \[)(\d+)`, `${1}7`,
			[]string{"test_construction.jsonl:2 ", "the kernel text"}},
		{"struct hash", dataset.ConstructionFile, 1, `"struct_hash":"[0-9a-f]{4}`, `"struct_hash":"0000`,
			[]string{"construction.jsonl:1 ", "is not the structural hash"}},
		{"not json", dataset.RefinementFile, 3, `^\{`, `[`,
			[]string{"refinement.jsonl: dataset: line 3: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, exp := copyDataset(t)
			edit(t, filepath.Join(dir, tc.file), tc.line, tc.re, tc.repl)
			r := runExperiment(t, filepath.Join(dir, "exp.hcl"), []byte(exp))
			if r.status != stages.StatusFailed || r.err == nil {
				t.Fatalf("stage %s, want failed", r.status)
			}
			t.Log(r.err)
			for _, w := range tc.want {
				if !strings.Contains(r.err.Error(), w) {
					t.Errorf("error %q does not say %q", r.err, w)
				}
			}
		})
	}
}

// TestDeterministic: the outputs are the same byte for byte on 1 and 4
// workers, in chunks of 1, 5 and the default (in both formats: the
// decisions format's grammars are built per chunk), and in two engine
// runs.
func TestDeterministic(t *testing.T) {
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join("testdata", "dataset")
	firsts := map[string]map[string][]byte{}
	for _, c := range []struct {
		format         string
		workers, chunk int
	}{{"", 1, 0}, {"", 4, 0}, {"", 2, 1}, {"", 3, 5}, {encode.FormatDecisions, 1, 0}, {encode.FormatDecisions, 4, 0}, {encode.FormatDecisions, 2, 1}, {encode.FormatDecisions, 3, 5}} {
		out := t.TempDir()
		err := encode.Encode(context.Background(), encode.Options{
			Construction: filepath.Join(ds, dataset.ConstructionFile), Refinement: filepath.Join(ds, dataset.RefinementFile),
			TestConstruction: filepath.Join(ds, dataset.TestConstructionFile), TestRefinement: filepath.Join(ds, dataset.TestRefinementFile),
			Out: out, Vocab: voc, Workers: c.workers, Chunk: c.chunk, Format: c.format, Seed: encode.DefaultSeed,
		})
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, f := range []string{encode.TrainFile, encode.HeldoutFile, encode.VocabFile, encode.TextsFile, encode.ReportFile} {
			b, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			files[f] = b
		}
		first := firsts[c.format]
		if first == nil {
			firsts[c.format] = files
			continue
		}
		for f, b := range files {
			if !bytes.Equal(b, first[f]) {
				t.Errorf("%s (format %q) differs between 1 worker and %d workers in chunks of %d", f, c.format, c.workers, c.chunk)
			}
		}
	}
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := runExperiment(t, path, src), runExperiment(t, path, src)
	for name, x := range a.out {
		if !bytes.Equal(x, b.out[name]) {
			t.Errorf("output %s differs between two runs", name)
		}
	}
	if !bytes.Equal(a.out["train"], firsts[""][encode.TrainFile]) {
		t.Error("the stage's train.jsonl is not Encode's")
	}
}

func TestDiagnostics(t *testing.T) {
	const all = `  construction      = "c.jsonl"
  refinement        = "r.jsonl"
  test_construction = "tc.jsonl"
  test_refinement   = "tr.jsonl"
`
	for _, tc := range []struct {
		body string // after the kind line (line 3 on)
		want string
		line int
	}{
		{strings.Replace(all, `"c.jsonl"`, `3`, 1), "construction must be a stage output (stage.harvest.out.construction) or the path of a construction.jsonl file", 3},
		{strings.Replace(all, `"r.jsonl"`, `""`, 1), "not an empty string", 4},
		{strings.Replace(all, `"tc.jsonl"`, `null`, 1), "test_construction must be a stage output", 5},
		{strings.Replace(all, `"tr.jsonl"`, `["a"]`, 1), "not tuple", 6},
		{all + "  workers = 2\n", `An argument named "workers" is not expected here`, 7},
		{strings.Replace(all, "  refinement        = \"r.jsonl\"\n", "", 1), `The argument "refinement" is required`, 1},
	} {
		src := "stage \"e\" {\n  kind = \"encode\"\n" + tc.body + "}\n"
		_, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
		if !diags.HasErrors() {
			t.Errorf("%q: no error", tc.body)
			continue
		}
		d := diags[0]
		msg := d.Summary + ": " + d.Detail
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%q: %q, want %q", tc.body, msg, tc.want)
		}
		if d.Subject == nil || d.Subject.Start.Line != tc.line || !strings.HasSuffix(d.Subject.Filename, "exp.hcl") {
			t.Errorf("%q: diagnostic at %v, want exp.hcl line %d", tc.body, d.Subject, tc.line)
		}
	}
	// Upstream references decode, and are the parameters.
	src := `stage "h" {
  kind    = "exec"
  command = "true"
  outputs = { c = "c", r = "r", tc = "tc", tr = "tr" }
}
stage "e" {
  kind              = "encode"
  construction      = stage.h.out.c
  refinement        = stage.h.out.r
  test_construction = stage.h.out.tc
  test_refinement   = stage.h.out.tr
}
`
	cfg, diags := stages.LoadSource("exp.hcl", []byte(src), stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, p := range cfg.Instances[len(cfg.Instances)-1].Stage.Params() {
		got = append(got, p.Name+"="+p.Value)
	}
	voc, _ := vocab.Default()
	want := []string{`construction={"$ref":"stage.h.out.c"}`, `refinement={"$ref":"stage.h.out.r"}`,
		`test_construction={"$ref":"stage.h.out.tc"}`, `test_refinement={"$ref":"stage.h.out.tr"}`, `vocab="` + voc.Identity() + `"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("params:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSeveralFailures: the message counts the failures and names the first
// in file order.
func TestSeveralFailures(t *testing.T) {
	dir, exp := copyDataset(t)
	edit(t, filepath.Join(dir, dataset.TestRefinementFile), 2, `"script":"GetBlock`, `"script":"GetBlok`)
	edit(t, filepath.Join(dir, dataset.RefinementFile), 3, `"script":"GetBlock`, `"script":"GetBlok`)
	r := runExperiment(t, filepath.Join(dir, "exp.hcl"), []byte(exp))
	if r.status != stages.StatusFailed || r.err == nil {
		t.Fatalf("stage %s, want failed", r.status)
	}
	for _, w := range []string{"2 of 12 examples do not round-trip", "the first: refinement.jsonl:3 "} {
		if !strings.Contains(r.err.Error(), w) {
			t.Errorf("error %q does not say %q", r.err, w)
		}
	}
}
