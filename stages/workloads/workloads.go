// Package workloads is the `workloads` stage kind: the workload corpus of
// kernels/corpus (docs/corpus.md) and its train/test split, as a stage.
//
//	stage "workloads" {
//	  kind             = "workloads"
//	  count            = 1200   # distinct workloads (at least 52 with benchmarks)
//	  seed             = 1      # default 1
//	  test_fraction    = 0.1    # default 0.1, in [0, 1)
//	  hold_out_network = ""     # default none; a network of the layer tables
//	  hold_out_networks = []    # default none; more networks held out (not with hold_out_network)
//	  benchmarks       = true   # default true: the 52 benchmark shapes, all in test
//	  family_floor     = 0      # default 0: per family no layer table has, this many converted layers
//	}
//
// family_floor gives the families that no layer table has (C1D, DIL, CAP,
// NRM: otherwise only benchmark shapes, in test) that many workloads made
// from table layers, split as the other layers are (docs/corpus.md).
//
// Outputs: workloads (workloads.jsonl: corpus records of both splits, in
// generation order), train (train.jsonl) and test (test.jsonl): the records
// of one split each, and stats (stats.json: counts per split, family,
// network and perturbation). The build runs on GOMAXPROCS goroutines; the
// outputs do not depend on their number, which is therefore no parameter.
package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"dragonx/internal/progress"
	"dragonx/kernels/corpus"
	"dragonx/kernels/workload"
	"dragonx/stages"
)

// Version is the kind's version; bump it when the same parameters would
// give other outputs.
const Version = "1"

// Output files.
const (
	WorkloadsFile = "workloads.jsonl"
	TrainFile     = "train.jsonl"
	TestFile      = "test.jsonl"
	StatsFile     = "stats.json"
)

// Kind is the workloads stage kind.
type Kind struct{}

func init() { stages.Register(Kind{}) }

// Name returns "workloads".
func (Kind) Name() string { return "workloads" }

// Version returns the kind version.
func (Kind) Version() string { return Version }

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "count", Required: true},
		{Name: "seed"},
		{Name: "test_fraction"},
		{Name: "hold_out_network"},
		{Name: "hold_out_networks"},
		{Name: "benchmarks"},
		{Name: "family_floor"},
	},
}

// maxFamilyFloor bounds family_floor: the count's bound, which no floor
// usefully exceeds (the floor's workloads count towards it).
const maxFamilyFloor = 10_000_000

// Stage is a decoded workloads stage.
type Stage struct {
	opts   corpus.Options // Workers and Progress are set by Run
	params []stages.Param
}

