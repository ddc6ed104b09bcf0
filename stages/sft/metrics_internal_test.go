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

func TestSpeedAgainstBaselines(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	passed := func(lat float64, src string) *judge.Result {
		return &judge.Result{Verdict: &verdict.Verdict{OK: true, Phase: verdict.PhaseLatency, Inst: -1, LatencyS: f(lat), LatencySource: src}}
	}
	tasks := []HeldoutRecord{
		{Task: "refinement", Source: &SourceScript{LatencyS: 4e-6, LatencySource: "model:h100"}},
		{Task: "refinement", Source: &SourceScript{LatencyS: 1e-6, LatencySource: "model:h100"}},
		{Task: "refinement", Source: &SourceScript{LatencyS: 1e-6, LatencySource: "cuda:H100"}}, // another source: not compared
		{Task: "refinement"}, // no source: no baseline
		{Task: "construction", ReferenceLatencyS: f(3e-6), LatencySource: "model:h100"},
	}
	judged := []*judge.Result{passed(2e-6, "model:h100"), passed(2e-6, "model:h100"), passed(2e-6, "model:h100"), passed(1e-6, "model:h100"), {Verdict: &verdict.Verdict{Phase: verdict.PhaseReplay, Inst: -1}}}
	var samples []SampleRecord
	for i, h := range tasks {
		s := SampleRecord{Task: h.Task, Stopped: true, Judgement: judged[i]}
		s.compare(h)
		samples = append(samples, s)
	}
	if b := samples[0].Baseline; b == nil || b.Speedup == nil || *b.Speedup != 2 {
		t.Fatalf("baseline of a sample twice as fast as its source: %+v", b)
	}
	if b := samples[2].Baseline; b == nil || b.Speedup != nil {
		t.Errorf("a baseline from another latency source was compared: %+v", b)
	}
	if samples[3].Baseline != nil {
		t.Errorf("a task without a source got a baseline")
	}
	if b := samples[4].Baseline; b == nil || b.Speedup != nil {
		t.Errorf("a failed sample got a speedup: %+v", b)
	}
	sp := summarize(samples, []verdict.Phase{judge.PhaseDecode, verdict.PhaseLatency}).Refinement.Speed
	if sp.Baselines != 3 || sp.Compared != 2 || sp.Faster.N != 1 || sp.Faster.Rate != 0.5 || sp.GeomeanSpeedup == nil || *sp.GeomeanSpeedup < 0.99 || *sp.GeomeanSpeedup > 1.01 {
		t.Errorf("refinement speed %+v (geomean %v); want 3 baselines, 2 compared, 1 faster, geomean sqrt(2*0.5) = 1", sp, sp.GeomeanSpeedup)
	}
	if c := summarize(samples, nil).Construction.Speed; c.Baselines != 1 || c.Compared != 0 || c.GeomeanSpeedup != nil {
		t.Errorf("construction speed %+v; want 1 baseline, none compared", c)
	}
}
