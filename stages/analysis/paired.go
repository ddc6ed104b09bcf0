package analysis

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"dragonx/reports"
)

// pairedResult compares two policies' latencies on the tasks where both
// have a correct attempt (issue 27: a latency gain is judged there, not on
// tasks one of them fails). Each task gives one pair: the median latency
// of each policy's correct attempts (per_task.csv's median_us).
type pairedResult struct {
	// Both counts the tasks where both policies have a correct attempt;
	// AFaster, BFaster and Ties split them.
	Both, AFaster, BFaster, Ties int
	// SignP is the two-sided exact sign test's p-value over the tasks that
	// are not ties (NaN without any).
	SignP float64
	// Ratio is the geometric mean of B's latency over A's (above 1: A is
	// faster), Low and High its 95% interval from Student's t on the log
	// ratios (NaN with fewer than minIntervalPairs tasks).
	Ratio, Low, High float64
}

// minIntervalPairs is the fewest pairs an interval is given for: with
// fewer, Student's t quantile (12.7 at one degree of freedom, 4.3 at two)
// makes the interval span orders of magnitude and say nothing.
const minIntervalPairs = 5

// pairTasks returns the paired comparison of policy a against policy b
// under decoding mode on task kind.
func pairTasks(rows []TaskRow, a, b, mode, task string) pairedResult {
	med := func(policy string) map[int]float64 {
		out := map[int]float64{}
		for _, r := range rows {
			if r.Policy == policy && r.Decoding == mode && r.Task == task && r.Correct > 0 && r.MedianUS > 0 {
				out[r.Index] = r.MedianUS
			}
		}
		return out
	}
	ma, mb := med(a), med(b)
	idx := make([]int, 0, len(ma))
	for i := range ma {
		if _, ok := mb[i]; ok {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	res := pairedResult{Both: len(idx), SignP: math.NaN(), Ratio: math.NaN(), Low: math.NaN(), High: math.NaN()}
	logs := make([]float64, 0, len(idx))
	for _, i := range idx {
		la, lb := ma[i], mb[i]
		switch {
		case la < lb:
			res.AFaster++
		case lb < la:
			res.BFaster++
		default:
			res.Ties++
		}
		logs = append(logs, math.Log(lb/la))
	}
	res.SignP = signTest(res.AFaster, res.BFaster)
	if len(logs) > 0 {
		m := stat.Mean(logs, nil)
		res.Ratio = math.Exp(m)
		if n := len(logs); n >= minIntervalPairs {
			half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975) * stat.StdDev(logs, nil) / math.Sqrt(float64(n))
			res.Low, res.High = math.Exp(m-half), math.Exp(m+half)
		}
	}
	return res
}

// signTest is the two-sided exact sign test of x successes against y
// failures (p = 0.5): twice the smaller tail, at most 1; NaN when x+y is 0.
func signTest(x, y int) float64 {
	n := x + y
	if n == 0 {
		return math.NaN()
	}
	k := min(x, y)
	p := 2 * distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(k))
	return math.Min(1, p)
}

// pairedTable is the rl-against-sft latency comparison of each bench, in
// each decoding mode both were benched under, on the tasks both solve.
func pairedTable(benches []*benchData) reports.Table {
	t := reports.Table{
		Caption: "RL against SFT on the tasks where both have a correct attempt",
		Header: []string{"bench", "decoding", "task", "tasks", "both correct", "rl faster", "sft faster", "ties",
			"sign test p", "sft / rl latency (geomean)", "95% interval", "latency source"},
	}
	for _, b := range benches {
		modes := b.summary.Decoding
		if len(modes) == 0 {
			modes = []string{""} // a bench from before the decoding modes
		}
		for _, mode := range modes {
			if b.policyIn(RLPolicy, mode) == nil || b.policyIn(SFTPolicy, mode) == nil {
				continue
			}
			for _, task := range taskKinds {
				g := group(b.policyIn(RLPolicy, mode), task)
				if g == nil {
					continue
				}
				r := pairTasks(b.perTask, RLPolicy, SFTPolicy, mode, task)
				row := []string{b.name, modeLabel(mode), task, strconv.Itoa(g.Tasks), strconv.Itoa(r.Both),
					strconv.Itoa(r.AFaster), strconv.Itoa(r.BFaster), strconv.Itoa(r.Ties), pValue(r.SignP), nanNum(r.Ratio, 3)}
				if math.IsNaN(r.Low) {
					row = append(row, "–")
				} else {
					row = append(row, fmt.Sprintf("%s – %s", num(r.Low, 3), num(r.High, 3)))
				}
				t.Rows = append(t.Rows, append(row, sourceLabel(b.summary.Source, b.summary.Measured)))
			}
		}
	}
	t.Notes = []string{
		"A task counts when both policies have at least one correct attempt on it; each gives one pair, the median latency of each policy's correct attempts. rl faster / sft faster / ties compare the two medians.",
		"sign test p: the two-sided exact sign test of rl faster against sft faster (ties left out): the chance of a split at least this uneven if neither policy were faster. sft / rl latency: the geometric mean over the tasks of sft's median latency over rl's (above 1: rl's kernels are faster), with a 95% interval from Student's t on the log ratios (given from 5 tasks on).",
		"Latencies labelled (simulated) come from the analytic GPU model, not from a GPU.",
	}
	return t
}

// nanNum is num, or – for NaN.
func nanNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "–"
	}
	return num(x, prec)
}

// pValue writes a p-value with two significant digits (0.12, 6e-05), or –
// for NaN.
func pValue(p float64) string {
	if math.IsNaN(p) {
		return "–"
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}