// Decode decodes a workloads stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return nil, diags
	}
	s := &Stage{opts: corpus.Options{Seed: 1, TestFraction: 0.1}}
	benchmarks := true
	value := func(name string, want cty.Type) (*hcl.Attribute, cty.Value, bool) {
		a, v, d, ok := stages.AttrValue(content, name, want, dc.Eval)
		diags = append(diags, d...)
		return a, v, ok
	}
	if a, v, ok := value("count", cty.Number); ok {
		n, isInt := stages.WholeNumber(v)
		switch {
		case !isInt:
			diags = append(diags, attrError(a, "Invalid count", fmt.Sprintf("count must be a whole number of workloads, not %s.", v.AsBigFloat().Text('g', -1))))
		case n < 1 || n > 10_000_000:
			diags = append(diags, attrError(a, "Invalid count", fmt.Sprintf("count %d is out of range: want 1 to 10,000,000 workloads.", n)))
		default:
			s.opts.Count = int(n)
		}
	}
	if a, v, ok := value("seed", cty.Number); ok {
		if n, isInt := stages.WholeNumber(v); isInt {
			s.opts.Seed = n
		} else {
			diags = append(diags, attrError(a, "Invalid seed", fmt.Sprintf("seed must be a whole number (a 64-bit integer), not %s.", v.AsBigFloat().Text('g', -1))))
		}
	}
	if a, v, ok := value("test_fraction", cty.Number); ok {
		f, _ := v.AsBigFloat().Float64()
		if !(f >= 0 && f < 1) {
			diags = append(diags, attrError(a, "Invalid test_fraction", fmt.Sprintf("test_fraction %s is out of range: want a probability in [0, 1).", v.AsBigFloat().Text('g', -1))))
		} else {
			s.opts.TestFraction = f
		}
	}
	if a, v, ok := value("hold_out_network", cty.String); ok {
		name := v.AsString()
		if name != "" {
			diags = append(diags, checkNetwork(a, "hold_out_network", name)...)
		}
		s.opts.HoldOutNetwork = name
	}
	if a, v, ok := value("hold_out_networks", cty.List(cty.String)); ok {
		seen := map[string]bool{}
		for _, e := range v.AsValueSlice() {
			if e.IsNull() {
				diags = append(diags, attrError(a, "Invalid hold_out_networks", "hold_out_networks must list network names, not null."))
				continue
			}
			name := e.AsString()
			if seen[name] || name == s.opts.HoldOutNetwork {
				diags = append(diags, attrError(a, "Invalid hold_out_networks", fmt.Sprintf("hold_out_networks names %q twice (with hold_out_network).", name)))
				continue
			}
			seen[name] = true
			diags = append(diags, checkNetwork(a, "hold_out_networks", name)...)
			s.opts.HoldOutNetworks = append(s.opts.HoldOutNetworks, name)
		}
	}
	if _, v, ok := value("benchmarks", cty.Bool); ok {
		benchmarks = v.True()
	}
	if a, v, ok := value("family_floor", cty.Number); ok {
		n, isInt := stages.WholeNumber(v)
		switch {
		case !isInt:
			diags = append(diags, attrError(a, "Invalid family_floor", fmt.Sprintf("family_floor must be a whole number of workloads per family, not %s.", v.AsBigFloat().Text('g', -1))))
		case n < 0 || n > maxFamilyFloor:
			diags = append(diags, attrError(a, "Invalid family_floor", fmt.Sprintf("family_floor %d is out of range: want 0 (none) to %d workloads per family.", n, maxFamilyFloor)))
		default:
			s.opts.FamilyFloor = int(n)
		}
	}
	s.opts.NoBenchmarks = !benchmarks
	if nb := len(workload.Benchmarks()); benchmarks && s.opts.Count > 0 && s.opts.Count < nb {
		a := content.Attributes["count"]
		diags = append(diags, attrError(a, "Invalid count", fmt.Sprintf("count %d is below the %d benchmark shapes that benchmarks = true puts in the test split; raise count or set benchmarks = false.", s.opts.Count, nb)))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for _, p := range []struct {
		name string
		v    any
	}{
		{"count", s.opts.Count}, {"seed", s.opts.Seed}, {"test_fraction", s.opts.TestFraction},
		{"hold_out_network", s.opts.HoldOutNetwork}, {"benchmarks", benchmarks},
		{"hold_out_networks", s.opts.HoldOutNetworks}, {"family_floor", s.opts.FamilyFloor},
	} {
		if p.name == "hold_out_networks" && len(s.opts.HoldOutNetworks) == 0 ||
			p.name == "family_floor" && s.opts.FamilyFloor == 0 {
			continue // none: the keys of the stages without it stay as they were
		}
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + p.name, Detail: err.Error() + ".", Subject: dc.DeclRange.Ptr()})
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

// checkNetwork says if name (the value of attribute a) is no network of the
// layer tables.
func checkNetwork(a *hcl.Attribute, attr, name string) hcl.Diagnostics {
	nets, err := corpus.Networks()
	if err != nil {
		return hcl.Diagnostics{attrError(a, "Cannot read the layer tables", err.Error())}
	}
	var names []string
	for _, n := range nets {
		if n.Name == name {
			return nil
		}
		names = append(names, n.Name)
	}
	return hcl.Diagnostics{attrError(a, "Unknown network", fmt.Sprintf("%s %q is not a network of the layer tables; valid names: %s.", attr, name, strings.Join(names, ", ")))}
}

func attrError(a *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: a.Expr.Range().Ptr()}
}

// Params returns count, seed, test_fraction, hold_out_network and
// benchmarks, defaults filled in, hold_out_networks when it lists any and
// family_floor when it is above 0.
func (s *Stage) Params() []stages.Param { return s.params }

// Inputs returns nothing: the layer tables are part of the binary (and of
// Version).
func (s *Stage) Inputs() []stages.Input { return nil }

