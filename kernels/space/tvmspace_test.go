package space_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dragonx/kernels/internal/tvmgolden"
	"dragonx/kernels/ir"
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

// ctrSketches are the recorded sketches that CrossThreadReduction forks;
// TestMultiLevelTilingRecordedSketches, which runs the rules without it,
// leaves them out (TestCUDARulesRecordedSpaces covers them).
var ctrSketches = []string{"nrm-1", "sfm-1", "sfm-2", "sfm-3"}

// TestMultiLevelTilingRecordedSketches generates the design space of each
// recorded CUDA sketch's workload under MultiLevelTiling, AutoInline and
// ParallelizeVectorizeUnroll (TVM's CUDA rules up to
// ParallelizeVectorizeUnroll, less InlineConstantScalars and
// CrossThreadReduction, which add nothing to these workloads' first
// sketch) and compares the instructions (kind, inputs, attributes,
// outputs; not the decisions) with the recorded sketch's up to
// ParallelizeVectorizeUnroll's annotation included.
func TestMultiLevelTilingRecordedSketches(t *testing.T) {
	paths, err := filepath.Glob("../trace/testdata/tvm-space-cuda/*/trace.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded sketches (%v)", err)
	}
	matched, total := 0, 0
	for _, path := range paths {
		dir := filepath.Dir(path)
		name := filepath.Base(dir)
		if slices.Contains(ctrSketches, name) {
			continue
		}
		total++
		t.Run(name, func(t *testing.T) {
			want := readTrace(t, path)
			cut := slices.IndexFunc(want.Insts, func(in trace.Inst) bool {
				return in.Kind == "Annotate" && len(in.Attrs) == 1 && in.Attrs[0].Str == "meta_schedule.unroll_explicit"
			})
			if cut < 1 || want.Insts[cut-1].Kind != "SampleCategorical" {
				t.Fatalf("no ParallelizeVectorizeUnroll in the recorded sketch")
			}
			f := buildWorkload(t, filepath.Join(dir, "workload.json"))
			rules := []space.Rule{space.MultiLevelTilingCUDA(), space.AutoInlineCUDA(), space.ParallelizeVectorizeUnrollCUDA()}
			got, err := space.Generate(context.Background(), f, rules, trace.Options{Check: true, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d sketches, want 1", len(got))
			}
			g, w := instStrings(got[0].Trace().Insts), instStrings(want.Insts[:cut+1])
			for i := range max(len(g), len(w)) {
				if i >= len(g) || i >= len(w) || g[i] != w[i] {
					t.Fatalf("instruction %d differs (%d instructions, TVM's %d):\n got %s\nwant %s", i, len(g), len(w), at(g, i), at(w, i))
				}
			}
			if _, err := trace.Replay(context.Background(), f, got[0].Trace(), trace.Options{Check: true}); err != nil {
				t.Fatalf("the sketch's trace does not replay: %v", err)
			}
			matched++
		})
	}
	t.Logf("matched %d/%d recorded sketches", matched, total)
}

