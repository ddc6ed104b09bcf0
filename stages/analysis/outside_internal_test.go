package analysis

import (
	"strings"
	"testing"

	"dragonx/stages/bench"
)

func TestOutsideTable(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	at := func(policy, mode string, index int, lat *float64) bench.Attempt {
		return bench.Attempt{Policy: policy, Decoding: mode, Task: bench.KindConstruction, Index: index, OK: lat != nil, LatencyUS: lat}
	}
	g := func(tasks, attempts, correct int) bench.Group {
		return bench.Group{Tasks: tasks, Attempts: attempts, Correct: correct, CorrectRate: float64(correct) / float64(attempts)}
	}
	held := &benchData{name: "paper", summary: &benchSummary{Source: "model:h100", Policies: []benchPolicy{
		{Name: "rl", Kind: "policy", Decoding: "grammar", Construction: g(10, 40, 30)},
	}}}
	out := &benchData{name: "kb", summary: &benchSummary{Source: "model:h100", Outside: "kernelbench-level1", SearchTrials: 64, Policies: []benchPolicy{
		{Name: "rl", Kind: "policy", Decoding: "grammar", Construction: g(3, 6, 3)},
		{Name: "baseline:unscheduled", Kind: "baseline", Construction: g(3, 3, 3)},
		{Name: "baseline:search", Kind: "baseline", Construction: g(3, 3, 2)},
	}}, attempts: []bench.Attempt{
		// Task 0: rl's best 5 beats unscheduled 10 and search 6.
		at("rl", "grammar", 0, f(7)), at("rl", "grammar", 0, f(5)),
		// Task 1: rl's 8 beats unscheduled 10, not search 4.
		at("rl", "grammar", 1, f(8)), at("rl", "grammar", 1, nil),
		// Task 2: nothing correct from rl; the search found nothing.
		at("rl", "grammar", 2, nil), at("rl", "grammar", 2, nil),
		at("baseline:unscheduled", "", 0, f(10)), at("baseline:unscheduled", "", 1, f(10)), at("baseline:unscheduled", "", 2, f(10)),
		at("baseline:search", "", 0, f(6)), at("baseline:search", "", 1, f(4)), at("baseline:search", "", 2, nil),
	}}
	tb, ok := outsideTable([]*benchData{held, out})
	if !ok {
		t.Fatal("no outside table")
	}
	want := []string{
		"kb kernelbench-level1 rl grammar 3 50.00% (3/6) paper: 75.00% -25.00 33.33% (1/3) model:h100 (simulated)",
		"kb kernelbench-level1 baseline:unscheduled – 3 100.00% (3/3) – – – model:h100 (simulated)",
		"kb kernelbench-level1 baseline:search – 3 66.67% (2/3) – – – model:h100 (simulated)",
	}
	checkRows(t, tb, want)
	if !strings.Contains(strings.Join(tb.Notes, " "), "bench kb: fast_1 against the search at 64 measured trials per task.") {
		t.Errorf("notes do not say the search's trials: %v", tb.Notes)
	}
	if _, ok := outsideTable([]*benchData{held}); ok {
		t.Error("an outside table without an outside bench")
	}
}