// Outputs returns stats, test, train and workloads.
func (s *Stage) Outputs() []stages.OutputDecl {
	return []stages.OutputDecl{
		{Name: "stats", Path: StatsFile},
		{Name: "test", Path: TestFile},
		{Name: "train", Path: TrainFile},
		{Name: "workloads", Path: WorkloadsFile},
	}
}

// Run generates the corpus and writes the outputs.
func (s *Stage) Run(ctx context.Context, rc *stages.RunContext) error {
	opts := s.opts
	opts.Workers = 0 // GOMAXPROCS; the records do not depend on it
	opts.Progress = rc.Progress
	if opts.Progress == nil {
		opts.Progress = progress.Nop{}
	}
	recs, err := corpus.Generate(ctx, opts)
	if err != nil {
		return fmt.Errorf("workloads: %w", err)
	}
	var train, test []corpus.Record
	for _, r := range recs {
		if r.Split == corpus.Test {
			test = append(test, r)
		} else {
			train = append(train, r)
		}
	}
	for _, f := range []struct {
		name string
		recs []corpus.Record
	}{{WorkloadsFile, recs}, {TrainFile, train}, {TestFile, test}} {
		var buf bytes.Buffer
		if err := corpus.Write(&buf, f.recs); err != nil {
			return fmt.Errorf("workloads: %s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(rc.Dir, f.name), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("workloads: %w", err)
		}
	}
	st := Summarize(recs)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("workloads: %w", err)
	}
	if err := os.WriteFile(filepath.Join(rc.Dir, StatsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("workloads: %w", err)
	}
	if rc.Log != nil {
		fmt.Fprintf(rc.Log, "%d workloads: %d train, %d test (%d perturbed)\n", st.Workloads, st.Splits[corpus.Train], st.Splits[corpus.Test], st.Perturbed[corpus.Train]+st.Perturbed[corpus.Test])
	}
	return nil
}

// Stats is stats.json: counts of the corpus by split ("train", "test").
type Stats struct {
	Workloads int                       `json:"workloads"`
	Splits    map[string]int            `json:"splits"`
	Families  map[string]map[string]int `json:"families"` // family -> split -> count
	Networks  map[string]map[string]int `json:"networks"` // network -> split -> count
	// Perturbed counts the perturbed workloads by split; Perturbations
	// counts the perturbations applied, by kind (scale, batch, kernel,
	// stride, family, dtype; "other" for a description not recognised).
	Perturbed     map[string]int `json:"perturbed"`
	Perturbations map[string]int `json:"perturbations"`
}

// Summarize counts records.
func Summarize(recs []corpus.Record) *Stats {
	st := &Stats{
		Workloads: len(recs),
		Splits:    map[string]int{corpus.Train: 0, corpus.Test: 0},
		Families:  map[string]map[string]int{},
		Networks:  map[string]map[string]int{},
		Perturbed: map[string]int{corpus.Train: 0, corpus.Test: 0}, Perturbations: map[string]int{},
	}
	add := func(m map[string]map[string]int, k, split string) {
		if m[k] == nil {
			m[k] = map[string]int{}
		}
		m[k][split]++
	}
	for _, r := range recs {
		st.Splits[r.Split]++
		add(st.Families, r.Spec.Family(), r.Split)
		add(st.Networks, r.Network, r.Split)
		if r.Perturbation != "" {
			st.Perturbed[r.Split]++
			for _, p := range strings.Split(r.Perturbation, "; ") {
				st.Perturbations[perturbationKind(p)]++
			}
		}
	}
	return st
}

// perturbationKind classifies one of kernels/corpus's perturbation
// descriptions: "CO x3/2" or "H,W x1/2" (scale), "N=4" (batch), "k=3,p=1"
// (kernel), "s=2" (stride), "family C2D->DIL" (family), "dtype=float16".
func perturbationKind(p string) string {
	switch {
	case strings.HasPrefix(p, "family "):
		return "family"
	case strings.HasPrefix(p, "dtype="):
		return "dtype"
	case strings.HasPrefix(p, "k="):
		return "kernel"
	case strings.HasPrefix(p, "s="):
		return "stride"
	case strings.Contains(p, " x"):
		return "scale"
	case strings.Contains(p, "="):
		return "batch"
	}
	return "other"
}
