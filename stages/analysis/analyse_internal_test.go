package analysis

import (
	"strings"
	"testing"
)

// TestComparisonEitherWay: the bench stores each pair once, the later
// policy first; the RL-faster count reads the same whichever way it is.
func TestComparisonEitherWay(t *testing.T) {
	b := &benchData{summary: &benchSummary{Comparisons: []comparison{
		{A: "sft", B: "rl", Task: "construction", Tasks: 10, AFaster: 3, BFaster: 6, Ties: 1},
		{A: "rl", B: "sft", Task: "refinement", Tasks: 5, AFaster: 4, BFaster: 1},
		{A: "rl", B: "sft", Decoding: "grammar", Task: "refinement", Tasks: 5, AFaster: 2, BFaster: 3},
	}}}
	c := b.comparison(RLPolicy, SFTPolicy, "", "construction")
	if c == nil || c.A != "rl" || c.B != "sft" || c.AFaster != 6 || c.BFaster != 3 || c.Ties != 1 || c.Tasks != 10 {
		t.Errorf("construction: %+v; want rl 6 faster, sft 3, 1 tie of 10", c)
	}
	if c := b.comparison(RLPolicy, SFTPolicy, "", "refinement"); c == nil || c.AFaster != 4 || c.BFaster != 1 {
		t.Errorf("refinement: %+v", c)
	}
	if c := b.comparison(RLPolicy, SFTPolicy, "grammar", "refinement"); c == nil || c.AFaster != 2 || c.Decoding != "grammar" {
		t.Errorf("refinement under the grammar: %+v", c)
	}
	if c := b.comparison(RLPolicy, SFTPolicy, "grammar", "construction"); c != nil {
		t.Errorf("a mode the bench did not compare in: %+v", c)
	}
	if c := b.comparison(RLPolicy, "baseline:random", "", "refinement"); c != nil {
		t.Errorf("a pair the bench does not have: %+v", c)
	}
}

// TestCorrectnessLabel: a bench that ran the numerical gate says so; one
// that judged statically (numeric = false: no numeric phase in its
// counts) must not claim the gate.
func TestCorrectnessLabel(t *testing.T) {
	phases := func(names ...string) benchGroup {
		g := benchGroup{Phases: map[string]int{}}
		for _, n := range names {
			g.Phases[n] = 0
		}
		return g
	}
	gated := &benchData{summary: &benchSummary{Policies: []benchPolicy{
		{Name: "rl", Construction: phases("parse", "verify", "numeric", "latency"), Refinement: phases("parse", "verify", "numeric", "latency")}}}}
	static := &benchData{summary: &benchSummary{Policies: []benchPolicy{
		{Name: "rl", Construction: phases("parse", "verify", "latency"), Refinement: phases("parse", "verify", "latency")}}}}
	if !gated.gated() || !strings.Contains(gated.correctness(), "numerical gate passed") {
		t.Errorf("gated bench: %v, %q", gated.gated(), gated.correctness())
	}
	if static.gated() || !strings.Contains(static.correctness(), "no numerical gate") {
		t.Errorf("static bench: %v, %q", static.gated(), static.correctness())
	}
}
