package analysis

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dragonx/reports"
	"dragonx/stages/bench"
)

var updateFamilies = flag.Bool("update-families", false, "rewrite testdata/families.golden")

// modesBench is a bench of sft and rl under every decoding mode, random,
// and random_walk under the two grammar modes, at two construction tasks
// of families C2D (tiled) and SFM (decision-free), two attempts each; a
// name's correct attempts per (mode, family) are given by ok.
func modesBench() *benchData {
	ok := map[string]map[string][2]int{ // name → mode → {C2D, SFM} correct of 2
		"sft":                  {"unconstrained": {0, 1}, "grammar": {0, 2}, "grammar+gpu_limits": {1, 2}},
		"rl":                   {"unconstrained": {1, 2}, "grammar": {1, 2}, "grammar+gpu_limits": {2, 2}},
		"baseline:random":      {"": {1, 2}},
		"baseline:random_walk": {"grammar": {0, 2}, "grammar+gpu_limits": {1, 2}},
	}
	b := &benchData{name: "main", summary: &benchSummary{Decoding: bench.AllDecodings}}
	for _, name := range []string{"sft", "rl", "baseline:random", "baseline:random_walk"} {
		kind := "policy"
		if strings.HasPrefix(name, "baseline:") {
			kind = "baseline"
		}
		for _, mode := range append([]string{""}, bench.AllDecodings...) {
			counts, has := ok[name][mode]
			if !has {
				continue
			}
			g := benchGroup{Tasks: 2, Attempts: 4, Correct: counts[0] + counts[1]}
			g.CorrectRate = float64(g.Correct) / 4
			b.summary.Policies = append(b.summary.Policies, benchPolicy{Name: name, Kind: kind, Decoding: mode, Construction: g})
			for i, fam := range []string{"C2D", "SFM"} {
				for k := range 2 {
					b.attempts = append(b.attempts, bench.Attempt{Policy: name, Decoding: mode, Task: "construction", Index: i, Family: fam, Attempt: k, OK: k < counts[i]})
				}
			}
		}
	}
	return b
}

func TestLift(t *testing.T) {
	b := modesBench()
	noWalk := modesBench()
	noWalk.summary.Policies = noWalk.summary.Policies[:len(noWalk.summary.Policies)-2] // no random_walk
	for _, c := range []struct {
		bench      *benchData
		name, mode string
		want       string
	}{
		{b, "sft", "grammar", "+0.00 (2/4 vs random_walk 2/4)"},
		{b, "sft", "grammar+gpu_limits", "+0.00 (3/4 vs random_walk 3/4)"},
		{b, "rl", "grammar", "+25.00 (3/4 vs random_walk 2/4)"},
		{b, "rl", "grammar+gpu_limits", "+25.00 (4/4 vs random_walk 3/4)"},
		{b, "sft", "unconstrained", "-50.00 (1/4 vs random 3/4)"}, // unconstrained: against random
		{b, "rl", "unconstrained", "+0.00 (3/4 vs random 3/4)"},
		{b, "baseline:random_walk", "grammar", "–"}, // a baseline has no lift
		{b, "baseline:random", "", "–"},
		{noWalk, "rl", "grammar", "–"}, // no random_walk in the bench
		{noWalk, "rl", "unconstrained", "+0.00 (3/4 vs random 3/4)"},
	} {
		p := c.bench.policyIn(c.name, c.mode)
		if p == nil {
			t.Fatalf("no %s (%s)", c.name, c.mode)
		}
		if got := c.bench.liftCell(p, "construction"); got != c.want {
			t.Errorf("lift of %s (%s): %q, want %q", c.name, c.mode, got, c.want)
		}
		if got := c.bench.liftCell(p, "refinement"); got != "–" {
			t.Errorf("lift of %s (%s) on a task kind without tasks: %q", c.name, c.mode, got)
		}
	}
}

// TestPaperMode: beside the paper's (unmasked) figure goes the least
// constrained mode the bench has.
func TestPaperMode(t *testing.T) {
	for _, c := range []struct {
		modes      []string
		want, note string
	}{
		{bench.AllDecodings, "unconstrained", ", as the paper's model decodes"},
		{[]string{"grammar", "grammar+gpu_limits"}, "grammar", "; the bench has no unconstrained run of it: the paper's model decodes without a mask"},
		{[]string{"grammar+gpu_limits"}, "grammar+gpu_limits", "; the bench has no unconstrained run of it: the paper's model decodes without a mask"},
		{[]string{""}, "", ""}, // a bench from before the modes
	} {
		b := &benchData{summary: &benchSummary{}}
		for _, m := range c.modes {
			b.summary.Policies = append(b.summary.Policies, benchPolicy{Name: RLPolicy, Kind: "policy", Decoding: m})
		}
		if p := b.paperMode(RLPolicy); p == nil || p.Decoding != c.want {
			t.Errorf("modes %v: %+v, want %q", c.modes, p, c.want)
		}
		if got := paperModeNote(c.want); got != c.note {
			t.Errorf("note for %q: %q, want %q", c.want, got, c.note)
		}
	}
}

// TestFamilyTables: the per-family table (decision-free families last and
// marked) and the split table, against testdata/families.golden.
func TestFamilyTables(t *testing.T) {
	b := modesBench()
	var out strings.Builder
	for _, tb := range []reports.Table{familyTable("main", "construction", familyCounts(b, "construction")), familySplitTable([]*benchData{b})} {
		out.WriteString(tb.Caption + "\n" + strings.Join(tb.Header, " | ") + "\n")
		for _, r := range tb.Rows {
			out.WriteString(strings.Join(r, " | ") + "\n")
		}
		out.WriteString("\n")
	}
	golden := filepath.Join("testdata", "families.golden")
	if *updateFamilies {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./stages/analysis -run TestFamilyTables -update-families writes it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("family tables:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, f := range []string{"C2D", "SFM"} {
		if decisionFree(f) != (f == "SFM") {
			t.Errorf("decisionFree(%s) = %v", f, decisionFree(f))
		}
	}
	if got := familyOrder([]string{"SFM", "C1D", "NRM", "GMM"}); strings.Join(got, " ") != "C1D GMM SFM NRM" {
		t.Errorf("familyOrder: %v", got)
	}
}
