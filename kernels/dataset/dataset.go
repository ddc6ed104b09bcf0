package dataset

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"dragonx/kernels/encode"
	"dragonx/kernels/ir"
	"dragonx/kernels/latency"
	"dragonx/kernels/tunedb"
	"dragonx/kernels/workload"
)

// Options are the selection rules (see the package doc).
type Options struct {
	// LatencySource restricts the records used to one label; empty picks,
	// per workload, the label with the most valid records.
	LatencySource string
	// MinConstruction is the number of distinct valid scripts a workload
	// needs to give a construction example.
	MinConstruction int
	// MinRecords is the number of distinct valid scripts a workload needs to
	// give refinement examples (and test refinement prompts).
	MinRecords int
	// SourceLow and SourceHigh bound the quantile band of the refinement
	// sources, 0 the fastest script and 1 the slowest.
	SourceLow, SourceHigh float64
	// MinSpeedup is the least ratio of source to target latency for a
	// refinement pair; it must be above 1.
	MinSpeedup float64
	// PairsPerWorkload caps the refinement pairs of one workload.
	PairsPerWorkload int
	// ConstructionPerWorkload caps the construction examples of one
	// workload: its fastest distinct scripts (by script text), fastest first.
	ConstructionPerWorkload int
	// ConstructionWithin, when above 0, keeps only construction targets at
	// most this many times slower than the workload's best (>= 1); 0 keeps
	// any of the ConstructionPerWorkload fastest.
	ConstructionWithin float64
	// Test lists the held-out workloads.
	Test []*workload.Spec
	// TestConstruction and TestRefinement are the numbers of test tasks.
	TestConstruction, TestRefinement int
}

// DefaultOptions returns the defaults: one script for construction, five
// for refinement, the band [0.4, 0.6], a 1.1x speedup, one pair and one
// construction example (the best script) per workload, and the paper's 102
// and 170 test tasks.
func DefaultOptions() Options {
	return Options{MinConstruction: 1, MinRecords: 5, SourceLow: 0.4, SourceHigh: 0.6,
		MinSpeedup: 1.1, PairsPerWorkload: 1, ConstructionPerWorkload: 1, TestConstruction: 102, TestRefinement: 170}
}

// Check reports the first option out of its range.
func (o *Options) Check() error {
	switch {
	case o.MinConstruction < 1:
		return fmt.Errorf("dataset: min construction records %d: want at least 1", o.MinConstruction)
	case o.MinRecords < 2:
		return fmt.Errorf("dataset: min refinement records %d: want at least 2", o.MinRecords)
	case !(o.SourceLow >= 0 && o.SourceLow <= o.SourceHigh && o.SourceHigh <= 1):
		return fmt.Errorf("dataset: source band [%v, %v]: want 0 <= low <= high <= 1", o.SourceLow, o.SourceHigh)
	case !(o.MinSpeedup > 1) || math.IsInf(o.MinSpeedup, 0):
		return fmt.Errorf("dataset: min speedup %v: want a finite number above 1 (strictly better)", o.MinSpeedup)
	case o.PairsPerWorkload < 0:
		return fmt.Errorf("dataset: pairs per workload %d: want 0 or more", o.PairsPerWorkload)
	case o.ConstructionPerWorkload < 1:
		return fmt.Errorf("dataset: construction examples per workload %d: want at least 1", o.ConstructionPerWorkload)
	case !(o.ConstructionWithin == 0 || o.ConstructionWithin >= 1) || math.IsInf(o.ConstructionWithin, 0):
		return fmt.Errorf("dataset: construction latency bound %v: want 0 (none) or a finite factor of at least 1", o.ConstructionWithin)
	case o.TestConstruction < 0 || o.TestRefinement < 0:
		return fmt.Errorf("dataset: test task counts %d and %d: want 0 or more", o.TestConstruction, o.TestRefinement)
	}
	return nil
}

// Workload identifies the workload of an example.
type Workload struct {
	Spec       *workload.Spec `json:"workload"`
	Hash       string         `json:"hash"`        // workload.Spec.Hash
	StructHash string         `json:"struct_hash"` // ir.Hash of the built function, 16 hex digits
	Family     string         `json:"family"`
	Kernel     string         `json:"kernel"` // kernels/encode's kernel text
}

