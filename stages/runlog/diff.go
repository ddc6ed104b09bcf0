package runlog

import (
	"fmt"
	"sort"
	"strings"

	"dragonx/stages"
)

// Diff is what differs between two runs, A (old) and B (new).
type Diff struct {
	A string `json:"a"` // run ids
	B string `json:"b"`
	// File says how the experiment files differ: "" when they are the same
	// bytes.
	File string `json:"file,omitempty"`
	// Vars lists the variables whose values differ, in words.
	Vars []string `json:"vars,omitempty"`
	// Stages has an entry for every stage whose parameters, kind or
	// results differ, in B's order (then the stages only A has).
	Stages []StageDiff `json:"stages,omitempty"`
	// Metrics are the metrics of both runs (the changed ones only, unless
	// all was asked for), in B's order.
	Metrics []MetricDiff `json:"metrics,omitempty"`
}

// StageDiff is how one stage differs.
type StageDiff struct {
	Stage string `json:"stage"`
	// Changes are in plan's words: "param rl.reward.bonus_scale changed 1
	// -> 2", "kind version changed 3 -> 4", "only in run B".
	Changes []string `json:"changes,omitempty"`
	// Outputs names the outputs whose bytes differ (or exist in one run
	// only); empty when the results are identical or unknown.
	Outputs []string `json:"outputs,omitempty"`
	// SameResults is true when both runs have the same key for the stage
	// (the same cached result).
	SameResults bool `json:"same_results"`
}

// MetricDiff is one metric in both runs. Old or New is nil when the
// metric is in one run only (or is text); Delta is New - Old when both
// are numbers.
type MetricDiff struct {
	Metric
	Old     *float64 `json:"old,omitempty"`
	New     *float64 `json:"new,omitempty"`
	OldText string   `json:"old_text"`
	NewText string   `json:"new_text"`
	Delta   *float64 `json:"delta,omitempty"`
}

// Changed reports whether the metric's shown value differs.
func (m MetricDiff) Changed() bool { return m.OldText != m.NewText }

// Compare compares run a with run b. With all, Metrics holds every metric
// of either run; otherwise only those whose shown value differs.
func Compare(a, b *Entry, all bool) *Diff {
	d := &Diff{A: a.ID, B: b.ID}
	if a.Digest != b.Digest {
		if a.File == b.File {
			d.File = fmt.Sprintf("%s changed (%s -> %s)", b.File, a.Digest.Short(), b.Digest.Short())
		} else {
			d.File = fmt.Sprintf("%s (%s) -> %s (%s)", a.File, a.Digest.Short(), b.File, b.Digest.Short())
		}
	}
	d.Vars = varChanges(a.Vars, b.Vars)
	d.Stages = stageChanges(a, b)
	d.Metrics = metricChanges(a.Metrics, b.Metrics, all)
	return d
}

func varChanges(a, b []Var) []string {
	old := map[string]string{}
	for _, v := range a {
		old[v.Name] = v.Value
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range b {
		seen[v.Name] = true
		ov, ok := old[v.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("var.%s added: %s", v.Name, v.Value))
		case ov != v.Value:
			out = append(out, fmt.Sprintf("var.%s changed %s -> %s", v.Name, ov, v.Value))
		}
	}
	for _, v := range a {
		if !seen[v.Name] {
			out = append(out, fmt.Sprintf("var.%s removed", v.Name))
		}
	}
	return out
}

func stageChanges(a, b *Entry) []StageDiff {
	var out []StageDiff
	for _, sb := range b.Stages {
		sa := a.StageByAddr(sb.Stage)
		if sa == nil {
			out = append(out, StageDiff{Stage: sb.Stage, Changes: []string{"only in run B"}})
			continue
		}
		sd := StageDiff{Stage: sb.Stage, SameResults: sa.Key != "" && sa.Key == sb.Key}
		sd.Changes = kindChanges(sa, &sb)
		sd.Changes = append(sd.Changes, stages.ParamChanges(shortAddr(sb.Stage), fromParams(sa.Params), fromParams(sb.Params))...)
		if !sd.SameResults {
			sd.Outputs = outputChanges(sa, &sb)
		}
		if sa.Status != sb.Status && (!isDone(sa.Status) || !isDone(sb.Status)) {
			sd.Changes = append(sd.Changes, fmt.Sprintf("status %s -> %s", sa.Status, sb.Status))
		}
		if len(sd.Changes) > 0 || len(sd.Outputs) > 0 {
			out = append(out, sd)
		}
	}
	for _, sa := range a.Stages {
		if b.StageByAddr(sa.Stage) == nil {
			out = append(out, StageDiff{Stage: sa.Stage, Changes: []string{"only in run A"}})
		}
	}
	return out
}

// isDone reports whether a stage status means it has results (ran or
// cached, from wherever).
func isDone(status string) bool { return status == "ran" || strings.HasPrefix(status, "cached") }

func kindChanges(a, b *Stage) []string {
	switch {
	case a.Kind != b.Kind:
		return []string{fmt.Sprintf("kind changed %s -> %s", a.Kind, b.Kind)}
	case a.KindVersion != b.KindVersion:
		return []string{fmt.Sprintf("kind version changed %s -> %s", a.KindVersion, b.KindVersion)}
	}
	return nil
}

func outputChanges(a, b *Stage) []string {
	var out []string
	for name, db := range b.Outputs {
		if da, ok := a.Outputs[name]; !ok || da != db {
			out = append(out, name)
		}
	}
	for name := range a.Outputs {
		if _, ok := b.Outputs[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// shortAddr turns "stage.rl" into "rl", as plan names stages.
func shortAddr(addr string) string { return strings.TrimPrefix(addr, "stage.") }

func metricChanges(a, b []Metric, all bool) []MetricDiff {
	old := map[string]Metric{}
	for _, m := range a {
		old[m.Name()] = m
	}
	var out []MetricDiff
	seen := map[string]bool{}
	for _, m := range b {
		seen[m.Name()] = true
		md := MetricDiff{Metric: m, New: m.Value, NewText: m.Text}
		if o, ok := old[m.Name()]; ok {
			md.Old, md.OldText = o.Value, o.Text
		}
		if md.Old != nil && md.New != nil {
			d := *md.New - *md.Old
			md.Delta = &d
		}
		if all || md.Changed() {
			out = append(out, md)
		}
	}
	for _, m := range a {
		if !seen[m.Name()] {
			out = append(out, MetricDiff{Metric: m, Old: m.Value, OldText: m.Text})
		}
	}
	return out
}
