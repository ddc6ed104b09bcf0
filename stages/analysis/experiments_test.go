package analysis_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/stages"
	_ "dragonx/stages/all"
	"dragonx/stages/analysis"
)

func loadExperiment(t *testing.T, name, scale string, edit func([]byte) []byte) *stages.Config {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("..", "..", "experiments", name))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		src = edit(src)
	}
	cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{Vars: []string{"scale=" + scale}})
	if diags.HasErrors() {
		t.Fatalf("%s at scale %s: %v", name, scale, diags)
	}
	return cfg
}

// describe is what decides an instance's key besides its inputs' bytes.
func describe(inst *stages.Instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind %s %s\n", inst.Kind.Name(), inst.Kind.Version())
	for _, p := range inst.Stage.Params() {
		fmt.Fprintf(&b, "param %s = %s\n", p.Name, p.Value)
	}
	for _, in := range inst.Stage.Inputs() {
		if in.Ref != nil {
			fmt.Fprintf(&b, "input %s <- %v\n", in.Name, *in.Ref)
		} else {
			fmt.Fprintf(&b, "input %s <- %s\n", in.Name, in.Local)
		}
	}
	return b.String()
}

func inputSources(inst *stages.Instance) map[string]string {
	m := map[string]string{}
	for _, in := range inst.Stage.Inputs() {
		if in.Ref != nil {
			m[in.Name] = in.Ref.String()
		}
	}
	return m
}

// TestPaperEndsInAnalysis: at every scale paper.hcl ends in bench then
// analysis, which reads the bench's three files, rl's curves and metrics,
// sft's loss and metrics and harvest's stats and datasets.
func TestPaperEndsInAnalysis(t *testing.T) {
	for _, scale := range []string{"smoke", "small", "medium", "paper"} {
		cfg := loadExperiment(t, "paper.hcl", scale, nil)
		n := len(cfg.Instances)
		if n < 2 || cfg.Instances[n-2].Addr.Name != "bench" || cfg.Instances[n-1].Addr.Name != "analysis" {
			t.Fatalf("scale %s: the last stages are %v, %v; want bench, analysis", scale, cfg.Instances[n-2].Addr, cfg.Instances[n-1].Addr)
		}
		a := cfg.Instances[n-1]
		st := a.Stage.(*analysis.Stage)
		if st.Spec().Scale != scale {
			t.Errorf("scale %s: the analysis says scale %q", scale, st.Spec().Scale)
		}
		want := map[string]string{
			"bench/paper/summary.json": "stage.bench.out.summary", "bench/paper/attempts.jsonl": "stage.bench.out.attempts",
			"bench/paper/per_task.csv": "stage.bench.out.per_task",
			"rl/paper/curves.csv":      "stage.rl.out.curves", "rl/paper/metrics.json": "stage.rl.out.metrics",
			"sft/loss.csv": "stage.sft.out.loss", "sft/metrics.json": "stage.sft.out.metrics",
			"harvest/stats.json": "stage.harvest.out.stats", "harvest/construction.jsonl": "stage.harvest.out.construction",
			"harvest/refinement.jsonl": "stage.harvest.out.refinement",
		}
		got := inputSources(a)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("scale %s: analysis inputs\n%v\nwant\n%v", scale, got, want)
		}
	}
}

// TestStyleEditChangesOnlyAnalysis: a copy of paper.hcl whose only change is
// a figure's style changes the key of the analysis stage and of no other
// (the plan reruns only analysis; TestPaperSmoke checks it on a real cache).
func TestStyleEditChangesOnlyAnalysis(t *testing.T) {
	const line = "font_size = 11"
	orig := loadExperiment(t, "paper.hcl", "smoke", nil)
	edited := loadExperiment(t, "paper.hcl", "smoke", func(src []byte) []byte {
		if !bytes.Contains(src, []byte(line)) {
			t.Fatalf("paper.hcl no longer has %q", line)
		}
		return bytes.Replace(src, []byte(line), []byte("font_size = 13"), 1)
	})
	for _, inst := range orig.Instances {
		other := edited.Instance(inst.Addr)
		same := describe(inst) == describe(other)
		if inst.Addr.Name == "analysis" && same {
			t.Errorf("the style edit did not change the analysis's parameters")
		}
		if inst.Addr.Name != "analysis" && !same {
			t.Errorf("the style edit changed %s:\n%s\n%s", inst.Addr, describe(inst), describe(other))
		}
	}
}

// TestAblationReport: ablation-reward.hcl benches every reward shape (sft
// against that shape's rl checkpoint), runs the baselines once, and has one
// analysis over all of them.
func TestAblationReport(t *testing.T) {
	for _, scale := range []string{"smoke", "small", "paper"} {
		cfg := loadExperiment(t, "ablation-reward.hcl", scale, nil)
		shapes := []string{"gate", "linear_capped", "log_speedup", "no_gate", "rank"}
		for _, s := range shapes {
			b := cfg.Instance(stages.Addr{Name: "bench", Key: s, Keyed: true})
			if b == nil {
				t.Fatalf("scale %s: no bench[%q]", scale, s)
			}
			src := inputSources(b)
			if src["policy.rl"] != fmt.Sprintf("stage.rl[%q].out.checkpoint", s) || src["policy.sft"] != "stage.sft.out.checkpoint" {
				t.Errorf("scale %s: bench[%q] policies %v", scale, s, src)
			}
		}
		a := cfg.Instance(stages.Addr{Name: "analysis"})
		if a == nil {
			t.Fatalf("scale %s: no analysis", scale)
		}
		sp := a.Stage.(*analysis.Stage).Spec()
		if got := strings.Join(sp.Benches, " "); got != "baselines "+strings.Join(shapes, " ") {
			t.Errorf("scale %s: analysis benches %s", scale, got)
		}
		if got := strings.Join(sp.RL, " "); got != strings.Join(shapes, " ") {
			t.Errorf("scale %s: analysis rl %s", scale, got)
		}
		if src := inputSources(a); src["bench/rank/summary.json"] != `stage.bench["rank"].out.summary` || src["bench/baselines/summary.json"] != "stage.baselines.out.summary" {
			t.Errorf("scale %s: analysis inputs %v", scale, src)
		}
	}
}
