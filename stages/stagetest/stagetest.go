// Package stagetest holds what the stage kinds' tests share: loading an
// experiment from source and reading its diagnostics as lines that name
// where they point, running a whole experiment on an in-memory cache, and
// comparing a training stage's deterministic outputs.
package stagetest

import (
	"fmt"
	"path/filepath"
	"testing"

	"dragonx/stages"
)

// Load loads src as the experiment file at path (exp.hcl in a fresh
// temporary directory when path is ""). It returns the configuration, nil
// when there are errors, and every diagnostic as "Summary: Detail @LINE"
// (LINE 0 when the diagnostic has no subject).
func Load(t testing.TB, path, src string) (*stages.Config, []string) {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "exp.hcl")
	}
	cfg, diags := stages.LoadSource(path, []byte(src), stages.LoadOptions{})
	var lines []string
	for _, d := range diags {
		line := 0
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		lines = append(lines, fmt.Sprintf("%s: %s @%d", d.Summary, d.Detail, line))
	}
	if diags.HasErrors() {
		return nil, lines
	}
	return cfg, lines
}