// Script is a scheduled version of a workload, with its latency.
type Script struct {
	Script        string          `json:"script"` // kernels/encode's script text
	Trace         json.RawMessage `json:"trace"`  // the full trace JSON
	LatencyS      float64         `json:"latency_s"`
	LatencySource string          `json:"latency_source"`
}

// Construction is a construction example: a workload and its best script.
type Construction struct {
	Workload
	Target Script `json:"target"`
}

// Refinement is a refinement example: a workload, a source script from the
// middle of its latency distribution, and a strictly better target.
type Refinement struct {
	Workload
	Source         Script  `json:"source"`
	SourceQuantile float64 `json:"source_quantile"`
	Target         Script  `json:"target"`
	Speedup        float64 `json:"speedup"` // source latency / target latency
}

// ConstructionTask is a held-out workload; ReferenceLatencyS is the best
// latency the database holds for it, when it holds one.
type ConstructionTask struct {
	Workload
	ReferenceLatencyS *float64 `json:"reference_latency_s,omitempty"`
	LatencySource     string   `json:"latency_source,omitempty"`
}

// RefinementPrompt is a held-out workload and a script to improve.
type RefinementPrompt struct {
	Workload
	Source         Script  `json:"source"`
	SourceQuantile float64 `json:"source_quantile"`
}

// Result is what Build produces.
type Result struct {
	Construction     []*Construction
	Refinement       []*Refinement
	TestConstruction []*ConstructionTask
	TestRefinement   []*RefinementPrompt
	Stats            *Stats
}

// prepared is a workload with its distinct valid records, fastest first,
// whose scripts are encoded when an example needs them.
type prepared struct {
	w       Workload
	f       *ir.PrimFunc
	recs    []*tunedb.Record
	scripts map[int]*Script // encoded so far; nil where encoding failed
	st      *Stats
}

// script returns the k-th fastest script, or false if its trace does not
// encode.
func (p *prepared) script(k int) (*Script, bool) {
	if s, ok := p.scripts[k]; ok {
		return s, s != nil
	}
	r := p.recs[k]
	text, err := encode.Encode(p.f, r.Trace)
	if err != nil {
		p.scripts[k] = nil
		p.st.UnencodableScripts++
		return nil, false
	}
	s := &Script{Script: string(text), Trace: json.RawMessage(r.Trace.String()), LatencyS: r.Mean(), LatencySource: r.LatencySource}
	p.scripts[k] = s
	return s, true
}

// ranked is a construction target: a script and its rank.
type ranked struct {
	k int
	s *Script
}

// targets returns the construction targets: the fastest scripts that
// encode, distinct by script text, at most opts.ConstructionPerWorkload of
// them and, when opts.ConstructionWithin is set, none slower than that
// factor times the first.
func (p *prepared) targets(opts Options) []ranked {
	var out []ranked
	seen := map[string]bool{}
	for k := range p.recs {
		if len(out) == opts.ConstructionPerWorkload {
			break
		}
		if len(out) > 0 && opts.ConstructionWithin > 0 && p.recs[k].Mean() > opts.ConstructionWithin*out[0].s.LatencyS {
			break
		}
		s, ok := p.script(k)
		if !ok {
			continue
		}
		if seen[s.Script] {
			p.st.DuplicateScripts++
			continue
		}
		seen[s.Script] = true
		out = append(out, ranked{k, s})
	}
	return out
}

