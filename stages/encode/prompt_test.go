package encode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dragonx/kernels/ir"
	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages"
	"dragonx/stages/encode"
)

// ConstructionPrompt (script format) and DecisionsConstructionPrompt give
// every held-out construction task of the example experiment, run in each
// format, the prompt the stage wrote for it.
func TestConstructionPromptIsHeldout(t *testing.T) {
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dpath, dsrc := decisionsExp(t, "  format = \"decisions\"\n")
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format string
		path   string
		src    []byte
		prompt func(*workload.Spec, *ir.PrimFunc) ([]int, error)
	}{
		{encode.FormatScript, path, src, func(_ *workload.Spec, f *ir.PrimFunc) ([]int, error) { return encode.ConstructionPrompt(voc, f) }},
		{encode.FormatDecisions, dpath, dsrc, func(sp *workload.Spec, f *ir.PrimFunc) ([]int, error) {
			return encode.DecisionsConstructionPrompt(voc, sp, f)
		}},
	} {
		r := runExperiment(t, c.path, c.src)
		if r.status != stages.StatusRan {
			t.Fatalf("%s: stage %s: %v", c.format, r.status, r.err)
		}
		n := 0
		for _, l := range lines(r.out["heldout"]) {
			var h encode.HeldoutLine
			if err := json.Unmarshal(l, &h); err != nil {
				t.Fatal(err)
			}
			if h.Task != encode.TaskConstruction {
				continue
			}
			sp, err := workload.Parse(h.Workload)
			if err != nil {
				t.Fatal(err)
			}
			f, err := sp.Build()
			if err != nil {
				t.Fatal(err)
			}
			ids, err := c.prompt(sp, f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, h.Prompt) {
				t.Errorf("%s: construction task %d: the prompt is not the held-out prompt", c.format, h.Index)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("%s: no held-out construction task", c.format)
		}
	}
}
