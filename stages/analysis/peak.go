package analysis

import (
	"slices"
	"strconv"
	"strings"

	"dragonx/reports"
	"dragonx/stages/bench"
)

// peakRow is one policy's (or baseline's) peak fractions at one task kind:
// the correct attempts that carry one.
type peakRow struct {
	name, mode, task string
	fractions        []float64
	sources          map[string]bool
}

// peakRows groups b's attempts by policy, decoding mode and task kind, in
// the summary's policy order.
func peakRows(b *benchData) []*peakRow {
	var rows []*peakRow
	index := map[[3]string]*peakRow{}
	for _, p := range b.summary.Policies {
		for _, task := range taskKinds {
			r := &peakRow{name: p.Name, mode: p.Decoding, task: task, sources: map[string]bool{}}
			index[[3]string{p.Name, p.Decoding, task}] = r
			rows = append(rows, r)
		}
	}
	for i := range b.attempts {
		a := &b.attempts[i]
		r := index[[3]string{a.Policy, a.Decoding, a.Task}]
		if r == nil || !a.OK || a.PeakFraction == nil {
			continue
		}
		r.fractions = append(r.fractions, *a.PeakFraction)
		r.sources[a.Source] = true
	}
	return rows
}

// peakTable is the median and best peak fraction of every policy and
// baseline, per task kind, over its correct attempts.
func peakTable(benches []*benchData) reports.Table {
	t := reports.Table{
		Caption: "Peak fraction: how near the device's roofline the correct kernels are, per policy and baseline",
		Header:  []string{"bench", "policy", "decoding", "task", "correct attempts with a peak fraction", "median peak fraction", "best peak fraction", "latency source"},
	}
	for _, b := range benches {
		for _, r := range peakRows(b) {
			med, best := "–", "–"
			if len(r.fractions) > 0 {
				med, best = pct(bench.Median(r.fractions)), pct(slices.Max(r.fractions))
			}
			var labels []string
			for _, s := range sortedSet(r.sources) {
				labels = append(labels, sourceLabel(s, strings.HasPrefix(s, "measured")))
			}
			src := strings.Join(labels, ", ")
			if src == "" {
				src = "–"
			}
			t.Rows = append(t.Rows, []string{b.name, r.name, modeLabel(r.mode), r.task, strconv.Itoa(len(r.fractions)), med, best, src})
		}
	}
	t.Notes = []string{
		"Peak fraction of a correct attempt: the workload's roofline time on the latency source's device over the attempt's latency. The roofline time is the larger of the unscheduled workload's FLOPs at the device's FP32 peak and its parameter bytes (inputs read once, outputs written once) at its peak DRAM bandwidth (kernels/roofline; the figures of kernels/gpumodel's device table). KernelBench-Hard reports the same ratio; 100% is the hardware's limit.",
		"A fraction over a model's latency (labelled simulated) says how far the GPU model puts the kernel from the roofline, not how far a GPU would: it is a model's figure. Attempts measured on the machine's GPU carry none (the device table may not hold that GPU); benches older than bench version 5 carry none either (–).",
	}
	return t
}
