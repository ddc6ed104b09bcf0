package encode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dragonx/kernels/vocab"
	"dragonx/kernels/workload"
	"dragonx/stages"
	"dragonx/stages/encode"
)

// ConstructionPrompt gives every held-out construction task of the example
// experiment the prompt the stage wrote for it.
func TestConstructionPromptIsHeldout(t *testing.T) {
	path := filepath.Join("testdata", "example.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := runExperiment(t, path, src)
	if r.status != stages.StatusRan {
		t.Fatalf("stage %s: %v", r.status, r.err)
	}
	voc, err := vocab.Default()
	if err != nil {
		t.Fatal(err)
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
		f, err := workload.Build(h.Workload)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := encode.ConstructionPrompt(voc, f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, h.Prompt) {
			t.Errorf("construction task %d: ConstructionPrompt is not the held-out prompt", h.Index)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no held-out construction task")
	}
}
