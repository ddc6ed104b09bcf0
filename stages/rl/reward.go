package rl

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/judge"
	"dragonx/kernels/verdict"
)

// The reward block's choices.
const (
	GateParse   = "parse"   // the script parses
	GateReplay  = "replay"  // it replays on the workload
	GateStatic  = "static"  // the static verdict passes (postprocessors, VerifyGPUCode)
	GateNumeric = "numeric" // the numerical gate accepts the lowered program
	GateNone    = "none"    // no correctness check: a sample with a latency passes

	BonusNone         = "none"
	BonusLogSpeedup   = "log_speedup"   // scale * ln(baseline / latency)
	BonusLinearCapped = "linear_capped" // scale * min(baseline/latency - 1, cap)
	BonusRank         = "rank_in_group" // scale * share of the group's ranked samples it beats

	BaselineUnscheduled = "unscheduled"  // the workload with only the default thread binding
	BaselinePrompt      = "prompt"       // the refinement prompt's source script
	BaselineDatasetBest = "dataset_best" // the best script of the dataset for the workload

	TargetCUDA = "cuda" // measured on the GPU (kernels/cudabench)
)

var (
	gates     = []string{GateParse, GateReplay, GateStatic, GateNumeric, GateNone}
	bonuses   = []string{BonusNone, BonusLogSpeedup, BonusLinearCapped, BonusRank}
	baselines = []string{BaselineUnscheduled, BaselinePrompt, BaselineDatasetBest}
	// constructionBaselines are the baselines a construction task has (it
	// has no prompt script).
	constructionBaselines = []string{BaselineUnscheduled, BaselineDatasetBest}
)

// RewardSpec is the reward block, normalised: it is a parameter of the
// stage key as is, so equal rewards written differently (incorrect = -1
// or a map giving -1 to every phase) have equal keys.
//
//	reward {
//	  gate        = "numeric"      # parse | replay | static | numeric | none
//	  correct     = 1.0            # for passing the gate
//	  incorrect   = -1.0           # one value, or { decode = -2, parse = -1.5, ... } per failing phase
//	  bonus       = "log_speedup"  # none | log_speedup | linear_capped | rank_in_group
//	  bonus_scale = 1.0
//	  cap         = 3.0            # linear_capped only
//	  min_bonus   = -1.0           # log_speedup and linear_capped: the bonus's floor
//	  max_bonus   = 3.0            # log_speedup and linear_capped: an optional ceiling
//	  baseline    = "prompt"       # unscheduled | prompt | dataset_best
//	  construction_baseline = "unscheduled" # optional: the construction tasks' baseline
//	  target      = "h100-model"   # h200-model, or cuda where a GPU is present
//	}
type RewardSpec struct {
	Gate    string  `json:"gate"`
	Correct float64 `json:"correct"`
	// Incorrect is the reward of a sample failing the gate, per phase it
	// failed at: every phase at which a sample can fail the gate (see
	// FailPhases) has a value.
	Incorrect  map[string]float64 `json:"incorrect"`
	Bonus      string             `json:"bonus"`
	BonusScale float64            `json:"bonus_scale"`
	// Cap is linear_capped's cap on the speedup term (0 otherwise).
	Cap float64 `json:"cap,omitempty"`
	// MinBonus is the floor of the log_speedup and linear_capped bonuses
	// (nil for the others), so that a slow correct sample does not score
	// below a wrong one: with correct 1 and incorrect -1, the default -1
	// keeps every correct sample at 0 or above.
	MinBonus *float64 `json:"min_bonus,omitempty"`
	// MaxBonus, optional, is the ceiling of the log_speedup and
	// linear_capped bonuses (nil: none), so that one very fast sample does
	// not dwarf its group.
	MaxBonus *float64 `json:"max_bonus,omitempty"`
	Baseline string   `json:"baseline"`
	// ConstructionBaseline, when set (unscheduled or dataset_best), is the
	// baseline of construction tasks; Baseline then applies to refinement
	// tasks. Unset, construction tasks use Baseline, with the dataset's
	// best script standing in for prompt. Against the dataset's best most
	// correct samples are slower, and the floor makes them all equal;
	// against the unscheduled kernel every speedup a script brings counts.
	ConstructionBaseline string `json:"construction_baseline,omitempty"`
	Target               string `json:"target"`
}

