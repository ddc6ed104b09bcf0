package workload_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
	"dragonx/kernels/workload"
)

// traceBlockNames returns the names a MetaSchedule trace looks up with
// GetBlock (GetSBlock at TVM HEAD).
func traceBlockNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var trace []json.RawMessage
	if err := json.Unmarshal(data, &trace); err != nil || len(trace) != 2 {
		t.Fatalf("%s: not a [insts, decisions] trace: %v", path, err)
	}
	var insts [][]json.RawMessage
	if err := json.Unmarshal(trace[0], &insts); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	for _, inst := range insts {
		var kind string
		json.Unmarshal(inst[0], &kind)
		if kind != "GetBlock" && kind != "GetSBlock" {
			continue
		}
		var attrs []string
		if err := json.Unmarshal(inst[2], &attrs); err != nil || len(attrs) != 2 {
			t.Fatalf("%s: GetBlock attrs %s", path, inst[2])
		}
		names = append(names, attrs[0])
	}
	return names
}

// TestTVMTraceWorkloads builds the workload of every TVM trace in
// testdata/tvm-traces (copied from shared/data/tvm-traces) and checks that
// the function is well formed and has every block the trace fetches, so
// that the trace can be replayed on it.
func TestTVMTraceWorkloads(t *testing.T) {
	dirs, err := filepath.Glob("testdata/tvm-traces/*/workload.json")
	if err != nil || len(dirs) != 13 {
		t.Fatalf("found %d tvm-traces workloads, want 13 (%v)", len(dirs), err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := workload.Build(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := analysis.VerifyWellFormed(f); err != nil {
				t.Fatal(err)
			}
			have := []string{}
			for _, b := range ir.Blocks(f) {
				have = append(have, b.Name)
			}
			for _, name := range traceBlockNames(t, filepath.Join(dir, "trace.json")) {
				if !slices.Contains(have, name) {
					t.Errorf("the trace fetches block %s; the function has %v", name, have)
				}
			}
		})
	}
}
