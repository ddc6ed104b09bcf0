package rl

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
)

func lat(s float64) *float64 { return &s }

// Hand-made judgements: a sample that failed at a phase, or passed with a
// latency on the H100 model.
func failAt(p verdict.Phase) Outcome { return Outcome{Phase: p} }
func passed(s float64) Outcome {
	return Outcome{Phase: verdict.PhaseLatency, OK: true, LatencyS: lat(s), LatencySource: "model:h100"}
}
func passedNoLatency(p verdict.Phase) Outcome { return Outcome{Phase: p, OK: true} }

const h100 = "model:h100"

// normalize gives a reward changed by a test case the incorrect map of its
// gate (-1 each) and the floor its bonus takes (-1, or none).
func normalize(r *RewardSpec) {
	r.Incorrect = uniform(FailPhases(r.Gate), -1)
	if !hasFloor(r.Bonus) {
		r.MinBonus = nil
	} else if r.MinBonus == nil {
		r.MinBonus = floatPtr(-1)
	}
}

func TestScoreTable(t *testing.T) {
	base := &Baseline{Kind: BaselinePrompt, LatencyS: 2e-6, Source: h100}
	reward := func(mod func(*RewardSpec)) RewardSpec {
		r := DefaultReward()
		mod(&r)
		normalize(&r)
		return r
	}
	perPhase := DefaultReward()
	perPhase.Incorrect = map[string]float64{"decode": -3, "parse": -2.5, "replay": -2, "postproc": -1.5, "verify": -1, "numeric": -0.5}
	ln2 := math.Log(2)
	cases := []struct {
		name  string
		r     RewardSpec
		group []Outcome
		base  *Baseline
		want  []float64 // totals
		gate  []bool
		bonus []float64
	}{
		{"numeric gate, log speedup", DefaultReward(),
			[]Outcome{passed(1e-6), passed(4e-6), failAt(verdict.PhaseNumeric), failAt(judge.PhaseDecode)}, base,
			[]float64{1 + ln2, 1 - ln2, -1, -1}, []bool{true, true, false, false}, []float64{ln2, -ln2, 0, 0}},
		{"per-phase incorrect", perPhase,
			[]Outcome{failAt(judge.PhaseDecode), failAt(verdict.PhaseParse), failAt(verdict.PhaseReplay), failAt(verdict.PhasePostproc), failAt(verdict.PhaseVerify), failAt(verdict.PhaseNumeric)}, base,
			[]float64{-3, -2.5, -2, -1.5, -1, -0.5}, []bool{false, false, false, false, false, false}, []float64{0, 0, 0, 0, 0, 0}},
		{"numeric gate passed, latency failed: no bonus", DefaultReward(),
			[]Outcome{{Phase: verdict.PhaseLatency}}, base,
			[]float64{1}, []bool{true}, []float64{0}},
		{"gate only", reward(func(r *RewardSpec) { r.Bonus = BonusNone }),
			[]Outcome{passed(1e-6), failAt(verdict.PhaseNumeric)}, base,
			[]float64{1, -1}, []bool{true, false}, []float64{0, 0}},
		{"bonus scale", reward(func(r *RewardSpec) { r.BonusScale = 0.5; r.Correct = 0.3 }),
			[]Outcome{passed(1e-6)}, base,
			[]float64{0.3 + 0.5*ln2}, []bool{true}, []float64{0.5 * ln2}},
		{"linear capped", reward(func(r *RewardSpec) { r.Bonus = BonusLinearCapped; r.Cap = 3 }),
			[]Outcome{passed(1e-6), passed(1e-7), passed(4e-6)}, base,
			[]float64{2, 4, 0.5}, []bool{true, true, true}, []float64{1, 3, -0.5}},
		{"log speedup floored: a slow correct sample stays above a wrong one", DefaultReward(),
			[]Outcome{passed(200e-6), failAt(verdict.PhaseNumeric)}, base,
			[]float64{0, -1}, []bool{true, false}, []float64{-1, 0}},
		{"linear capped with its own floor", reward(func(r *RewardSpec) { r.Bonus = BonusLinearCapped; r.Cap = 2; r.MinBonus = floatPtr(-0.25) }),
			[]Outcome{passed(4e-6), passed(1e-7)}, base,
			[]float64{0.75, 3}, []bool{true, true}, []float64{-0.25, 2}},
		{"log speedup with a ceiling: a very fast sample does not dwarf its group", reward(func(r *RewardSpec) { r.MaxBonus = floatPtr(2) }),
			[]Outcome{passed(2e-8), passed(1e-6), passed(200e-6)}, base,
			[]float64{3, 1 + ln2, 0}, []bool{true, true, true}, []float64{2, ln2, -1}},
		{"construction against the unscheduled kernel: slower than the dataset's best still earns", reward(func(r *RewardSpec) { r.ConstructionBaseline = BaselineUnscheduled; r.MaxBonus = floatPtr(3) }),
			// The unscheduled kernel takes 16 us, the dataset's best 1 us: a
			// sample at 4 us is 4x faster than the first (against the
			// second it would be floored: 1 - 1 = 0, as a sample at 16 us).
			[]Outcome{passed(4e-6), passed(16e-6), passed(1e-7)}, &Baseline{Kind: BaselineUnscheduled, LatencyS: 16e-6, Source: h100},
			[]float64{1 + 2*ln2, 1, 4}, []bool{true, true, true}, []float64{2 * ln2, 0, 3}},
		{"rank in group with a tie", reward(func(r *RewardSpec) { r.Bonus = BonusRank }),
			[]Outcome{passed(1e-6), passed(3e-6), passed(3e-6), failAt(verdict.PhaseNumeric)}, nil,
			[]float64{2, 1.25, 1.25, -1}, []bool{true, true, true, false}, []float64{1, 0.25, 0.25, 0}},
		{"rank alone", reward(func(r *RewardSpec) { r.Bonus = BonusRank }),
			[]Outcome{passed(1e-6), failAt(verdict.PhaseVerify)}, base,
			[]float64{1, -1}, []bool{true, false}, []float64{0, 0}},
		{"parse gate: a replay failure passes it", reward(func(r *RewardSpec) { r.Gate = GateParse }),
			[]Outcome{failAt(verdict.PhaseReplay), failAt(verdict.PhaseParse), passed(1e-6)}, base,
			[]float64{1, -1, 1 + ln2}, []bool{true, false, true}, []float64{0, 0, ln2}},
		{"replay gate without bonus: replay OK", reward(func(r *RewardSpec) { r.Gate = GateReplay; r.Bonus = BonusNone }),
			[]Outcome{passedNoLatency(verdict.PhaseReplay), failAt(verdict.PhaseReplay)}, nil,
			[]float64{1, -1}, []bool{true, false}, []float64{0, 0}},
		{"static gate: a numeric failure is not judged, verify is", reward(func(r *RewardSpec) { r.Gate = GateStatic }),
			[]Outcome{passed(2e-6), failAt(verdict.PhaseVerify), failAt(verdict.PhasePostproc)}, base,
			[]float64{1, -1, -1}, []bool{true, false, false}, []float64{0, 0, 0}},
		{"no gate: bonus for every sample with a latency", reward(func(r *RewardSpec) { r.Gate = GateNone; r.Correct = 0 }),
			[]Outcome{passed(1e-6), failAt(verdict.PhaseLatency), failAt(verdict.PhaseVerify)}, base,
			[]float64{ln2, -1, -1}, []bool{true, false, false}, []float64{ln2, 0, 0}},
		{"no baseline: no bonus", DefaultReward(),
			[]Outcome{passed(1e-6)}, nil,
			[]float64{1}, []bool{true}, []float64{0}},
		{"baseline from another source: no bonus", DefaultReward(),
			[]Outcome{passed(1e-6)}, &Baseline{Kind: BaselinePrompt, LatencyS: 2e-6, Source: "measured"},
			[]float64{1}, []bool{true}, []float64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.r.Validate(); err != nil {
				t.Fatalf("the case's reward is invalid: %v", err)
			}
			got := c.r.Score(c.group, c.base)
			for i, s := range got {
				if math.Abs(s.Total-c.want[i]) > 1e-12 || s.Gate != c.gate[i] || math.Abs(s.Bonus-c.bonus[i]) > 1e-12 {
					t.Errorf("sample %d: total %v gate %v bonus %v; want %v %v %v (%+v)", i, s.Total, s.Gate, s.Bonus, c.want[i], c.gate[i], c.bonus[i], s)
				}
				if !s.Gate && (s.Bonus != 0 || s.LogSpeedup != nil) {
					t.Errorf("sample %d failed the gate but has a bonus %v / log speedup", i, s.Bonus)
				}
				if s.Gate && s.Bonus == 0 && c.r.Bonus != BonusNone && s.NoBonus == "" && s.LogSpeedup == nil {
					t.Errorf("sample %d: no bonus and no reason", i)
				}
				comp := s.Components()
				if comp["gate_term"]+comp["bonus"] != s.Total {
					t.Errorf("sample %d: components %v do not add up to %v", i, comp, s.Total)
				}
			}
		})
	}
}