// Defaults of the reward block.
const (
	defaultCorrect   = 1.0
	defaultIncorrect = -1.0
	defaultScale     = 1.0
	defaultCap       = 3.0
	defaultMinBonus  = -1.0
)

// DefaultReward is the reward block's defaults: the numerical gate, ±1,
// the log speedup over the refinement prompt's script on the H100 model.
func DefaultReward() RewardSpec {
	r := RewardSpec{Gate: GateNumeric, Correct: defaultCorrect, Bonus: BonusLogSpeedup, BonusScale: defaultScale,
		Baseline: BaselinePrompt, Target: "h100-model"}
	r.Incorrect = uniform(FailPhases(r.Gate), defaultIncorrect)
	r.MinBonus = floatPtr(defaultMinBonus)
	return r
}

func floatPtr(x float64) *float64 { return &x }

// hasFloor says whether bonus has a floor (min_bonus).
func hasFloor(bonus string) bool { return bonus == BonusLogSpeedup || bonus == BonusLinearCapped }

func uniform(phases []verdict.Phase, v float64) map[string]float64 {
	m := make(map[string]float64, len(phases))
	for _, p := range phases {
		m[string(p)] = v
	}
	return m
}

// FailPhases returns the judge phases at which a sample fails gate, in
// order: the phases up to the gate's, and for gate none every phase before
// the latency and the latency itself (a sample without a latency).
func FailPhases(gate string) []verdict.Phase {
	base := []verdict.Phase{judge.PhaseDecode, verdict.PhaseParse}
	switch gate {
	case GateParse:
		return base
	case GateReplay:
		return append(base, verdict.PhaseReplay)
	case GateStatic:
		return append(base, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify)
	case GateNumeric:
		return append(base, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseNumeric)
	case GateNone:
		return append(base, verdict.PhaseReplay, verdict.PhasePostproc, verdict.PhaseVerify, verdict.PhaseLatency)
	}
	return nil
}

// gatePhase is the judge phase a gate stands for.
func gatePhase(gate string) verdict.Phase {
	switch gate {
	case GateParse:
		return verdict.PhaseParse
	case GateReplay:
		return verdict.PhaseReplay
	case GateStatic:
		return verdict.PhaseVerify
	case GateNumeric:
		return verdict.PhaseNumeric
	}
	return verdict.PhaseLatency
}

// phaseOrder is the order of the judge's phases.
var phaseOrder = []verdict.Phase{judge.PhaseDecode, verdict.PhaseParse, verdict.PhaseReplay, verdict.PhasePostproc,
	verdict.PhaseVerify, verdict.PhaseNumeric, verdict.PhaseLatency}

// NeedsLatency says whether the reward needs the samples' latencies (a
// bonus, or gate none, which is passed by having one).
func (r RewardSpec) NeedsLatency() bool { return r.Bonus != BonusNone || r.Gate == GateNone }

// JudgeUntil is the last judge phase before the latency that a sample
// must be judged through: replay for gate parse or replay without a bonus,
// the numerical gate for gate numeric, the static verdict otherwise (the
// latency needs a program that passed it).
func (r RewardSpec) JudgeUntil() verdict.Phase {
	switch {
	case r.Gate == GateNumeric:
		return verdict.PhaseNumeric
	case (r.Gate == GateParse || r.Gate == GateReplay) && !r.NeedsLatency():
		return verdict.PhaseReplay
	}
	return verdict.PhaseVerify
}

