package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dragonx/reports"
	"dragonx/stages/bench"
)

// What a policy's correctness is compared with: the uniform random walk
// under the policy's own mask (bench's random_walk, in each grammar mode),
// and for a policy that decoded unconstrained the design-space samples
// drawn without a mask (bench's random).
var (
	walkBaseline   = bench.BaselinePrefix + bench.BaselineRandomWalk
	randomBaseline = bench.BaselinePrefix + bench.BaselineRandom
)

// liftBaseline names the baseline a policy decoded under mode is compared
// with: random_walk under the same grammar mode, random for unconstrained.
func liftBaseline(mode string) string {
	if mode == bench.DecodeUnconstrained || mode == "free" {
		return randomBaseline
	}
	return walkBaseline
}

// policyIn returns the bench's summary of name under decoding mode ("" for
// a baseline that decodes nothing), or nil.
func (b *benchData) policyIn(name, mode string) *benchPolicy {
	for i := range b.summary.Policies {
		if p := &b.summary.Policies[i]; p.Name == name && p.Decoding == mode {
			return p
		}
	}
	return nil
}

// liftOver returns the group of the baseline a policy's group under mode
// is compared with, and its name; nil when the bench has none.
func (b *benchData) liftOver(mode, task string) (*benchGroup, string) {
	name := liftBaseline(mode)
	m := mode
	if name == randomBaseline {
		m = ""
	}
	return group(b.policyIn(name, m), task), name
}

// Lift is a policy's per-attempt correctness minus a baseline's, in
// percentage points, with the counts behind both.
type Lift struct {
	Points                   float64
	Correct, Attempts        int
	BaseCorrect, BaseAttempt int
	Base                     string
}

// liftOf is the lift of group g over baseline group base (named name).
func liftOf(g, base *benchGroup, name string) Lift {
	return Lift{Points: 100 * (g.CorrectRate - base.CorrectRate), Correct: g.Correct, Attempts: g.Attempts,
		BaseCorrect: base.Correct, BaseAttempt: base.Attempts, Base: name}
}

// String is "+12.50 (45/80 vs random_walk 35/80)".
func (l Lift) String() string {
	return fmt.Sprintf("%+.2f (%d/%d vs %s %d/%d)", l.Points, l.Correct, l.Attempts, shortName(l.Base), l.BaseCorrect, l.BaseAttempt)
}

func shortName(name string) string { return strings.TrimPrefix(name, bench.BaselinePrefix) }

// liftCell is the main table's lift of policy p on task: "–" for a
// baseline or a bench without the comparator.
func (b *benchData) liftCell(p *benchPolicy, task string) string {
	g := group(p, task)
	if p.Kind == "baseline" || g == nil {
		return "–"
	}
	base, name := b.liftOver(p.Decoding, task)
	if base == nil || base.Attempts == 0 {
		return "–"
	}
	return liftOf(g, base, name).String()
}

// modeLabel is a decoding mode for a table cell ("–" for none).
func modeLabel(mode string) string {
	if mode == "" {
		return "–"
	}
	return mode
}

// seriesName names a policy under a mode in a figure or a table.
func seriesName(name, mode string) string {
	if mode == "" {
		return name
	}
	return name + " (" + mode + ")"
}

// familyCount is the correct attempts of one policy under one mode on one
// workload family and task kind.
type familyCount struct {
	policy, mode, family string
	attempts, correct    int
}

// familyCounts counts each (policy, mode, family)'s attempts at tasks of
// one kind, in the summary's order of policies and then family order.
func familyCounts(b *benchData, task string) []familyCount {
	type key struct{ policy, mode, family string }
	n, c := map[key]int{}, map[key]int{}
	fams := map[string]bool{}
	for _, at := range b.attempts {
		if at.Task != task {
			continue
		}
		k := key{at.Policy, at.Decoding, at.Family}
		n[k]++
		if at.OK {
			c[k]++
		}
		fams[at.Family] = true
	}
	var out []familyCount
	for _, fam := range familyOrder(sortedSet(fams)) {
		for _, p := range b.summary.Policies {
			k := key{p.Name, p.Decoding, fam}
			if n[k] > 0 {
				out = append(out, familyCount{policy: p.Name, mode: p.Decoding, family: fam, attempts: n[k], correct: c[k]})
			}
		}
	}
	return out
}

