package analysis

import (
	"fmt"
	"math"
	"strconv"

	"dragonx/reports"
	"dragonx/stages/bench"
)

var (
	unscheduledBaseline = bench.BaselinePrefix + bench.BaselineUnscheduled
	searchBaseline      = bench.BaselinePrefix + bench.BaselineSearch
)

// bestLatencies returns, per construction task index, the least latency of
// the correct attempts of name under mode at b's tasks (+Inf for a task
// without one), and whether name ran at all.
func bestLatencies(b *benchData, name, mode string) (map[int]float64, bool) {
	best := map[int]float64{}
	ran := false
	for i := range b.attempts {
		a := &b.attempts[i]
		if a.Policy != name || a.Decoding != mode || a.Task != bench.KindConstruction {
			continue
		}
		ran = true
		if _, ok := best[a.Index]; !ok {
			best[a.Index] = math.Inf(1)
		}
		if a.OK && a.LatencyUS != nil {
			best[a.Index] = math.Min(best[a.Index], *a.LatencyUS)
		}
	}
	return best, ran
}

// outsideTable is, for every bench of an outside task set, each policy's
// and baseline's per-attempt correctness beside the same policy's on the
// held-out tasks of the first bench of harvest's tasks, and fast_1: the
// share of the tasks whose best correct attempt is faster than both the
// unscheduled kernel and the search's best.
func outsideTable(benches []*benchData) (reports.Table, bool) {
	t := reports.Table{
		Caption: "Outside task sets: per-attempt correctness beside the held-out tasks', and fast_1 against the unscheduled kernel and the search",
		Header:  []string{"bench", "task set", "policy", "decoding", "tasks", "per-attempt correct", "held-out per-attempt correct", "difference (points)", "fast_1 (vs unscheduled and search)", "latency source"},
	}
	var held *benchData
	for _, b := range benches {
		if b.summary.Outside == "" {
			held = b
			break
		}
	}
	any := false
	trials := map[string]bool{}
	for _, b := range benches {
		if b.summary.Outside == "" {
			continue
		}
		any = true
		unsched, _ := bestLatencies(b, unscheduledBaseline, "")
		search, hasSearch := bestLatencies(b, searchBaseline, "")
		for _, p := range b.summary.Policies {
			g := &p.Construction
			row := []string{b.name, b.summary.Outside, p.Name, modeLabel(p.Decoding), strconv.Itoa(g.Tasks), pct(g.CorrectRate) + " (" + strconv.Itoa(g.Correct) + "/" + strconv.Itoa(g.Attempts) + ")", "–", "–", "–", sourceLabel(b.summary.Source, b.summary.Measured)}
			if held != nil {
				if hp := held.policyIn(p.Name, p.Decoding); hp != nil && hp.Construction.Attempts > 0 {
					row[6] = held.name + ": " + pct(hp.Construction.CorrectRate)
					row[7] = fmt.Sprintf("%+.2f", 100*(g.CorrectRate-hp.Construction.CorrectRate))
				}
			}
			if hasSearch && p.Name != unscheduledBaseline && p.Name != searchBaseline {
				best, _ := bestLatencies(b, p.Name, p.Decoding)
				fast := 0
				for i, l := range best {
					u, ok := unsched[i]
					if !ok {
						u = math.Inf(1)
					}
					s, ok := search[i]
					if !ok {
						s = math.Inf(1)
					}
					if l < u && l < s {
						fast++
					}
				}
				if len(best) > 0 {
					row[8] = pct(float64(fast)/float64(len(best))) + " (" + strconv.Itoa(fast) + "/" + strconv.Itoa(len(best)) + ")"
				}
			}
			t.Rows = append(t.Rows, row)
		}
		if hasSearch {
			trials[fmt.Sprintf("bench %s: fast_1 against the search at %d measured trials per task.", b.name, b.summary.SearchTrials)] = true
		}
	}
	t.Notes = append(sortedSet(trials),
		"The outside tasks are the covered problems of the task set (kernels/taskset; docs/tasksets.md), benched as construction tasks with the prompts encode gives held-out construction tasks; the policies never saw them. Held-out per-attempt correct: the same policy and mode on the construction tasks of the first bench of harvest's held-out tasks; the difference is in percentage points.",
		"fast_1: the share of the tasks whose fastest correct attempt is faster than the unscheduled kernel (default thread binding) and than the search baseline's best (a task where the search found nothing correct counts the search as infinitely slow); – for the unscheduled and search baselines themselves and for a bench without the search baseline.",
		"Latencies labelled (simulated) come from the analytic GPU model, not from a GPU.")
	return t, any
}
