package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/kernels/trace"
	"dragonx/kernels/verdict"
	"dragonx/kernels/workload"
)

// TestKernelSampleApply: every line kernel sample -json prints is a trace
// that kernel apply reads and that passes its static check, on shapes
// where some draws are rejected.
func TestKernelSampleApply(t *testing.T) {
	dir := t.TempDir()
	for _, shape := range []string{"GMM/0", "C1D/0", "SFM/0"} {
		family, index, _ := strings.Cut(shape, "/")
		code, stdout, stderr := runCLI("kernel", "sample", "-family", family, "-shape", index, "-seed", "1", "-count", "12", "-json")
		if code != exitOK {
			t.Fatalf("%s: kernel sample: exit %d: %s", shape, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if stdout == "" {
			lines = nil
		}
		if len(lines) == 0 {
			t.Errorf("%s: no draw accepted of 12 (stderr %s)", shape, stderr)
		}
		rejected := strings.Count(stderr, " rejected: ")
		if len(lines)+rejected != 12 {
			t.Errorf("%s: %d traces and %d rejections, want 12 in all", shape, len(lines), rejected)
		}
		for i, line := range lines {
			p := filepath.Join(dir, "t.json")
			if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI("kernel", "apply", "-family", family, "-shape", index, "-trace", p, "-check", "static", "-json")
			if code != exitOK || !strings.HasPrefix(out, `{"ok":true,"phase":"verify"`) {
				t.Errorf("%s line %d: kernel apply: exit %d: %s%s", shape, i, code, out, errOut)
			}
		}
	}
}

// TestKernelSweepNumeric: -check numeric passes the phase to the verdict.
// Where kernels/verdict does not have the numeric phase, the sweep stops
// with its refusal; where it does, the sweep runs.
func TestKernelSweepNumeric(t *testing.T) {
	spec, err := workload.BenchmarkSpec("NRM", 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	probe := verdict.CheckTrace(context.Background(), f, &trace.Trace{}, verdict.Options{Until: "numeric"})
	known := probe.Phase != verdict.PhaseWorkload
	code, stdout, stderr := runCLI("kernel", "sweep", "-families", "NRM", "-shapes", "0", "-count", "1", "-check", "numeric")
	if known {
		if code != exitOK || !strings.Contains(stdout, "NRM") {
			t.Errorf("verdict has phase numeric; kernel sweep -check numeric: exit %d: %s%s", code, stdout, stderr)
		}
		return
	}
	if code != exitFailure || !strings.Contains(stderr, `the verdict refuses the check up to "numeric"`) || stdout != "" {
		t.Errorf("verdict lacks phase numeric; kernel sweep -check numeric: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
