package dataset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Stats describe a built dataset.
type Stats struct {
	Workloads       int `json:"workloads"`        // distinct workloads in the database
	HeldOut         int `json:"held_out"`         // of them, held out for the test split
	WithValid       int `json:"with_valid"`       // training workloads with a valid script
	BuildFailures   int `json:"build_failures"`   // workloads whose spec did not build
	Records         int `json:"records"`          // records of all workloads
	ValidRecords    int `json:"valid_records"`    // valid ones of the chosen latency source
	DistinctScripts int `json:"distinct_scripts"` // after de-duplication by script text
	// UnencodableScripts counts valid records whose trace kernels/encode
	// could not write.
	UnencodableScripts int `json:"unencodable_scripts"`
	// DuplicateScripts counts construction candidates skipped because a
	// faster one of the same workload encodes to the same script text.
	DuplicateScripts int `json:"duplicate_scripts"`

	Construction     int `json:"construction"`
	Refinement       int `json:"refinement"`
	TestWorkloads    int `json:"test_workloads"`
	TestConstruction int `json:"test_construction"`
	TestRefinement   int `json:"test_refinement"`

	// Skipped counts the examples not made, by reason.
	Skipped map[string]int `json:"skipped"`
	// LatencySources counts the workloads by the label their scripts use.
	LatencySources map[string]int `json:"latency_sources"`
	// Families counts the examples per workload family.
	Families map[string]*FamilyCount `json:"families"`
	// Speedup summarises the refinement pairs' speedups.
	Speedup Summary `json:"speedup"`
	// TraceLength summarises the instruction counts of the target traces of
	// construction examples (postprocessors included); ScriptLines the lines
	// of their scripts.
	TraceLength Summary `json:"trace_length"`
	ScriptLines Summary `json:"script_lines"`

	speedups, traceLens, scriptLines []float64
}

// FamilyCount counts the examples of one family.
type FamilyCount struct {
	Construction int `json:"construction"`
	Refinement   int `json:"refinement"`
}

// Summary is a distribution's size and order statistics (nearest rank).
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	P10    float64 `json:"p10"`
	P25    float64 `json:"p25"`
	Median float64 `json:"median"`
	P75    float64 `json:"p75"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
}

func newStats() *Stats {
	return &Stats{Skipped: map[string]int{}, LatencySources: map[string]int{}, Families: map[string]*FamilyCount{}}
}

func (st *Stats) family(f string) *FamilyCount {
	c := st.Families[f]
	if c == nil {
		c = &FamilyCount{}
		st.Families[f] = c
	}
	return c
}

func (st *Stats) addConstruction(c *Construction) {
	st.Construction++
	st.family(c.Family).Construction++
	if n, ok := TraceLength(c); ok {
		st.traceLens = append(st.traceLens, float64(n))
	}
	st.scriptLines = append(st.scriptLines, float64(strings.Count(strings.TrimRight(c.Target.Script, "\n"), "\n")+1))
}

// TraceLength is the number of instructions in a construction example's
// target trace (postprocessors included): what Stats.TraceLength
// summarises. ok is false when the trace is not a [instructions, decisions]
// pair.
func TraceLength(c *Construction) (n int, ok bool) {
	var t [2]json.RawMessage
	if json.Unmarshal(c.Target.Trace, &t) != nil {
		return 0, false
	}
	var insts []json.RawMessage
	if json.Unmarshal(t[0], &insts) != nil {
		return 0, false
	}
	return len(insts), true
}

func (st *Stats) addRefinement(r *Refinement) {
	st.Refinement++
	st.family(r.Family).Refinement++
	st.speedups = append(st.speedups, r.Speedup)
}

func (st *Stats) finish() {
	st.Speedup = summarize(st.speedups)
	st.TraceLength = summarize(st.traceLens)
	st.ScriptLines = summarize(st.scriptLines)
}

func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999999) - 1 // nearest rank
		if i < 0 {
			i = 0
		}
		if i >= len(s) {
			i = len(s) - 1
		}
		return s[i]
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Summary{N: len(s), Min: s[0], P10: at(0.1), P25: at(0.25), Median: at(0.5), P75: at(0.75),
		P90: at(0.9), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

// Output files written by Write.
const (
	ConstructionFile     = "construction.jsonl"
	RefinementFile       = "refinement.jsonl"
	TestConstructionFile = "test_construction.jsonl"
	TestRefinementFile   = "test_refinement.jsonl"
	StatsFile            = "stats.json"
)

// Write writes the example sets as JSON lines and the statistics into dir.
func Write(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := writeLines(filepath.Join(dir, ConstructionFile), res.Construction); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, RefinementFile), res.Refinement); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, TestConstructionFile), res.TestConstruction); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, TestRefinementFile), res.TestRefinement); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res.Stats, "", "  ")
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, StatsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}

func writeLines[T any](path string, xs []T) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, x := range xs {
		if err := enc.Encode(x); err != nil {
			f.Close()
			return fmt.Errorf("dataset: writing %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("dataset: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	return nil
}
