package stages_test

import (
	"os"
	"path/filepath"
	"testing"

	"dragonx/stages"
)

// FuzzLoad feeds arbitrary bytes to the experiment loader: it must return
// diagnostics, never panic, and never give a config with errors hidden.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"testdata/valid-files", "testdata/error-files"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := stages.LoadSource("fuzz.hcl", src, stages.LoadOptions{Vars: []string{}})
		if !diags.HasErrors() && cfg == nil {
			t.Fatal("no config and no error")
		}
		if !diags.HasErrors() {
			for _, inst := range cfg.Instances {
				_ = inst.Stage.Params()
				_ = inst.Stage.Inputs()
			}
		}
	})
}
