package rl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/stages"
	_ "dragonx/stages/all"
	"dragonx/stages/rl"
)

// describe is what decides an instance's cache key besides its inputs'
// contents: its kind and version, its parameters, and where each input
// comes from.
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

func loadFile(t *testing.T, name, scale string) *stages.Config {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("..", "..", "experiments", name))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := stages.LoadSource(path, src, stages.LoadOptions{Vars: []string{"scale=" + scale}})
	if diags.HasErrors() {
		t.Fatalf("%s at scale %s: %v", name, scale, diags)
	}
	return cfg
}

// TestAblationSharesPaperStages: at every scale, ablation-reward.hcl's
// stages upstream of rl are paper.hcl's (same kind, parameters and input
// sources, so the same cache keys), and it has one rl instance per reward
// shape, differing in the reward only.
func TestAblationSharesPaperStages(t *testing.T) {
	for _, scale := range []string{"smoke", "small", "paper"} {
		paper, abl := loadFile(t, "paper.hcl", scale), loadFile(t, "ablation-reward.hcl", scale)
		for _, name := range []string{"workloads", "harvest", "encode", "sft"} {
			p, a := paper.Instance(stages.Addr{Name: name}), abl.Instance(stages.Addr{Name: name})
			if p == nil || a == nil {
				t.Fatalf("scale %s: stage %s is missing (paper %v, ablation %v)", scale, name, p != nil, a != nil)
			}
			if dp, da := describe(p), describe(a); dp != da {
				t.Errorf("scale %s: stage %s differs from paper.hcl's, so its cache entries are not shared:\npaper:\n%s\nablation:\n%s", scale, name, dp, da)
			}
		}
		shapes := map[string]rl.RewardSpec{}
		for _, inst := range abl.Instances {
			if s, ok := inst.Stage.(*rl.Stage); ok {
				shapes[inst.Addr.Key] = s.Spec().Reward
			}
		}
		// The gated shapes gate as paper.hcl's rl does: on the static
		// verdict in the decisions format (the default) below scale paper.
		gate := rl.GateStatic
		if scale == "paper" {
			gate = rl.GateNumeric
		}
		want := map[string][2]string{
			"gate": {gate, rl.BonusNone}, "log_speedup": {gate, rl.BonusLogSpeedup},
			"linear_capped": {gate, rl.BonusLinearCapped}, "rank": {gate, rl.BonusRank},
			"no_gate": {rl.GateNone, rl.BonusLogSpeedup},
		}
		if len(shapes) != len(want) {
			t.Fatalf("scale %s: rl instances %v; want %d", scale, shapes, len(want))
		}
		for k, w := range want {
			if r, ok := shapes[k]; !ok || r.Gate != w[0] || r.Bonus != w[1] {
				t.Errorf("scale %s: rl[%q] reward %+v; want gate %s bonus %s", scale, k, r, w[0], w[1])
			}
		}
	}
}

// TestMediumSharesSmallData: paper.hcl's medium scale is small's data
// trained longer: its workloads, harvest and encode stages have small's
// cache keys (a medium run after a small one harvests nothing), and its
// sft and rl stages do not.
func TestMediumSharesSmallData(t *testing.T) {
	small, medium := loadFile(t, "paper.hcl", "small"), loadFile(t, "paper.hcl", "medium")
	for _, name := range []string{"workloads", "harvest", "encode", "sft", "rl"} {
		s, m := small.Instance(stages.Addr{Name: name}), medium.Instance(stages.Addr{Name: name})
		if s == nil || m == nil {
			t.Fatalf("stage %s is missing (small %v, medium %v)", name, s != nil, m != nil)
		}
		same := describe(s) == describe(m)
		if want := name != "sft" && name != "rl"; same != want {
			t.Errorf("stage %s: the same key at small and medium is %v; want %v:\nsmall:\n%s\nmedium:\n%s", name, same, want, describe(s), describe(m))
		}
	}
}