func TestScoreLogSpeedupLogged(t *testing.T) {
	r := DefaultReward()
	r.Bonus = BonusRank
	base := &Baseline{Kind: BaselineUnscheduled, LatencyS: 8e-6, Source: h100}
	got := r.Score([]Outcome{passed(1e-6), passed(2e-6)}, base)
	if got[0].LogSpeedup == nil || math.Abs(*got[0].LogSpeedup-math.Log(8)) > 1e-12 {
		t.Fatalf("rank_in_group does not log the log speedup against the baseline: %+v", got[0])
	}
	b, err := json.Marshal(got[0])
	if err != nil || !strings.Contains(string(b), `"log_speedup"`) || !strings.Contains(string(b), `"kind":"unscheduled"`) {
		t.Fatalf("sample JSON %s (%v)", b, err)
	}
}

func parseReward(t *testing.T, src string) (RewardSpec, hcl.Diagnostics) {
	t.Helper()
	f, d := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
	if d.HasErrors() {
		t.Fatal(d)
	}
	content, d := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "reward"}}})
	if d.HasErrors() {
		t.Fatal(d)
	}
	return decodeReward(content.Blocks[0], &hcl.EvalContext{})
}

func TestDecodeReward(t *testing.T) {
	r, d := parseReward(t, `reward {
  gate = "static"
  incorrect = { decode = -2, parse = -2, replay = -1.5, postproc = -1, verify = -1 }
  bonus = "linear_capped"
  bonus_scale = 0.5
  min_bonus = -0.5
  max_bonus = 2.5
  baseline = "unscheduled"
  construction_baseline = "dataset_best"
  target = "h200-model"
}`)
	if d.HasErrors() {
		t.Fatal(d)
	}
	if r.Gate != GateStatic || r.Bonus != BonusLinearCapped || r.Cap != defaultCap || r.BonusScale != 0.5 || r.Baseline != BaselineUnscheduled ||
		r.Target != "h200-model" || r.Incorrect["replay"] != -1.5 || len(r.Incorrect) != 5 || r.MinBonus == nil || *r.MinBonus != -0.5 ||
		r.MaxBonus == nil || *r.MaxBonus != 2.5 || r.ConstructionBaseline != BaselineDatasetBest {
		t.Fatalf("decoded %+v", r)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	// One value and the map of the same values are the same parameter.
	a, d1 := parseReward(t, `reward { incorrect = -1 }`)
	b, d2 := parseReward(t, `reward { incorrect = { decode = -1, parse = -1, replay = -1, postproc = -1, verify = -1, numeric = -1 } }`)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if d1.HasErrors() || d2.HasErrors() || string(ja) != string(jb) {
		t.Fatalf("%s vs %s (%v %v)", ja, jb, d1, d2)
	}
}

func TestDecodeRewardDiagnostics(t *testing.T) {
	cases := []struct {
		src, summary, detail string
		line                 int
	}{
		{"reward {\n gate = \"compile\"\n}", "Invalid gate", "want one of parse, replay, static, numeric, none", 2},
		{"reward {\n bonus = \"speedup\"\n}", "Invalid bonus", "rank_in_group", 2},
		{"reward {\n baseline = \"best\"\n}", "Invalid baseline", "dataset_best", 2},
		{"reward {\n target = \"b200-model\"\n}", "Invalid target", "cuda", 2},
		{"reward {\n bonus = \"linear_capped\"\n cap = 0\n}", "Invalid cap", "positive", 3},
		{"reward {\n cap = 2\n}", "Unused cap", "linear_capped", 2},
		{"reward {\n bonus = \"rank_in_group\"\n max_bonus = 2\n}", "Unused max_bonus", "log_speedup", 3},
		{"reward {\n min_bonus = -1\n max_bonus = -2\n}", "Invalid max_bonus", "below min_bonus -1", 3},
		{"reward {\n construction_baseline = \"prompt\"\n}", "Invalid construction_baseline", "unscheduled, dataset_best", 2},
		{"reward {\n bonus = \"rank_in_group\"\n min_bonus = -2\n}", "Unused min_bonus", "log_speedup", 3},
		{"reward {\n min_bonus = \"low\"\n}", "Unsuitable value type", "a number is required", 2},
		{"reward {\n incorrect = { decode = -1 }\n}", "Invalid incorrect", "no value for phase parse, replay, postproc, verify, numeric", 2},
		{"reward {\n gate = \"parse\"\n incorrect = { decode = -1, parse = -1, numeric = -1 }\n}", "Invalid incorrect", "names numeric", 3},
		{"reward {\n incorrect = \"bad\"\n}", "Invalid incorrect", "want a number or an object", 2},
		{"reward {\n incorrect = { decode = \"x\" }\n}", "Invalid incorrect", "decode is not a number", 2},
		{"reward {\n gate = \"numeric\"\n speed = 1\n}", "Unsupported argument", "speed", 3},
	}
	for _, c := range cases {
		_, d := parseReward(t, c.src)
		if !d.HasErrors() {
			t.Errorf("%q: no error", c.src)
			continue
		}
		e := d.Errs()[0].(*hcl.Diagnostic)
		if e.Summary != c.summary || !strings.Contains(e.Detail, c.detail) || e.Subject == nil || e.Subject.Start.Line != c.line {
			t.Errorf("%q: got %q %q at %v; want %q containing %q on line %d", c.src, e.Summary, e.Detail, e.Subject, c.summary, c.detail, c.line)
		}
	}
}

func TestJudgeUntil(t *testing.T) {
	for _, c := range []struct {
		gate, bonus string
		want        verdict.Phase
	}{
		{GateParse, BonusNone, verdict.PhaseReplay},
		{GateReplay, BonusNone, verdict.PhaseReplay},
		{GateParse, BonusLogSpeedup, verdict.PhaseVerify},
		{GateStatic, BonusNone, verdict.PhaseVerify},
		{GateNumeric, BonusNone, verdict.PhaseNumeric},
		{GateNone, BonusNone, verdict.PhaseVerify},
	} {
		r := RewardSpec{Gate: c.gate, Bonus: c.bonus}
		if got := r.JudgeUntil(); got != c.want {
			t.Errorf("gate %s bonus %s: until %s; want %s", c.gate, c.bonus, got, c.want)
		}
	}
}