// Validate checks a reward spec as the job receives it.
func (r RewardSpec) Validate() error {
	var errs []string
	if !slices.Contains(gates, r.Gate) {
		errs = append(errs, fmt.Sprintf("gate %q is not one of %s", r.Gate, strings.Join(gates, ", ")))
	}
	if !slices.Contains(bonuses, r.Bonus) {
		errs = append(errs, fmt.Sprintf("bonus %q is not one of %s", r.Bonus, strings.Join(bonuses, ", ")))
	}
	if !slices.Contains(baselines, r.Baseline) {
		errs = append(errs, fmt.Sprintf("baseline %q is not one of %s", r.Baseline, strings.Join(baselines, ", ")))
	}
	if r.ConstructionBaseline != "" && !slices.Contains(constructionBaselines, r.ConstructionBaseline) {
		errs = append(errs, fmt.Sprintf("construction_baseline %q is not one of %s", r.ConstructionBaseline, strings.Join(constructionBaselines, ", ")))
	}
	if err := checkTarget(r.Target); err != nil {
		errs = append(errs, err.Error())
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"correct", r.Correct}, {"bonus_scale", r.BonusScale}, {"cap", r.Cap}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			errs = append(errs, fmt.Sprintf("%s is %v, not a finite number", v.name, v.x))
		}
	}
	if r.Bonus == BonusLinearCapped && !(r.Cap > 0) {
		errs = append(errs, fmt.Sprintf("cap is %v; linear_capped needs a positive cap", r.Cap))
	}
	if r.Bonus != BonusLinearCapped && r.Cap != 0 {
		errs = append(errs, "cap is set without bonus linear_capped")
	}
	switch {
	case hasFloor(r.Bonus) && r.MinBonus == nil:
		errs = append(errs, fmt.Sprintf("bonus %s has no min_bonus", r.Bonus))
	case hasFloor(r.Bonus) && (math.IsNaN(*r.MinBonus) || math.IsInf(*r.MinBonus, 0)):
		errs = append(errs, fmt.Sprintf("min_bonus is %v, not a finite number", *r.MinBonus))
	case !hasFloor(r.Bonus) && r.MinBonus != nil:
		errs = append(errs, fmt.Sprintf("min_bonus is set with bonus %s", r.Bonus))
	}
	switch {
	case r.MaxBonus == nil:
	case !hasFloor(r.Bonus):
		errs = append(errs, fmt.Sprintf("max_bonus is set with bonus %s", r.Bonus))
	case math.IsNaN(*r.MaxBonus) || math.IsInf(*r.MaxBonus, 0):
		errs = append(errs, fmt.Sprintf("max_bonus is %v, not a finite number", *r.MaxBonus))
	case r.MinBonus != nil && *r.MaxBonus < *r.MinBonus:
		errs = append(errs, fmt.Sprintf("max_bonus %v is below min_bonus %v", *r.MaxBonus, *r.MinBonus))
	}
	if msg := checkIncorrect(r.Gate, r.Incorrect); msg != "" {
		errs = append(errs, msg)
	}
	if len(errs) > 0 {
		return fmt.Errorf("reward: %s", strings.Join(errs, "; "))
	}
	return nil
}

func checkTarget(t string) error {
	if t == TargetCUDA {
		return nil
	}
	if _, err := gpumodel.LookupDevice(t); err != nil {
		return fmt.Errorf("target: %v (or %s, measured on the GPU)", err, TargetCUDA)
	}
	return nil
}

// checkIncorrect says what is wrong with a per-phase incorrect map for
// gate ("" when nothing is).
func checkIncorrect(gate string, m map[string]float64) string {
	want := FailPhases(gate)
	if want == nil {
		return "" // the gate is reported
	}
	var missing, extra []string
	for _, p := range want {
		if _, ok := m[string(p)]; !ok {
			missing = append(missing, string(p))
		}
	}
	for k, v := range m {
		if !slices.Contains(want, verdict.Phase(k)) {
			extra = append(extra, k)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			extra = append(extra, fmt.Sprintf("%s (value %v is not finite)", k, v))
		}
	}
	sort.Strings(extra)
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("incorrect has no value for phase %s", strings.Join(missing, ", ")))
	}
	if len(extra) > 0 {
		msgs = append(msgs, fmt.Sprintf("incorrect names %s, not a phase at which a sample fails gate %s (those are %s)",
			strings.Join(extra, ", "), gate, joinPhases(want)))
	}
	return strings.Join(msgs, "; ")
}

func joinPhases(ps []verdict.Phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

var rewardSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "gate"}, {Name: "correct"}, {Name: "incorrect"}, {Name: "bonus"}, {Name: "bonus_scale"},
	{Name: "cap"}, {Name: "min_bonus"}, {Name: "max_bonus"}, {Name: "baseline"}, {Name: "construction_baseline"}, {Name: "target"},
}}

