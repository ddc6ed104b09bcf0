package judge

import (
	"math"
	"slices"

	"dragonx/kernels/sample"
	"dragonx/kernels/verdict"
)

// Summary counts judgements per phase: how many got through each phase,
// how many stopped there, and why. Add results to it one by one; its
// JSON is what metrics files carry.
type Summary struct {
	// Judged is the number of results added.
	Judged int `json:"judged"`
	// OK is the number that passed every phase run, OKRate its share.
	OK     int     `json:"ok"`
	OKRate float64 `json:"ok_rate"`
	// Phases are the phases run, in order.
	Phases []PhaseCount `json:"phases"`
	// Reasons counts the failures by phase and reason ("replay: ...",
	// with the details that vary masked as sample.Reason masks them).
	Reasons map[string]int `json:"reasons,omitempty"`
	// Latency summarises the latencies of the results that passed the
	// latency phase (nil when none did).
	Latency *LatencySummary `json:"latency,omitempty"`

	logSum float64
}

// PhaseCount is the tally of one phase.
type PhaseCount struct {
	Phase verdict.Phase `json:"phase"`
	// Passed is the number of results that got through the phase, Rate
	// its share of all results judged (so the rates fall phase by phase:
	// the decode rate, the replay rate, the static rate of verify, ...).
	Passed int     `json:"passed"`
	Rate   float64 `json:"rate"`
	// Failed is the number of results that stopped at this phase.
	Failed int `json:"failed"`
}

// LatencySummary is the latencies of the results that have one.
type LatencySummary struct {
	Count int `json:"count"`
	// Source is the results' latency source label ("model:h100"), or
	// "mixed" when they differ: a model's figure is never a measurement.
	Source string `json:"source"`
	// GeoMeanS is the geometric mean latency in seconds.
	GeoMeanS float64 `json:"geomean_s"`
}

// NewSummary returns an empty summary of judgements that run phases (a
// Judge's Phases).
func NewSummary(phases []verdict.Phase) *Summary {
	s := &Summary{Phases: make([]PhaseCount, len(phases))}
	for i, p := range phases {
		s.Phases[i].Phase = p
	}
	return s
}

// Add counts r. A result whose phase is not among the summary's counts as
// failing at its first phase.
func (s *Summary) Add(r *Result) {
	s.Judged++
	reached := -1
	if r != nil && r.Verdict != nil {
		reached = slices.IndexFunc(s.Phases, func(c PhaseCount) bool { return c.Phase == r.Phase })
	}
	ok := reached >= 0 && r.OK
	switch {
	case reached < 0:
		if len(s.Phases) > 0 {
			s.Phases[0].Failed++
		}
	default:
		for i := range reached {
			s.Phases[i].Passed++
		}
		if ok {
			s.Phases[reached].Passed++
		} else {
			s.Phases[reached].Failed++
		}
	}
	if ok {
		s.OK++
	} else if r != nil && r.Verdict != nil {
		if s.Reasons == nil {
			s.Reasons = map[string]int{}
		}
		s.Reasons[string(r.Phase)+": "+sample.Reason(r.Error)]++
	}
	if ok && r.LatencyS != nil {
		l := s.Latency
		if l == nil {
			l = &LatencySummary{Source: r.LatencySource}
			s.Latency = l
		} else if l.Source != r.LatencySource {
			l.Source = "mixed"
		}
		l.Count++
		s.logSum += math.Log(*r.LatencyS)
		l.GeoMeanS = math.Exp(s.logSum / float64(l.Count))
	}
	for i := range s.Phases {
		s.Phases[i].Rate = float64(s.Phases[i].Passed) / float64(s.Judged)
	}
	s.OKRate = float64(s.OK) / float64(s.Judged)
}

// Rate returns the share of the results judged that got through phase p
// (0 when none was judged or p is not run).
func (s *Summary) Rate(p verdict.Phase) float64 {
	for _, c := range s.Phases {
		if c.Phase == p {
			return c.Rate
		}
	}
	return 0
}

// Summarize returns the summary of results judged with phases.
func Summarize(phases []verdict.Phase, results []*Result) *Summary {
	s := NewSummary(phases)
	for _, r := range results {
		s.Add(r)
	}
	return s
}
