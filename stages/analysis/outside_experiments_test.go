package analysis_test

import (
	"os"
	"path/filepath"
	"testing"

	"dragonx/stages"
	"dragonx/stages/bench"
)

// TestPaperOutsideTasks: with outside_tasks, paper.hcl benches KernelBench
// level 1 (stage bench_outside, the same policies and attempts as bench) and
// the analysis reads it beside the paper's bench; without, neither is there
// (TestPaperEndsInAnalysis).
func TestPaperOutsideTasks(t *testing.T) {
	path, _ := filepath.Abs(filepath.Join("..", "..", "experiments", "paper.hcl"))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, scale := range []string{"smoke", "small", "medium", "paper"} {
		cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{Vars: []string{"scale=" + scale, "outside_tasks=true"}})
		if diags.HasErrors() {
			t.Fatalf("scale %s: %v", scale, diags)
		}
		out := cfg.Instance(stages.Addr{Name: "bench_outside", Key: "kernelbench-level1", Keyed: true})
		held := cfg.Instance(stages.Addr{Name: "bench"})
		if out == nil || held == nil {
			t.Fatalf("scale %s: bench_outside %v, bench %v", scale, out != nil, held != nil)
		}
		o, h := out.Stage.(*bench.Stage).Spec(), held.Stage.(*bench.Stage).Spec()
		if o.Outside != "kernelbench-level1" || o.Attempts != h.Attempts || o.MaxNew != h.MaxNew || o.SearchTrials != h.SearchTrials || len(o.Policies) != len(h.Policies) {
			t.Errorf("scale %s: bench_outside %+v\nwant bench's budget %+v", scale, o.Params, h.Params)
		}
		a := cfg.Instances[len(cfg.Instances)-1]
		got := inputSources(a)
		if got["bench/outside-kernelbench-level1/attempts.jsonl"] != `stage.bench_outside["kernelbench-level1"].out.attempts` || got["bench/paper/attempts.jsonl"] != "stage.bench.out.attempts" {
			t.Errorf("scale %s: analysis inputs %v", scale, got)
		}
	}
}