// decodeReward decodes a reward block; every diagnostic is at the
// attribute at fault (or the block, for a default that another attribute
// makes invalid).
func decodeReward(b *hcl.Block, ctx *hcl.EvalContext) (RewardSpec, hcl.Diagnostics) {
	r := DefaultReward()
	content, diags := b.Body.Content(rewardSchema)
	if diags.HasErrors() {
		return r, diags
	}
	attr := func(name string) (*hcl.Attribute, bool) { a, ok := content.Attributes[name]; return a, ok }
	oneOf := func(name string, target *string, choices []string) {
		a, ok := attr(name)
		if !ok {
			return
		}
		d := gohcl.DecodeExpression(a.Expr, ctx, target)
		diags = append(diags, d...)
		if !d.HasErrors() && !slices.Contains(choices, *target) {
			diags = append(diags, diag("Invalid "+name, fmt.Sprintf("reward.%s is %q; want one of %s.", name, *target, strings.Join(choices, ", ")), a.Expr.Range()))
		}
	}
	oneOf("gate", &r.Gate, gates)
	oneOf("bonus", &r.Bonus, bonuses)
	oneOf("baseline", &r.Baseline, baselines)
	oneOf("construction_baseline", &r.ConstructionBaseline, constructionBaselines)
	if a, ok := attr("target"); ok {
		d := gohcl.DecodeExpression(a.Expr, ctx, &r.Target)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if err := checkTarget(r.Target); err != nil {
				diags = append(diags, diag("Invalid target", "reward."+err.Error()+".", a.Expr.Range()))
			}
		}
	}
	finite := func(name string, target *float64) (hcl.Range, bool) {
		a, ok := attr(name)
		if !ok {
			return hcl.Range{}, false
		}
		d := gohcl.DecodeExpression(a.Expr, ctx, target)
		diags = append(diags, d...)
		if !d.HasErrors() && (math.IsNaN(*target) || math.IsInf(*target, 0)) {
			diags = append(diags, diag("Invalid "+name, fmt.Sprintf("reward.%s is %v; want a finite number.", name, *target), a.Expr.Range()))
		}
		return a.Expr.Range(), true
	}
	finite("correct", &r.Correct)
	finite("bonus_scale", &r.BonusScale)
	capRange, capSet := finite("cap", &r.Cap)
	minBonus := defaultMinBonus
	floorRange, floorSet := finite("min_bonus", &minBonus)
	var maxBonus float64
	ceilRange, ceilSet := finite("max_bonus", &maxBonus)
	if diags.HasErrors() {
		return r, diags
	}
	switch {
	case r.Bonus == BonusLinearCapped && !capSet:
		r.Cap = defaultCap
	case r.Bonus == BonusLinearCapped && !(r.Cap > 0):
		diags = append(diags, diag("Invalid cap", fmt.Sprintf("reward.cap is %v; linear_capped caps the speedup term at a positive number.", r.Cap), capRange))
	case r.Bonus != BonusLinearCapped && capSet:
		diags = append(diags, diag("Unused cap", fmt.Sprintf("reward.cap only applies to bonus %q; this reward's bonus is %q.", BonusLinearCapped, r.Bonus), capRange))
	}

	switch {
	case hasFloor(r.Bonus):
		r.MinBonus = &minBonus
	case floorSet:
		r.MinBonus = nil
		diags = append(diags, diag("Unused min_bonus", fmt.Sprintf("reward.min_bonus only applies to bonus %q or %q; this reward's bonus is %q.", BonusLogSpeedup, BonusLinearCapped, r.Bonus), floorRange))
	default:
		r.MinBonus = nil
	}
	switch {
	case ceilSet && !hasFloor(r.Bonus):
		diags = append(diags, diag("Unused max_bonus", fmt.Sprintf("reward.max_bonus only applies to bonus %q or %q; this reward's bonus is %q.", BonusLogSpeedup, BonusLinearCapped, r.Bonus), ceilRange))
	case ceilSet && maxBonus < *r.MinBonus:
		diags = append(diags, diag("Invalid max_bonus", fmt.Sprintf("reward.max_bonus is %v, below min_bonus %v.", maxBonus, *r.MinBonus), ceilRange))
	case ceilSet:
		r.MaxBonus = &maxBonus
	}

	// incorrect: one number, or an object of phase = number.
	r.Incorrect = uniform(FailPhases(r.Gate), defaultIncorrect)
	if a, ok := attr("incorrect"); ok {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return r, diags
		}
		rng := a.Expr.Range()
		switch {
		case v.IsNull() || !v.IsKnown():
			diags = append(diags, diag("Invalid incorrect", "reward.incorrect must be a number or an object of phase = number.", rng))
		case v.Type() == cty.Number:
			f, _ := v.AsBigFloat().Float64()
			r.Incorrect = uniform(FailPhases(r.Gate), f)
			if math.IsInf(f, 0) {
				diags = append(diags, diag("Invalid incorrect", fmt.Sprintf("reward.incorrect is %v; want a finite number.", f), rng))
			}
		case v.Type().IsObjectType() || v.Type().IsMapType():
			m := map[string]float64{}
			for it := v.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				nv, err := convert.Convert(ev, cty.Number)
				if err != nil || nv.IsNull() {
					diags = append(diags, diag("Invalid incorrect", fmt.Sprintf("reward.incorrect.%s is not a number.", k.AsString()), rng))
					continue
				}
				m[k.AsString()], _ = nv.AsBigFloat().Float64()
			}
			if msg := checkIncorrect(r.Gate, m); msg != "" {
				diags = append(diags, diag("Invalid incorrect", "reward."+msg+".", rng))
			}
			r.Incorrect = m
		default:
			diags = append(diags, diag("Invalid incorrect", fmt.Sprintf("reward.incorrect is a %s; want a number or an object of phase = number (phases %s).", v.Type().FriendlyName(), joinPhases(FailPhases(r.Gate))), rng))
		}
	}
	return r, diags
}

