package space_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/space"
	"dragonx/kernels/trace"
	"dragonx/kernels/workload"
)

// TestAutoInlineRecordedSketches checks AutoInline against the CUDA
// sketches that TVM's test_meta_schedule_space_cuda.py publishes
// (kernels/trace/testdata/tvm-space-cuda) for the workloads where
// MultiLevelTiling does not apply (no SamplePerfectTile in the sketch), so
// that AutoInline sees the same blocks as in TVM: the GetBlock prefix and
// the inline instructions (kind and block) must be the sketch's.
func TestAutoInlineRecordedSketches(t *testing.T) {
	dirs, err := filepath.Glob("../trace/testdata/tvm-space-cuda/*/trace.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sketches (%v)", err)
	}
	checked := 0
	for _, path := range dirs {
		dir := filepath.Dir(path)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := trace.Parse([]byte(strings.TrimSpace(string(data))))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if slices.ContainsFunc(want.Insts, func(in trace.Inst) bool { return in.Kind == "SamplePerfectTile" }) {
			continue
		}
		checked++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			spec, err := os.ReadFile(filepath.Join(dir, "workload.json"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := workload.Build(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := space.Generate(context.Background(), f, []space.Rule{space.AutoInlineCUDA()}, trace.Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d sketches, want 1", len(got))
			}
			if g, w := inlineSteps(got[0].Trace()), inlineSteps(want); !slices.Equal(g, w) {
				t.Errorf("GetBlock and inline instructions:\n got %q\nwant %q", g, w)
			}
		})
	}
	if checked == 0 {
		t.Fatal("no recorded sketch without MultiLevelTiling")
	}
}

// inlineSteps lists the GetBlock, ComputeInline and ReverseComputeInline
// instructions of tr as "kind inputs attrs outputs".
func inlineSteps(tr *trace.Trace) []string {
	var out []string
	for _, in := range tr.Insts {
		switch in.Kind {
		case "GetBlock", "ComputeInline", "ReverseComputeInline":
			out = append(out, in.Kind+" "+trace.ArrayValue(in.Inputs...).String()+" "+trace.ArrayValue(in.Attrs...).String()+" "+strings.Join(in.Outputs, ","))
		}
	}
	return out
}