// decisionFree reports whether fam's scripts pass whatever is decided
// (bench.DecisionFreeFamilies).
func decisionFree(fam string) bool { return slices.Contains(bench.DecisionFreeFamilies, fam) }

// familyOrder puts the decision-free families after the others, each
// part in the given order.
func familyOrder(fams []string) []string {
	var tiled, free []string
	for _, f := range fams {
		if decisionFree(f) {
			free = append(free, f)
		} else {
			tiled = append(tiled, f)
		}
	}
	return append(tiled, free...)
}

// familySplitTable is, for every bench, policy, mode and task kind, the
// correctness on the families where decisions matter and, apart, on the
// decision-free ones.
func familySplitTable(benches []*benchData) reports.Table {
	t := reports.Table{
		Caption: "Per-attempt correctness on the families where decisions matter, and apart on the decision-free families",
		Header:  []string{"bench", "policy", "decoding", "task", "other families", "decision-free families"},
	}
	for _, b := range benches {
		for _, task := range taskKinds {
			type split struct{ n, c [2]int }
			sums := map[[2]string]*split{}
			for _, fc := range familyCounts(b, task) {
				k := [2]string{fc.policy, fc.mode}
				if sums[k] == nil {
					sums[k] = &split{}
				}
				i := 0
				if decisionFree(fc.family) {
					i = 1
				}
				sums[k].n[i] += fc.attempts
				sums[k].c[i] += fc.correct
			}
			for _, p := range b.summary.Policies {
				s := sums[[2]string{p.Name, p.Decoding}]
				if s == nil {
					continue
				}
				row := []string{b.name, p.Name, modeLabel(p.Decoding), task}
				for i := range 2 {
					row = append(row, countCell(s.c[i], s.n[i]))
				}
				t.Rows = append(t.Rows, row)
			}
		}
	}
	t.Notes = []string{fmt.Sprintf("Decision-free families (%s): their sketches have no multi-level tiling, only thread extents within the GPU's limits and unroll choices, so any script the grammar allows passes the static verdict (bench's TestDecisionFreeFamilies walks them); a correct attempt there says nothing about what a policy learned.", strings.Join(bench.DecisionFreeFamilies, ", "))}
	return t
}

// countCell is "45.00% (9/20)", or "–" without attempts.
func countCell(c, n int) string {
	if n == 0 {
		return "–"
	}
	return pct(float64(c)/float64(n)) + " (" + strconv.Itoa(c) + "/" + strconv.Itoa(n) + ")"
}

// paperModes are the decoding modes whose correctness is set beside the
// paper's, in order of preference: the paper's model decodes without a
// mask, so the closest of ours is the least constrained.
var paperModes = []string{bench.DecodeUnconstrained, "free", bench.DecodeGrammar, bench.DecodeGPULimits, ""}

// paperMode returns the mode of name's summary to set beside the paper's
// figures: the least constrained the bench has (nil when none).
func (b *benchData) paperMode(name string) *benchPolicy {
	for _, m := range paperModes {
		if p := b.policyIn(name, m); p != nil {
			return p
		}
	}
	return nil
}

// figureMode is the mode of the bench's figures of policies: its most
// constrained (the last of its modes: what rl trains under in
// experiments/paper.hcl), "" when none is recorded.
func (b *benchData) figureMode() string {
	if n := len(b.summary.Decoding); n > 0 {
		return b.summary.Decoding[n-1]
	}
	return ""
}
