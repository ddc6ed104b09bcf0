package dragon

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestConfigsDecodeFromHCL checks that the configuration structs decode
// from HCL as a stage kind will: into the defaults, keeping the defaults of
// omitted attributes, and rejecting unknown ones with a diagnostic.
func TestConfigsDecodeFromHCL(t *testing.T) {
	src := `
layers  = 6
width   = 384
heads   = 6
dropout = 0
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "model.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg := DefaultConfig()
	if diags := gohcl.DecodeBody(f.Body, nil, &cfg); diags.HasErrors() {
		t.Fatal(diags)
	}
	want := DefaultConfig()
	want.Layers, want.Width, want.Heads, want.Dropout = 6, 384, 6, 0
	if cfg != want {
		t.Errorf("decoded %+v; want %+v", cfg, want)
	}

	f, _ = hclsyntax.ParseConfig([]byte("steps = 20\nlr = 0.0006\nmin_lr = 0.00006\nbatch = 8\n"), "train.hcl", hcl.InitialPos)
	tc := DefaultTrainConfig()
	if diags := gohcl.DecodeBody(f.Body, nil, &tc); diags.HasErrors() {
		t.Fatal(diags)
	}
	if tc.Steps != 20 || tc.LR != 6e-4 || tc.Batch != 8 || tc.Warmup != DefaultTrainConfig().Warmup {
		t.Errorf("decoded %+v", tc)
	}

	f, _ = hclsyntax.ParseConfig([]byte("max_new = 64\ntop_k = 50\nstop = [1, 2]\n"), "sample.hcl", hcl.InitialPos)
	var so SampleOptions
	if diags := gohcl.DecodeBody(f.Body, nil, &so); diags.HasErrors() {
		t.Fatal(diags)
	}
	if so.MaxNew != 64 || so.TopK != 50 || len(so.Stop) != 2 {
		t.Errorf("decoded %+v", so)
	}

	f, _ = hclsyntax.ParseConfig([]byte("layer = 3\n"), "bad.hcl", hcl.InitialPos)
	cfg = DefaultConfig()
	diags = gohcl.DecodeBody(f.Body, nil, &cfg)
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Line != 1 {
		t.Errorf("unknown attribute: %v; want a diagnostic on line 1", diags)
	}
}
