package analysis

import (
	"strings"
	"testing"

	"dragonx/reports"
	"dragonx/stages/bench"
)

// checkRows compares a table's rows, cells joined by spaces, with want.
func checkRows(t *testing.T, tb reports.Table, want []string) {
	t.Helper()
	var rows []string
	for _, r := range tb.Rows {
		rows = append(rows, strings.Join(r, " "))
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestPeakTable(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	at := func(policy, mode, task string, ok bool, pf *float64, source string) bench.Attempt {
		return bench.Attempt{Policy: policy, Decoding: mode, Task: task, OK: ok, PeakFraction: pf, Source: source}
	}
	b := &benchData{name: "main", summary: &benchSummary{Policies: []benchPolicy{
		{Name: "rl", Kind: "policy", Decoding: "grammar"},
		{Name: "baseline:search", Kind: "baseline"},
	}}, attempts: []bench.Attempt{
		at("rl", "grammar", "construction", true, f(0.1), "model:h100"),
		at("rl", "grammar", "construction", true, f(0.4), "model:h100"),
		at("rl", "grammar", "construction", true, f(0.2), "model:h100"),
		at("rl", "grammar", "construction", false, nil, "model:h100"),
		at("rl", "unconstrained", "construction", true, f(0.9), "model:h100"), // another mode: not rl/grammar's
		at("baseline:search", "", "construction", true, f(0.5), "measured:cuda"),
		at("baseline:search", "", "construction", true, nil, "model:h100"), // no fraction (a bench before version 5)
	}}
	got := peakTable([]*benchData{b})
	want := []string{
		"main rl grammar construction 3 20.00% 40.00% model:h100 (simulated)",
		"main rl grammar refinement 0 – – –",
		"main baseline:search – construction 1 50.00% 50.00% measured:cuda",
		"main baseline:search – refinement 0 – – –",
	}
	checkRows(t, got, want)
}