// TestGenerateDeterministic: a seed gives the same sketches, decisions
// included, under CUDARules (SFM forks four sketches through
// CrossThreadReduction, each sampling from a forked generator); another
// seed samples other decisions.
func TestGenerateDeterministic(t *testing.T) {
	for _, w := range []string{"c2d-0", "sfm-0"} {
		f := buildWorkload(t, "../trace/testdata/tvm-space-cuda/"+w+"/workload.json")
		gen := func(seed int64) string {
			got, err := space.Generate(context.Background(), f, space.CUDARules(), trace.Options{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			var b []byte
			for _, s := range got {
				b = s.Trace().AppendJSON(b)
				b = append(b, '\n')
			}
			return string(b)
		}
		a, b, c := gen(1), gen(1), gen(2)
		if a != b {
			t.Errorf("%s: seed 1 gave two spaces:\n%s\n%s", w, a, b)
		}
		if a == c {
			t.Errorf("%s: seeds 1 and 2 gave the same space %s", w, a)
		}
	}
}

func readTrace(t *testing.T, path string) *trace.Trace {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Parse([]byte(strings.TrimSpace(string(data))))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

func buildWorkload(t *testing.T, path string) *ir.PrimFunc {
	t.Helper()
	spec, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := workload.Build(spec)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func instStrings(insts []trace.Inst) []string {
	out := make([]string, len(insts))
	for i, in := range insts {
		out[i] = in.Kind + " " + trace.ArrayValue(in.Inputs...).String() + " " + trace.ArrayValue(in.Attrs...).String() + " " + strings.Join(in.Outputs, ",")
	}
	return out
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<end>"
}

// TestCUDARulesRecordedSpaces generates, for each test of TVM's
// test_meta_schedule_space_cuda.py (the recorded sketches <family>-<i> of
// kernels/trace/testdata/tvm-space-cuda), the design space of CUDARules on
// its workload and checks that it is the test's set of sketches: as many,
// and each generated sketch's instructions (kind, inputs, attributes,
// outputs; not the decisions) those of one recorded sketch, each recorded
// sketch matched once. Every sketch's trace must replay, and replayed with
// the test's decisions print the test's module (expected.tir).
func TestCUDARulesRecordedSpaces(t *testing.T) {
	paths, err := filepath.Glob("../trace/testdata/tvm-space-cuda/*/trace.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded sketches (%v)", err)
	}
	families := map[string][]string{} // family -> sketch folders, in order
	var order []string
	for _, p := range paths {
		dir := filepath.Dir(p)
		fam, _, _ := strings.Cut(filepath.Base(dir), "-")
		if _, ok := families[fam]; !ok {
			order = append(order, fam)
		}
		families[fam] = append(families[fam], dir)
	}
	matched, total := 0, 0
	for _, fam := range order {
		dirs := families[fam]
		total += len(dirs)
		t.Run(fam, func(t *testing.T) {
			ctx := context.Background()
			f := buildWorkload(t, filepath.Join(dirs[0], "workload.json"))
			got, err := space.Generate(ctx, f, space.CUDARules(), trace.Options{Check: true, Seed: 11})
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]string, len(dirs))
			for i, d := range dirs {
				want[i] = instStrings(readTrace(t, filepath.Join(d, "trace.json")).Insts)
			}
			used := make([]bool, len(want))
			for k, s := range got {
				g := instStrings(s.Trace().Insts)
				found := -1
				for i, w := range want {
					if !used[i] && slices.Equal(g, w) {
						found = i
						break
					}
				}
				if found < 0 {
					best, at := closest(g, want, used)
					t.Errorf("sketch %d matches no recorded sketch; nearest %s differs at instruction %d:\n got %s\nwant %s",
						k, filepath.Base(dirs[best]), at, atIndex(g, at), atIndex(want[best], at))
					continue
				}
				used[found] = true
				if _, err := trace.Replay(ctx, f, s.Trace(), trace.Options{Check: true}); err != nil {
					t.Errorf("sketch %d (%s) does not replay: %v", k, filepath.Base(dirs[found]), err)
					continue
				}
				// With the test's decisions, the sketch prints TVM's module.
				rec := readTrace(t, filepath.Join(dirs[found], "trace.json"))
				tr := s.Trace().Clone()
				for _, d := range rec.Decisions {
					tr.SetDecision(d.Index, d.Value)
				}
				r, err := trace.Replay(ctx, f, tr, trace.Options{Check: true})
				if err != nil {
					t.Errorf("sketch %d (%s) with TVM's decisions: %v", k, filepath.Base(dirs[found]), err)
					continue
				}
				want, err := os.ReadFile(filepath.Join(dirs[found], "expected.tir"))
				if err != nil {
					t.Fatal(err)
				}
				if d := tvmgolden.Diff(r.Func().Script(), string(want)); d != "" {
					t.Errorf("sketch %d (%s) with TVM's decisions does not print TVM's module: %s", k, filepath.Base(dirs[found]), d)
					continue
				}
				matched++
			}
			for i, u := range used {
				if !u {
					t.Errorf("recorded sketch %s not generated (%d sketches generated, %d recorded)", filepath.Base(dirs[i]), len(got), len(dirs))
				}
			}
		})
	}
	t.Logf("matched %d/%d recorded sketches in %d tests", matched, total, len(order))
}

// closest returns the unused recorded sketch sharing the longest prefix
// with g, and the index of the first difference.
func closest(g []string, want [][]string, used []bool) (best, at int) {
	best, at = 0, -1
	for i, w := range want {
		if used[i] {
			continue
		}
		n := 0
		for n < len(g) && n < len(w) && g[n] == w[n] {
			n++
		}
		if n > at {
			best, at = i, n
		}
	}
	if at < 0 {
		at = 0
	}
	return best, at
}

func atIndex(s []string, i int) string { return at(s, i) }