// Build selects the examples and test tasks from db.
func Build(ctx context.Context, db *tunedb.DB, opts Options) (*Result, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	st := newStats()
	res := &Result{Stats: st}

	// The held-out hashes.
	testHash, testStruct := map[string]bool{}, map[string]bool{}
	var tests []*workload.Spec
	for _, s := range opts.Test {
		if testHash[s.Hash()] {
			continue
		}
		f, err := s.Build()
		if err != nil {
			return nil, fmt.Errorf("dataset: test workload %s: %w", s.Label(), err)
		}
		testHash[s.Hash()] = true
		testStruct[structHash(f)] = true
		tests = append(tests, s)
	}

	seen := map[string]bool{}
	testPrep := map[string]*prepared{}
	for i, s := range db.Workloads() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s == nil || seen[s.Hash()] {
			continue
		}
		seen[s.Hash()] = true
		st.Workloads++
		p, err := prepare(s, db.Records(i), opts, st)
		if err != nil {
			st.BuildFailures++
			continue
		}
		if testHash[p.w.Hash] || testStruct[p.w.StructHash] {
			st.HeldOut++
			if testHash[p.w.Hash] {
				testPrep[p.w.Hash] = p
			}
			continue
		}
		if len(p.recs) > 0 {
			st.WithValid++
		}
		if len(p.recs) < opts.MinConstruction {
			st.Skipped["construction: too few scripts"]++
			continue
		}
		tgts := p.targets(opts)
		if len(tgts) == 0 {
			st.Skipped["construction: no script encodes"]++
			continue
		}
		for _, t := range tgts {
			c := &Construction{Workload: p.w, Target: *t.s}
			res.Construction = append(res.Construction, c)
			st.addConstruction(c)
		}
		if len(p.recs) < opts.MinRecords {
			st.Skipped["refinement: too few scripts"]++
			continue
		}
		// Round q pairs the j-th band source with target (j+q) mod T: round
		// 0 gives the j-th source the j-th target (the best when there is
		// one target), and the later rounds give each source the others, so
		// no pair repeats.
		srcs := band(len(p.recs), opts)
		n := 0
		for i := 0; i < len(srcs)*len(tgts) && n < opts.PairsPerWorkload; i++ {
			j, q := i%len(srcs), i/len(srcs)
			k, tgt := srcs[j], tgts[(j+q)%len(tgts)]
			if k <= tgt.k {
				continue
			}
			src, ok := p.script(k)
			if !ok {
				if q == 0 {
					st.Skipped["refinement: source does not encode"]++
				}
				continue
			}
			if src.LatencyS < opts.MinSpeedup*tgt.s.LatencyS {
				st.Skipped["refinement: source below min speedup"]++
				continue
			}
			r := &Refinement{Workload: p.w, Source: *src, SourceQuantile: quantile(k, len(p.recs)),
				Target: *tgt.s, Speedup: src.LatencyS / tgt.s.LatencyS}
			res.Refinement = append(res.Refinement, r)
			st.addRefinement(r)
			n++
		}
	}

	// The test split.
	for _, s := range tests {
		if len(res.TestConstruction) == opts.TestConstruction {
			break
		}
		t := &ConstructionTask{}
		if p := testPrep[s.Hash()]; p != nil {
			t.Workload = p.w
			if len(p.recs) > 0 {
				best := p.recs[0].Mean()
				t.ReferenceLatencyS, t.LatencySource = &best, p.recs[0].LatencySource
			}
		} else {
			w, _, err := describe(s)
			if err != nil {
				return nil, err
			}
			t.Workload = w
		}
		res.TestConstruction = append(res.TestConstruction, t)
	}
	var lists [][]int
	var preps []*prepared
	for _, s := range tests {
		if p := testPrep[s.Hash()]; p != nil && len(p.recs) >= opts.MinRecords {
			preps = append(preps, p)
			lists = append(lists, band(len(p.recs), opts))
		}
	}
	for round := 0; len(res.TestRefinement) < opts.TestRefinement; round++ {
		added := false
		for i, p := range preps {
			if len(res.TestRefinement) == opts.TestRefinement {
				break
			}
			if round < len(lists[i]) {
				added = true
				k := lists[i][round]
				src, ok := p.script(k)
				if !ok {
					st.Skipped["test refinement: source does not encode"]++
					continue
				}
				res.TestRefinement = append(res.TestRefinement, &RefinementPrompt{
					Workload: p.w, Source: *src, SourceQuantile: quantile(k, len(p.recs))})
			}
		}
		if !added {
			break
		}
	}
	st.TestWorkloads = len(tests)
	st.TestConstruction, st.TestRefinement = len(res.TestConstruction), len(res.TestRefinement)
	st.finish()
	return res, nil
}

func structHash(f *ir.PrimFunc) string { return fmt.Sprintf("%016x", ir.Hash(f)) }

