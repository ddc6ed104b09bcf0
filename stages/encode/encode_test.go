package encode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/cache"
	"dragonx/kernels/dataset"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages"
	"dragonx/stages/encode"
)

var update = flag.Bool("update", false, "rewrite testdata/dataset from a fresh search")

// exampleSpecs are the workloads of testdata/dataset: tuned, and held out.
func exampleSpecs(t testing.TB) (tuned, test []*workload.Spec) {
	t.Helper()
	get := func(fam string, i int) *workload.Spec {
		s, err := workload.BenchmarkSpec(fam, i)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	nrm := get("NRM", 0)
	return []*workload.Spec{get("SFM", 0), get("GMM", 0), get("C1D", 0), nrm}, []*workload.Spec{nrm, get("TBG", 0)}
}

// TestExampleData regenerates testdata/dataset with -update.
func TestExampleData(t *testing.T) {
	if !*update {
		t.Skip("regenerates testdata/dataset with -update")
	}
	tuned, test := exampleSpecs(t)
	res := buildDataset(t, filepath.Join("testdata", "dataset"), tuned, test, 32, 2, 4)
	t.Logf("%d construction, %d refinement, %d + %d held-out", len(res.Construction), len(res.Refinement), len(res.TestConstruction), len(res.TestRefinement))
}

type run struct {
	status stages.Status
	err    error
	out    map[string][]byte
}

// runExperiment runs an experiment through the engine.
func runExperiment(t *testing.T, path string, src []byte) run {
	t.Helper()
	root := t.TempDir()
	eng := &stages.Engine{Store: cache.NewMem(), Jobs: 1, WorkRoot: filepath.Join(root, "work"), StateRoot: filepath.Join(root, "state")}
	cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := context.Background()
	rep, err := eng.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[len(rep.Results)-1]
	r := run{status: res.Status, err: res.Err, out: map[string][]byte{}}
	for name, o := range res.Outputs {
		rc, _, err := eng.Store.OpenBlob(ctx, o.Digest)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		r.out[name] = b
	}
	return r
}

func lines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(lines(b))
}

// TestExampleExperiment runs testdata/example.hcl and checks every output
// against the inputs and the token conventions.
func TestExampleExperiment(t *testing.T) {
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := runExperiment(t, path, src)
	if r.status != stages.StatusRan {
		t.Fatalf("stage %s: %v", r.status, r.err)
	}
	ds := filepath.Join("testdata", "dataset")
	nc, nr := countLines(t, filepath.Join(ds, dataset.ConstructionFile)), countLines(t, filepath.Join(ds, dataset.RefinementFile))
	ntc, ntr := countLines(t, filepath.Join(ds, dataset.TestConstructionFile)), countLines(t, filepath.Join(ds, dataset.TestRefinementFile))
	if nc == 0 || nr == 0 || ntc == 0 || ntr == 0 {
		t.Fatalf("testdata/dataset has an empty file: %d %d %d %d", nc, nr, ntc, ntr)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, voc, r.out, nc, nr, ntc, ntr)
}

