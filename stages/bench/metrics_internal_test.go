package bench

import (
	"math"
	"strings"
	"testing"

	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
)

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{5, 0, 1, 0},             // c = 0: never
		{5, 0, 5, 0},             // c = 0, k = n
		{5, 5, 1, 1},             // c = n: always
		{5, 5, 5, 1},             // c = n, k = n
		{5, 2, 1, 0.4},           // pass@1 = c/n
		{5, 2, 5, 1},             // k = n and c > 0: some correct attempt is drawn
		{5, 1, 5, 1},             // k = n, c = 1
		{5, 2, 2, 0.7},           // 1 - C(3,2)/C(5,2) = 1 - 3/10
		{4, 1, 2, 0.5},           // 1 - C(3,2)/C(4,2) = 1 - 3/6
		{10, 3, 4, 1 - 35.0/210}, // 1 - C(7,4)/C(10,4)
		{1, 1, 1, 1},
		{1, 0, 1, 0},
		{3, 1, 3, 1}, // n-c < k: 1
	} {
		got := PassAtK(c.n, c.c, c.k)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(n=%d, c=%d, k=%d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
	for _, bad := range [][3]int{{5, 2, 0}, {5, 2, 6}, {5, 6, 1}, {5, -1, 1}} {
		if got := PassAtK(bad[0], bad[1], bad[2]); !math.IsNaN(got) {
			t.Errorf("PassAtK%v = %v, want NaN", bad, got)
		}
	}
	if ks := passKs(5); len(ks) != 4 || ks[0] != 1 || ks[1] != 2 || ks[2] != 4 || ks[3] != 5 {
		t.Errorf("passKs(5) = %v, want [1 2 4 5]", ks)
	}
	if ks := passKs(1); len(ks) != 1 || ks[0] != 1 {
		t.Errorf("passKs(1) = %v, want [1]", ks)
	}
}

func TestMedianGeomeanFaster(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	if got := Median(nil); !math.IsInf(got, 1) {
		t.Errorf("median of none = %v, want +Inf", got)
	}
	if got := Geomean([]float64{1, 4}); math.Abs(got-2) > 1e-12 {
		t.Errorf("geomean(1,4) = %v", got)
	}
	if got := Geomean([]float64{2, 8, 0.5}); math.Abs(got-2) > 1e-12 { // cube root of 8
		t.Errorf("geomean(2,8,0.5) = %v", got)
	}
	if !math.IsNaN(Geomean(nil)) {
		t.Error("geomean of none is not NaN")
	}
	inf := math.Inf(1)
	for _, c := range []struct {
		a, b float64
		want int
	}{{1, 2, 1}, {2, 1, -1}, {2, 2, 0}, {inf, inf, 0}, {3, inf, 1}, {inf, 3, -1}} {
		if got := Faster(c.a, c.b); got != c.want {
			t.Errorf("Faster(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func f(x float64) *float64 { return &x }

// att makes an attempt: ok with a latency (µs) against a baseline, or a
// failure at phase.
func att(policy, kind string, index, attempt int, greedy bool, lat float64, phase verdict.Phase) *Attempt {
	a := &Attempt{Policy: policy, Task: kind, Index: index, Hash: "h", Family: "GMM", Attempt: attempt, Greedy: greedy, Source: "model:h100", BaselineUS: f(10)}
	if lat > 0 {
		a.OK, a.Phase, a.LatencyUS = true, string(verdict.PhaseLatency), f(lat)
	} else {
		a.Phase, a.Error = string(phase), "failed"
	}
	a.setSpeedup()
	return a
}

var testPhases = []verdict.Phase{judge.PhaseDecode, verdict.PhaseParse, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency}

func TestGroupFigures(t *testing.T) {
	c := KindConstruction
	// Two tasks of three attempts (the greedy one first). Baseline 10 µs.
	// Task 0: 5 µs (speedup 2), 20 µs (0.5), verify failure.
	// Task 1: decode failure, 8 µs (1.25), numeric failure.
	atts := []*Attempt{
		att("sft", c, 0, 0, true, 5, ""), att("sft", c, 0, 1, false, 20, ""), att("sft", c, 0, 2, false, 0, verdict.PhaseVerify),
		att("sft", c, 1, 0, true, 0, judge.PhaseDecode), att("sft", c, 1, 1, false, 8, ""), att("sft", c, 1, 2, false, 0, verdict.PhaseNumeric),
	}
	g := group(byTask(atts), testPhases)
	if g.Tasks != 2 || g.Attempts != 6 || g.Correct != 3 || g.CorrectRate != 0.5 {
		t.Fatalf("counts: %+v", g)
	}
	if g.GreedyCorrectRate == nil || *g.GreedyCorrectRate != 0.5 {
		t.Errorf("greedy correct rate %v, want 0.5", g.GreedyCorrectRate)
	}
	// pass@1 = mean(2/3, 1/3) = 0.5; pass@2 = mean(1 - C(1,2)/C(3,2), 1 - C(2,2)/C(3,2)) = mean(1, 2/3).
	if math.Abs(g.PassAt1-0.5) > 1e-12 || math.Abs(g.PassAtK["2"]-5.0/6) > 1e-12 || g.PassAtK["3"] != 1 || len(g.PassAtK) != 3 {
		t.Errorf("pass@k %v pass@1 %v", g.PassAtK, g.PassAt1)
	}
	// Speedups of the correct attempts: 2, 0.5, 1.25. fast_0 3/6, fast_1
	// 2/6, fast_1.5 1/6, fast_2 0 (2 is not above 2).
	want := map[string]float64{"0": 0.5, "1": 2.0 / 6, "1.5": 1.0 / 6, "2": 0}
	for k, v := range want {
		if math.Abs(g.FastP[k]-v) > 1e-12 {
			t.Errorf("fast_%s = %v, want %v", k, g.FastP[k], v)
		}
	}
	if g.GeomeanSpeedup == nil || math.Abs(*g.GeomeanSpeedup-math.Cbrt(1.25)) > 1e-12 {
		t.Errorf("geomean %v, want %v", g.GeomeanSpeedup, math.Cbrt(1.25))
	}
	// Phases passed: decode by all but the decode failure (5); parse,
	// replay, postproc by those 5; verify by 4 (not the verify failure);
	// numeric and latency by the 3 correct ones.
	wantPhases := map[string]int{"decode": 5, "parse": 5, "replay": 5, "postproc": 5, "verify": 4, "numeric": 3, "latency": 3}
	for k, v := range wantPhases {
		if g.Phases[k] != v {
			t.Errorf("phase %s passed by %d, want %d", k, g.Phases[k], v)
		}
	}
	// No correct attempt: geomean null, and no greedy attempt: null.
	none := group(byTask([]*Attempt{att("x", c, 0, 0, false, 0, verdict.PhaseParse)}), testPhases)
	if none.GeomeanSpeedup != nil || none.GreedyCorrectRate != nil || none.PassAt1 != 0 || none.Phases["decode"] != 1 || none.Phases["parse"] != 0 {
		t.Errorf("a failed task: %+v", none)
	}
}

func TestComparisons(t *testing.T) {
	c, r := KindConstruction, KindRefinement
	// rl against sft: task 0 rl median 4 < sft 6 (rl faster); task 1 sft
	// has no correct attempt (rl faster); task 2 neither (tie); task 3
	// equal medians (tie); task 4 sft faster. Refinement task 0: sft
	// faster (rl has none).
	sft := []*Attempt{
		att("sft", c, 0, 0, true, 6, ""), att("sft", c, 0, 1, false, 6, ""),
		att("sft", c, 1, 0, true, 0, verdict.PhaseParse), att("sft", c, 1, 1, false, 0, verdict.PhaseParse),
		att("sft", c, 2, 0, true, 0, verdict.PhaseParse), att("sft", c, 2, 1, false, 0, verdict.PhaseParse),
		att("sft", c, 3, 0, true, 2, ""), att("sft", c, 3, 1, false, 4, ""),
		att("sft", c, 4, 0, true, 1, ""), att("sft", c, 4, 1, false, 0, verdict.PhaseParse),
		att("sft", r, 0, 0, true, 3, ""), att("sft", r, 0, 1, false, 0, verdict.PhaseParse),
	}
	rl := []*Attempt{
		att("rl", c, 0, 0, true, 3, ""), att("rl", c, 0, 1, false, 5, ""), // median 4
		att("rl", c, 1, 0, true, 9, ""), att("rl", c, 1, 1, false, 0, verdict.PhaseParse),
		att("rl", c, 2, 0, true, 0, verdict.PhaseParse), att("rl", c, 2, 1, false, 0, verdict.PhaseParse),
		att("rl", c, 3, 0, true, 3, ""), att("rl", c, 3, 1, false, 3, ""), // median 3 = sft's (2+4)/2
		att("rl", c, 4, 0, true, 7, ""), att("rl", c, 4, 1, false, 0, verdict.PhaseParse),
		att("rl", r, 0, 0, true, 0, verdict.PhaseParse), att("rl", r, 0, 1, false, 0, verdict.PhaseParse),
	}
	base := []*Attempt{att("baseline:unscheduled", c, 0, 0, false, 10, "")}
	sp := Spec{Params: Params{Attempts: 1, Temperature: 0.8, Greedy: true}}
	s := summarize(sp, "model:h100", []entry{{name: "sft", attempts: sft}, {name: "rl", attempts: rl}, {name: "baseline:unscheduled", baseline: true, attempts: base}}, testPhases)
	if s.Measured || s.Source != "model:h100" || s.FasterDefinition == "" || len(s.Policies) != 3 || s.Policies[2].Kind != "baseline" {
		t.Fatalf("summary: %+v", s)
	}
	var got []string
	for _, cmp := range s.Comparisons {
		got = append(got, strings.Join([]string{cmp.A, cmp.B, cmp.Task, itoa(cmp.Tasks), itoa(cmp.AFaster), itoa(cmp.BFaster), itoa(cmp.Ties)}, " "))
	}
	want := []string{
		"sft baseline:unscheduled construction 1 1 0 0", // 6 < 10
		"sft baseline:unscheduled refinement 0 0 0 0",
		"rl sft construction 5 2 1 2",
		"rl sft refinement 1 0 1 0",
		"rl baseline:unscheduled construction 1 1 0 0", // 4 < 10
		"rl baseline:unscheduled refinement 0 0 0 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("comparisons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func itoa(n int) string { return fmtFloat(float64(n)) }

func TestOutputsSortedAndPerTask(t *testing.T) {
	c := KindConstruction
	atts := []*Attempt{
		att("sft", c, 1, 1, false, 0, verdict.PhaseParse), att("sft", c, 1, 0, true, 4, ""),
		att("baseline:search", c, 1, 0, false, 2, ""),
		att("sft", c, 0, 0, true, 3, ""), att("sft", c, 0, 1, false, 5, ""),
	}
	b, err := encodeAttempts(atts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], `{"policy":"baseline:search","task":"construction","index":1,`) ||
		!strings.Contains(lines[1], `"index":0,"hash":"h","family":"GMM","attempt":0,"greedy":true,"phase":"latency","ok":true,"error":"","latency_us":3,"source":"model:h100","baseline_us":10,"speedup":3.3333333333333335,"peak_fraction":null,"tokens":0}`) ||
		!strings.Contains(lines[4], `"attempt":1,"greedy":false,"phase":"parse","ok":false,"error":"failed","latency_us":null,"source":"model:h100","baseline_us":10,"speedup":null`) {
		t.Errorf("attempts.jsonl:\n%s", b)
	}
	csv, err := encodePerTask(atts)
	if err != nil {
		t.Fatal(err)
	}
	want := "policy,decoding,task,index,hash,family,attempts,correct,median_us,best_us,baseline_us\n" +
		"baseline:search,,construction,1,h,GMM,1,1,2,2,10\n" +
		"sft,,construction,0,h,GMM,2,2,4,3,10\n" +
		"sft,,construction,1,h,GMM,2,1,4,4,10\n"
	if string(csv) != want {
		t.Errorf("per_task.csv:\n%s\nwant:\n%s", csv, want)
	}
}

// TestDecoding: summary.json lists the modes the policies sampled under,
// one word per combination of constrained and gpu_limits, or decoding's.
func TestDecoding(t *testing.T) {
	for _, c := range []struct {
		constrained, limits bool
		decoding            []string
		want                string
	}{
		{false, false, nil, "unconstrained"}, {true, false, nil, "grammar"}, {true, true, nil, "grammar+gpu_limits"},
		{false, false, AllDecodings, "unconstrained grammar grammar+gpu_limits"},
	} {
		sp := DefaultParams()
		sp.Constrained, sp.GPULimits, sp.Decoding = c.constrained, c.limits, c.decoding
		if got := strings.Join(sp.Modes(), " "); got != c.want {
			t.Errorf("Modes of constrained=%v gpu_limits=%v decoding=%v: %q, want %q", c.constrained, c.limits, c.decoding, got, c.want)
		}
		if s := summarize(Spec{Params: sp}, "model:h100", nil, nil); strings.Join(s.Decoding, " ") != c.want {
			t.Errorf("summary of constrained=%v gpu_limits=%v decoding=%v says %q", c.constrained, c.limits, c.decoding, s.Decoding)
		}
	}
}

// TestSummaryModes: with several decoding modes, each policy and
// random_walk has a summary per mode, the entries in entriesOf's order;
// a policy is compared with the policies and random_walk of its own mode
// and with the baselines that decode nothing.
func TestSummaryModes(t *testing.T) {
	c := KindConstruction
	in := func(a *Attempt, mode string) *Attempt { a.Decoding = mode; return a }
	sp := Spec{Params: Params{Attempts: 1, Temperature: 0.8, Greedy: true, Decoding: []string{DecodeUnconstrained, DecodeGPULimits},
		Baselines: []string{BaselineUnscheduled, BaselineRandomWalk}}, Policies: []Policy{{Name: "sft"}, {Name: "rl"}}}
	entries := entriesOf(sp)
	var names []string
	for i := range entries {
		e := &entries[i]
		names = append(names, e.name+"/"+e.mode)
		// Latency 2 for rl, 4 for sft, 3 for the walk, 10 unscheduled.
		lat := map[string]float64{"sft": 4, "rl": 2, "baseline:random_walk": 3, "baseline:unscheduled": 10}[e.name]
		e.attempts = []*Attempt{in(att(e.name, c, 0, 0, false, lat, ""), e.mode)}
	}
	if got := strings.Join(names, " "); got != "sft/unconstrained rl/unconstrained sft/grammar+gpu_limits rl/grammar+gpu_limits baseline:unscheduled/ baseline:random_walk/grammar+gpu_limits" {
		t.Fatalf("entries: %s", got)
	}
	s := summarize(sp, "model:h100", entries, testPhases)
	var got []string
	for _, p := range s.Policies {
		got = append(got, p.Name+"/"+p.Decoding+"/"+p.Kind)
	}
	if strings.Join(got, " ") != "sft/unconstrained/policy rl/unconstrained/policy sft/grammar+gpu_limits/policy rl/grammar+gpu_limits/policy baseline:unscheduled//baseline baseline:random_walk/grammar+gpu_limits/baseline" {
		t.Errorf("summaries: %v", got)
	}
	got = nil
	for _, cmp := range s.Comparisons {
		if cmp.Task == c {
			got = append(got, strings.Join([]string{cmp.A, cmp.B, cmp.Decoding, itoa(cmp.AFaster), itoa(cmp.BFaster)}, " "))
		}
	}
	want := []string{
		"sft baseline:unscheduled unconstrained 1 0",
		"rl sft unconstrained 1 0",
		"rl baseline:unscheduled unconstrained 1 0",
		"sft baseline:unscheduled grammar+gpu_limits 1 0",
		"sft baseline:random_walk grammar+gpu_limits 0 1",
		"rl sft grammar+gpu_limits 1 0",
		"rl baseline:unscheduled grammar+gpu_limits 1 0",
		"rl baseline:random_walk grammar+gpu_limits 1 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("comparisons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// attempts.jsonl and per_task.csv order a policy's modes as
	// AllDecodings and carry the mode.
	var all []*Attempt
	for _, e := range entries {
		all = append(all, e.attempts...)
	}
	csv, err := encodePerTask(all)
	if err != nil {
		t.Fatal(err)
	}
	wantCSV := "policy,decoding,task,index,hash,family,attempts,correct,median_us,best_us,baseline_us\n" +
		"baseline:random_walk,grammar+gpu_limits,construction,0,h,GMM,1,1,3,3,10\n" +
		"baseline:unscheduled,,construction,0,h,GMM,1,1,10,10,10\n" +
		"rl,unconstrained,construction,0,h,GMM,1,1,2,2,10\n" +
		"rl,grammar+gpu_limits,construction,0,h,GMM,1,1,2,2,10\n" +
		"sft,unconstrained,construction,0,h,GMM,1,1,4,4,10\n" +
		"sft,grammar+gpu_limits,construction,0,h,GMM,1,1,4,4,10\n"
	if string(csv) != wantCSV {
		t.Errorf("per_task.csv:\n%s\nwant:\n%s", csv, wantCSV)
	}
}