// Outcome is what the reward needs of a judgement: the last phase
// reached, whether every phase run passed, and the latency when one was
// given.
type Outcome struct {
	Phase         verdict.Phase
	OK            bool
	LatencyS      *float64
	LatencySource string
}

// OutcomeOf returns the outcome of a judge result.
func OutcomeOf(r *judge.Result) Outcome {
	if r == nil || r.Verdict == nil {
		return Outcome{Phase: judge.PhaseDecode}
	}
	return Outcome{Phase: r.Phase, OK: r.OK, LatencyS: r.LatencyS, LatencySource: r.LatencySource}
}

// Baseline is the latency a task's samples are compared with.
type Baseline struct {
	// Kind is the baseline used: unscheduled, prompt, dataset_best, or
	// "dataset_best (construction task)" where a construction task has no
	// prompt script.
	Kind     string  `json:"kind"`
	LatencyS float64 `json:"latency_s"`
	Source   string  `json:"latency_source"`
}

// SampleReward is one sample's reward and its components.
type SampleReward struct {
	Total float64 `json:"reward"`
	// Gate says whether the sample passed the gate; Phase is the last
	// judge phase reached (the failing one when it did not).
	Gate  bool          `json:"gate"`
	Phase verdict.Phase `json:"phase"`
	// GateTerm is correct or the incorrect value of Phase.
	GateTerm float64 `json:"gate_term"`
	// Bonus is the bonus (0 for a sample failing the gate, or without a
	// latency, or when the task has no baseline).
	Bonus         float64  `json:"bonus"`
	LatencyS      *float64 `json:"latency_s,omitempty"`
	LatencySource string   `json:"latency_source,omitempty"`
	// Baseline is the task's baseline, when the bonus used one.
	Baseline *Baseline `json:"baseline,omitempty"`
	// LogSpeedup is ln(baseline / latency), for a gate-passing sample
	// with a latency comparable with the baseline.
	LogSpeedup *float64 `json:"log_speedup,omitempty"`
	// NoBonus says why a gate-passing sample got no bonus.
	NoBonus string `json:"no_bonus,omitempty"`
}