// checkOutputs checks the outputs of an encode run of nc construction and
// nr refinement examples and ntc + ntr held-out tasks.
func checkOutputs(t *testing.T, voc *vocab.Vocab, out map[string][]byte, nc, nr, ntc, ntr int) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("..", "..", "kernels", "vocab", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out["vocab"], want) {
		t.Error("vocab.txt is not kernels/vocab/vocab.txt")
	}
	eos, _ := voc.ID(vocab.EOS)
	train, texts := lines(out["train"]), lines(out["texts"])
	if len(train) != nc+nr || len(texts) != nc+nr {
		t.Fatalf("%d train and %d text lines, want %d", len(train), len(texts), nc+nr)
	}
	for i := range train {
		var tl encode.TrainLine
		var xl encode.TextLine
		if err := json.Unmarshal(train[i], &tl); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(texts[i], &xl); err != nil {
			t.Fatal(err)
		}
		task := encode.TaskConstruction
		if i >= nc {
			task = encode.TaskRefinement
		}
		if tl.Task != task || xl.Task != task || tl.Hash != xl.Hash || tl.Family == "" {
			t.Fatalf("line %d: task %q/%q, hash %q/%q, family %q", i+1, tl.Task, xl.Task, tl.Hash, xl.Hash, tl.Family)
		}
		// The prompt ends with the @target line; refinement prompts
		// carry the source and its bucket.
		if !strings.HasPrefix(xl.Prompt, "@kernel\n") || !strings.HasSuffix(xl.Prompt, "@target\n") ||
			strings.Contains(xl.Prompt, "@script\n") != (task == encode.TaskRefinement) ||
			strings.Contains(xl.Prompt, "\n@bucket ") != (task == encode.TaskRefinement) {
			t.Fatalf("line %d: prompt %q", i+1, xl.Prompt)
		}
		p, err := voc.Decode(tl.Prompt)
		if err != nil || p != xl.Prompt {
			t.Fatalf("line %d: the prompt ids decode to another text (%v)", i+1, err)
		}
		if len(tl.Target) < 2 || tl.Target[len(tl.Target)-1] != eos {
			t.Fatalf("line %d: the target does not end with <eos>", i+1)
		}
		for _, id := range append(append([]int(nil), tl.Prompt...), tl.Target[:len(tl.Target)-1]...) {
			if id == 0 || id == eos {
				t.Fatalf("line %d: <pad> or <eos> inside the text", i+1)
			}
		}
		tg, err := voc.Decode(tl.Target[:len(tl.Target)-1])
		if err != nil || tg != xl.Target {
			t.Fatalf("line %d: the target ids decode to another text (%v)", i+1, err)
		}
		// Prompt + target = the whole text's tokens + <eos>.
		whole, err := voc.Encode(xl.Prompt + xl.Target)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(append(whole, eos)) != fmt.Sprint(append(append([]int(nil), tl.Prompt...), tl.Target...)) {
			t.Fatalf("line %d: prompt + target tokens are not the tokens of the whole text + <eos>", i+1)
		}
	}
	held := lines(out["heldout"])
	if len(held) != ntc+ntr {
		t.Fatalf("%d held-out lines, want %d", len(held), ntc+ntr)
	}
	for i, l := range held {
		var h encode.HeldoutLine
		if err := json.Unmarshal(l, &h); err != nil {
			t.Fatal(err)
		}
		task, index := encode.TaskConstruction, i
		if i >= ntc {
			task, index = encode.TaskRefinement, i-ntc
		}
		s, err := workload.Parse(h.Workload)
		if err != nil || s.Hash() != h.Hash || s.Family() != h.Family {
			t.Fatalf("held-out line %d: workload %s, hash %s: %v", i+1, h.Workload, h.Hash, err)
		}
		p, err := voc.Decode(h.Prompt)
		if err != nil || !strings.HasSuffix(p, "@target\n") || h.Task != task || h.Index != index || (h.Source != nil) != (task == encode.TaskRefinement) {
			t.Fatalf("held-out line %d: task %s index %d source %v prompt %q (%v)", i+1, h.Task, h.Index, h.Source, p, err)
		}
		if h.Source != nil && !strings.Contains(p, "@script\n"+h.Source.Script+"@bucket ") {
			t.Fatalf("held-out line %d: the prompt does not carry the source script", i+1)
		}
	}
	var rep encode.Report
	if err := json.Unmarshal(out["report"], &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Examples["construction"] != nc || rep.Examples["refinement"] != nr || rep.HeldOut["construction"] != ntc || rep.HeldOut["refinement"] != ntr {
		t.Errorf("report counts: %+v %+v", rep.Examples, rep.HeldOut)
	}
	if rep.Checked.Kernels != nc+nr+ntc+ntr || rep.Checked.Prompts != nc+nr+ntc+ntr || rep.Checked.Scripts != nc+2*nr+ntr {
		t.Errorf("report checked: %+v", rep.Checked)
	}
	tot := rep.Tokens.Total
	if tot.N != nc+nr || tot.Min <= 0 || tot.Min > tot.P50 || tot.P50 > tot.P90 || tot.P90 > tot.P99 || tot.P99 > tot.Max ||
		rep.Tokens.Prompt.Max+rep.Tokens.Target.Max < tot.Max || rep.Tokens.HeldoutPrompt.N != ntc+ntr {
		t.Errorf("report tokens: %+v", rep.Tokens)
	}
	if rep.Fit["512"] > rep.Fit["1024"] || rep.Fit["1024"] > rep.Fit["2048"] || rep.Fit["2048"] > nc+nr {
		t.Errorf("report fit: %v", rep.Fit)
	}
}

// TestBuiltDataset runs the stage through the engine on a dataset searched
// in the test (other workloads than testdata's, a workload held out
// without records), from local paths.
func TestBuiltDataset(t *testing.T) {
	dir := t.TempDir()
	tuned := []*workload.Spec{
		mustSpec(t, `{"family":"SFM","M":32,"N":64}`), mustSpec(t, `{"family":"GMM","B":1,"M":32,"N":32,"K":64}`),
		mustSpec(t, `{"family":"NRM","B":2,"M":32,"N":32}`), mustSpec(t, `{"family":"SFM","M":64,"N":128}`),
	}
	test := []*workload.Spec{tuned[3], mustSpec(t, `{"family":"SFM","M":16,"N":16}`)}
	res := buildDataset(t, dir, tuned, test, 24, 2, 3)
	nc, nr, ntc, ntr := len(res.Construction), len(res.Refinement), len(res.TestConstruction), len(res.TestRefinement)
	if nc == 0 || nr == 0 || ntc != 2 || ntr == 0 {
		t.Fatalf("the search gave %d construction, %d refinement examples, %d + %d held-out tasks", nc, nr, ntc, ntr)
	}
	r := runExperiment(t, filepath.Join(dir, "exp.hcl"), []byte(localExp))
	if r.status != stages.StatusRan {
		t.Fatalf("stage %s: %v", r.status, r.err)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, voc, r.out, nc, nr, ntc, ntr)
}

// TestEmptyFiles: no refinement example and no held-out task (a tiny
// scale) is not an error.
func TestEmptyFiles(t *testing.T) {
	dir, exp := copyDataset(t)
	for _, f := range []string{dataset.RefinementFile, dataset.TestConstructionFile, dataset.TestRefinementFile} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runExperiment(t, filepath.Join(dir, "exp.hcl"), []byte(exp))
	if r.status != stages.StatusRan {
		t.Fatalf("stage %s: %v", r.status, r.err)
	}
	if len(r.out["heldout"]) != 0 || len(lines(r.out["train"])) != countLines(t, filepath.Join(dir, dataset.ConstructionFile)) {
		t.Fatalf("heldout %d bytes, train %d lines", len(r.out["heldout"]), len(lines(r.out["train"])))
	}
	var rep encode.Report
	if err := json.Unmarshal(r.out["report"], &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Examples["refinement"] != 0 || rep.Tokens.HeldoutPrompt.N != 0 || rep.Tokens.Total.N != rep.Examples["construction"] {
		t.Fatalf("report: %+v", rep)
	}
}
