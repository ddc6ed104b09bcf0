package sft

import (
	"testing"

	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
)

func TestSummarize(t *testing.T) {
	phases := []verdict.Phase{judge.PhaseDecode, verdict.PhaseParse, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency}
	res := func(ok bool, p verdict.Phase) *judge.Result {
		return &judge.Result{Verdict: &verdict.Verdict{OK: ok, Phase: p, Inst: -1}}
	}
	samples := []SampleRecord{
		{Task: "construction", Stopped: false, Judgement: res(false, judge.PhaseDecode)},
		{Task: "construction", Stopped: true, Judgement: res(false, verdict.PhaseReplay)},
		{Task: "construction", Stopped: true, Judgement: res(false, verdict.PhaseNumeric)},
		{Task: "construction", Skipped: "long"},
		{Task: "refinement", Stopped: true, Judgement: res(false, verdict.PhaseVerify)},
	}
	h := summarize(samples, phases)
	c := h.Construction
	if c.Tasks != 4 || c.Sampled != 3 || c.SkippedLongPrompt != 1 || c.Stopped.N != 2 {
		t.Errorf("construction counts %+v; want 4 tasks, 3 sampled, 1 skipped, 2 stopped", c)
	}
	want := map[string]float64{"decode": 2.0 / 3, "parse": 2.0 / 3, "replay": 1.0 / 3, "static": 1.0 / 3, "numeric": 0}
	for k, v := range want {
		if got := c.Rates[k]; got < v-1e-9 || got > v+1e-9 {
			t.Errorf("construction %s rate %v, want %v", k, got, v)
		}
	}
	if r := h.Refinement.Rates; r["replay"] != 1 || r["static"] != 0 {
		t.Errorf("refinement rates %v; want replay 1 and static 0", r)
	}
	if h.All.Tasks != 5 || h.All.Judged.Judged != 4 {
		t.Errorf("all: %d tasks, %d judged; want 5 and 4", h.All.Tasks, h.All.Judged.Judged)
	}
	// Without the numeric phase there is no numeric rate.
	if _, ok := summarize(samples, phases[:5]).All.Rates["numeric"]; ok {
		t.Errorf("a numeric rate without the numeric phase")
	}
}