// Components returns the named parts of the reward: gate (1 or 0),
// gate_term, bonus and, when set, log_speedup.
func (s SampleReward) Components() map[string]float64 {
	m := map[string]float64{"gate_term": s.GateTerm, "bonus": s.Bonus, "gate": 0}
	if s.Gate {
		m["gate"] = 1
	}
	if s.LogSpeedup != nil {
		m["log_speedup"] = *s.LogSpeedup
	}
	return m
}

// Score scores a group of outcomes (the samples of one prompt) against
// the task's baseline (nil when it has none: the speed bonuses other than
// rank_in_group are then 0, said in NoBonus). It is pure: table tests
// give it hand-made judgements.
func (r RewardSpec) Score(group []Outcome, base *Baseline) []SampleReward {
	out := make([]SampleReward, len(group))
	gp := slices.Index(phaseOrder, gatePhase(r.Gate))
	for i, o := range group {
		s := &out[i]
		s.Phase = o.Phase
		s.LatencyS, s.LatencySource = o.LatencyS, o.LatencySource
		if r.Gate == GateNone {
			s.Gate = o.LatencyS != nil
		} else {
			s.Gate = o.OK || slices.Index(phaseOrder, o.Phase) > gp
		}
		if !s.Gate {
			v, ok := r.Incorrect[string(o.Phase)]
			if !ok {
				// A phase the gate does not list (a judgement run further
				// than this reward asked): the lowest incorrect value.
				v = minValue(r.Incorrect)
			}
			s.GateTerm = v
			s.Total = v
			continue
		}
		s.GateTerm = r.Correct
		if r.Bonus == BonusNone {
			continue
		}
		switch {
		case o.LatencyS == nil || !(*o.LatencyS > 0):
			s.NoBonus = "no latency: the sample passed the gate but not the phases a latency needs"
		case r.Bonus == BonusRank:
			// below, over the group
		case base == nil:
			s.NoBonus = "the task has no baseline latency"
		case base.Source != o.LatencySource:
			s.NoBonus = fmt.Sprintf("the baseline's latency is from %s, the sample's from %s", base.Source, o.LatencySource)
		default:
			ratio := base.LatencyS / *o.LatencyS
			ls := math.Log(ratio)
			s.LogSpeedup, s.Baseline = &ls, base
			if r.Bonus == BonusLogSpeedup {
				s.Bonus = r.BonusScale * ls
			} else {
				s.Bonus = r.BonusScale * math.Min(ratio-1, r.Cap)
			}
			s.Bonus = math.Max(s.Bonus, *r.MinBonus)
			if r.MaxBonus != nil {
				s.Bonus = math.Min(s.Bonus, *r.MaxBonus)
			}
		}
	}
	if r.Bonus == BonusRank {
		r.rank(group, out, base)
	}
	for i := range out {
		if out[i].Gate {
			out[i].Total = out[i].GateTerm + out[i].Bonus
		}
	}
	return out
}

// rank gives rank_in_group's bonus: among the group's gate-passing
// samples with a latency, scale × (the number it is faster than + half
// the number it ties) / (their number - 1); one such sample alone gets 0.
// The log speedup is still logged against the baseline when comparable.
func (r RewardSpec) rank(group []Outcome, out []SampleReward, base *Baseline) {
	var ranked []int
	for i := range out {
		if out[i].Gate && out[i].NoBonus == "" {
			ranked = append(ranked, i)
		}
	}
	for _, i := range ranked {
		if base != nil && base.Source == group[i].LatencySource {
			ls := math.Log(base.LatencyS / *group[i].LatencyS)
			out[i].LogSpeedup, out[i].Baseline = &ls, base
		}
		if len(ranked) < 2 {
			out[i].NoBonus = "no other sample of the group to rank against"
			continue
		}
		var beats float64
		for _, k := range ranked {
			switch a, b := *group[i].LatencyS, *group[k].LatencyS; {
			case k == i:
			case a < b:
				beats++
			case a == b:
				beats += 0.5
			}
		}
		out[i].Bonus = r.BonusScale * beats / float64(len(ranked)-1)
	}
}

func minValue(m map[string]float64) float64 {
	v := math.Inf(1)
	for _, x := range m {
		v = math.Min(v, x)
	}
	if math.IsInf(v, 1) {
		return defaultIncorrect
	}
	return v
}