// describe builds a workload's identity and kernel text.
func describe(s *workload.Spec) (Workload, *ir.PrimFunc, error) {
	f, err := s.Build()
	if err != nil {
		return Workload{}, nil, fmt.Errorf("dataset: building %s: %w", s.Label(), err)
	}
	k, err := encode.Kernel(f)
	if err != nil {
		return Workload{}, nil, fmt.Errorf("dataset: kernel text of %s: %w", s.Label(), err)
	}
	return Workload{Spec: s, Hash: s.Hash(), StructHash: structHash(f), Family: s.Family(), Kernel: string(k)}, f, nil
}

// prepare selects a workload's records: the valid ones of one latency
// source, sorted by mean run time (ties in commit order), de-duplicated by
// the trace before its postprocessors (which the script is a function of,
// and determines), the fastest kept. Scripts are encoded later, when needed.
func prepare(s *workload.Spec, recs []*tunedb.Record, opts Options, st *Stats) (*prepared, error) {
	w, f, err := describe(s)
	if err != nil {
		return nil, err
	}
	st.Records += len(recs)
	label := opts.LatencySource
	if label == "" {
		label = chooseLabel(recs)
	}
	var valid []*tunedb.Record
	for _, r := range recs {
		if r.Valid() && r.LatencySource == label {
			valid = append(valid, r)
		}
	}
	st.ValidRecords += len(valid)
	sort.SliceStable(valid, func(a, b int) bool { return valid[a].Mean() < valid[b].Mean() })
	p := &prepared{w: w, f: f, scripts: map[int]*Script{}, st: st}
	seen := map[string]bool{}
	for _, r := range valid {
		key := r.Trace.WithoutPostproc().String()
		if seen[key] {
			continue
		}
		seen[key] = true
		p.recs = append(p.recs, r)
	}
	st.DistinctScripts += len(p.recs)
	if len(p.recs) > 0 {
		st.LatencySources[label]++
	}
	return p, nil
}

// chooseLabel returns the label with the most valid records, ties going to
// latency.Measured, then to the smaller label.
func chooseLabel(recs []*tunedb.Record) string {
	count := map[string]int{}
	for _, r := range recs {
		if r.Valid() {
			count[r.LatencySource]++
		}
	}
	best, bestN := "", 0
	for l, n := range count {
		switch {
		case n > bestN, n == bestN && l == latency.Measured,
			n == bestN && best != latency.Measured && l < best:
			best, bestN = l, n
		}
	}
	return best
}

// band returns the ranks of the refinement sources of n sorted scripts, the
// band's middle first, then alternately above and below it.
func band(n int, opts Options) []int {
	if n < 2 {
		return nil
	}
	lo := int(math.Ceil(opts.SourceLow * float64(n-1)))
	hi := int(math.Floor(opts.SourceHigh * float64(n-1)))
	if lo < 1 {
		lo = 1 // rank 0 is the target
	}
	if lo > hi {
		return nil
	}
	mid := (lo + hi) / 2
	out := []int{mid}
	for d := 1; len(out) < hi-lo+1; d++ {
		if mid+d <= hi {
			out = append(out, mid+d)
		}
		if mid-d >= lo {
			out = append(out, mid-d)
		}
	}
	return out
}

func quantile(k, n int) float64 { return float64(k) / float64(n-1) }

// ReadTestSplit reads held-out workloads, one JSON object a line: a
// kernels/corpus record ({"spec": ..., "split": "test", ...}; lines of
// another split are skipped) or a bare workload spec.
func ReadTestSplit(r io.Reader) ([]*workload.Spec, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), workload.MaxSpecBytes+1<<16)
	var out []*workload.Spec
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Spec  json.RawMessage `json:"spec"`
			Split *string         `json:"split"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("dataset: test split line %d: %w", n, err)
		}
		raw := line
		if rec.Spec != nil {
			if rec.Split != nil && !strings.EqualFold(*rec.Split, "test") {
				continue
			}
			raw = rec.Spec
		}
		s, err := workload.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("dataset: test split line %d: %w", n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset: reading the test split: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("dataset: the test split holds no test workload")
	}
	return out, nil
}
