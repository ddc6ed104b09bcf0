package harvest

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"dragonx/kernels/dataset"
	"dragonx/stages"
)

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "workloads", Required: true},
		{Name: "target"},
		{Name: "trials", Required: true},
		{Name: "seed"},
		{Name: "shards"},
		{Name: "noise"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "search"}, {Type: "dataset"}},
}

var searchSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "cost_model"},
		{Name: "numeric"},
		{Name: "population"},
		{Name: "trials_per_round"},
		{Name: "generations"},
		{Name: "eps_greedy"},
	},
}

var datasetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "latency_source"},
		{Name: "min_construction"},
		{Name: "min_records"},
		{Name: "band_low"},
		{Name: "band_high"},
		{Name: "min_speedup"},
		{Name: "pairs"},
		{Name: "construction"},
		{Name: "construction_within"},
		{Name: "test_construction"},
		{Name: "test_refinement"},
	},
}

// decoder evaluates attributes into Go values, collecting diagnostics that
// point at the attribute's expression.
type decoder struct {
	eval  *hcl.EvalContext
	diags hcl.Diagnostics
}

func (d *decoder) fail(a *hcl.Attribute, detail string) {
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + a.Name, Detail: detail, Subject: a.Expr.Range().Ptr()})
}

// value evaluates a; ok is false (with a diagnostic) when it fails, is null
// or is not known.
func (d *decoder) value(a *hcl.Attribute, want cty.Type, what string) (cty.Value, bool) {
	v, diags := a.Expr.Value(d.eval)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		d.fail(a, fmt.Sprintf("%s is null; write %s.", a.Name, what))
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		d.fail(a, fmt.Sprintf("%s is not known until the experiment runs; write %s.", a.Name, what))
		return cty.NilVal, false
	}
	if _, isRef := stages.AsArtifact(v); isRef {
		d.fail(a, fmt.Sprintf("%s cannot be a stage output; write %s.", a.Name, what))
		return cty.NilVal, false
	}
	c, err := convert.Convert(v, want)
	if err != nil {
		d.fail(a, fmt.Sprintf("%s must be %s, not %s.", a.Name, what, v.Type().FriendlyName()))
		return cty.NilVal, false
	}
	return c, true
}

// int decodes an integer attribute in [lo, hi] (def when absent).
func (d *decoder) int(attrs hcl.Attributes, name string, def, lo, hi int64) int64 {
	a, ok := attrs[name]
	if !ok {
		return def
	}
	what := "a whole number"
	switch {
	case lo > math.MinInt64 && hi < math.MaxInt64:
		what += fmt.Sprintf(" from %d to %d", lo, hi)
	case lo > math.MinInt64:
		what += fmt.Sprintf(" from %d up", lo)
	}
	v, ok := d.value(a, cty.Number, what)
	if !ok {
		return def
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || i < lo || i > hi {
		d.fail(a, fmt.Sprintf("%s is %s; want %s.", name, bf.Text('g', 10), what))
		return def
	}
	return i
}

// float decodes a number attribute that check accepts ("" when it does).
func (d *decoder) float(attrs hcl.Attributes, name string, def float64, what string, check func(float64) bool) float64 {
	a, ok := attrs[name]
	if !ok {
		return def
	}
	v, ok := d.value(a, cty.Number, what)
	if !ok {
		return def
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) || !check(f) {
		d.fail(a, fmt.Sprintf("%s is %s; want %s.", name, v.AsBigFloat().Text('g', 10), what))
		return def
	}
	return f
}

func (d *decoder) str(attrs hcl.Attributes, name, def, what string) (string, *hcl.Attribute) {
	a, ok := attrs[name]
	if !ok {
		return def, nil
	}
	v, ok := d.value(a, cty.String, what)
	if !ok {
		return def, nil
	}
	return v.AsString(), a
}

func (d *decoder) bool(attrs hcl.Attributes, name string, def bool) bool {
	a, ok := attrs[name]
	if !ok {
		return def
	}
	v, ok := d.value(a, cty.Bool, "true or false")
	if !ok {
		return def
	}
	return v.True()
}

// Decode decodes a harvest stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return nil, diags
	}
	d := &decoder{eval: dc.Eval, diags: diags}
	s := &Stage{}
	at := content.Attributes

	// workloads: an upstream output or a local file.
	wa := at["workloads"]
	wv, wdiags := wa.Expr.Value(dc.Eval)
	d.diags = append(d.diags, wdiags...)
	if !wdiags.HasErrors() {
		s.input = stages.Input{Name: inputWorkloads, Range: wa.Expr.Range()}
		if ref, ok := stages.AsArtifact(wv); ok {
			s.input.Ref = &ref
		} else if !wv.IsNull() && wv.IsWhollyKnown() && wv.Type() == cty.String && wv.AsString() != "" {
			s.input.Local = wv.AsString()
		} else {
			d.fail(wa, "workloads must be an upstream output (stage.workloads.out.workloads) or the path of a local workloads file (kernels/corpus records, one JSON object a line).")
		}
	}

	p := &s.params
	target, ta := d.str(at, "target", DefaultTarget, "a target name: "+strings.Join(Targets(), ", "))
	if ta != nil && !slices.Contains(Targets(), target) {
		d.fail(ta, fmt.Sprintf("unknown target %q; want one of %s (cuda needs a GPU).", target, strings.Join(Targets(), ", ")))
	}
	p.Target = target
	p.Trials = int(d.int(at, "trials", 64, 1, 1<<30))
	p.Seed = d.int(at, "seed", DefaultSeed, math.MinInt64, math.MaxInt64)
	s.shards = int(d.int(at, "shards", DefaultShards, 1, 4096))
	p.Noise = d.float(at, "noise", DefaultNoise, "a σ from 0 to 1", func(x float64) bool { return x >= 0 && x <= 1 })
	if p.Target == TargetCUDA {
		if a, ok := at["noise"]; ok {
			d.fail(a, "noise is the model targets' measurement noise; the cuda target measures, so leave it out.")
		}
		p.Noise = 0
	}

	p.Search = DefaultSearch()
	s.dataset = datasetFrom(dataset.DefaultOptions())
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if prev, dup := seen[b.Type]; dup {
			d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate " + b.Type + " block",
				Detail: fmt.Sprintf("A harvest stage has at most one %s block; the first is at %s.", b.Type, prev.DefRange), Subject: b.DefRange.Ptr()})
			continue
		}
		seen[b.Type] = b
		switch b.Type {
		case "search":
			d.decodeSearch(b, &p.Search)
		case "dataset":
			d.decodeDataset(b, &s.dataset)
		}
	}
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	for _, prm := range []struct {
		name string
		v    any
	}{{"target", p.Target}, {"trials", p.Trials}, {"seed", p.Seed}, {"noise", p.Noise}, {"search", p.Search}, {"dataset", s.dataset}} {
		gp, err := stages.GoParam(prm.name, prm.v)
		if err != nil {
			return nil, append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + prm.name, Detail: err.Error() + ".", Subject: dc.DeclRange.Ptr()})
		}
		s.key = append(s.key, gp)
	}
	wp, err := stages.CtyParam("workloads", wv)
	if err != nil {
		return nil, append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid workloads", Detail: err.Error() + ".", Subject: wa.Expr.Range().Ptr()})
	}
	s.key = append([]stages.Param{wp}, s.key...)
	if err := p.Check(); err != nil {
		// Every field was checked above; this is a backstop.
		return nil, append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid harvest stage", Detail: err.Error() + ".", Subject: dc.DeclRange.Ptr()})
	}
	return s, d.diags
}

func (d *decoder) decodeSearch(b *hcl.Block, o *SearchOptions) {
	content, diags := b.Body.Content(searchSchema)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return
	}
	at := content.Attributes
	def := DefaultSearch()
	m, ma := d.str(at, "cost_model", def.CostModel, "random, analytic or gbt")
	if ma != nil && m != ModelRandom && m != ModelAnalytic && m != ModelGBT {
		d.fail(ma, fmt.Sprintf("unknown cost model %q; want random (uniform scores), analytic (the target's model without noise) or gbt (gradient-boosted trees trained online).", m))
	}
	o.CostModel = m
	o.Numeric = d.bool(at, "numeric", def.Numeric)
	// Zero takes TVM's default, as in search.Options.
	orDef := func(v int64, def int) int {
		if v == 0 {
			return def
		}
		return int(v)
	}
	o.Population = orDef(d.int(at, "population", 0, 0, 1<<20), def.Population)
	o.TrialsPerRound = orDef(d.int(at, "trials_per_round", 0, 0, 1<<20), def.TrialsPerRound)
	o.Generations = orDef(d.int(at, "generations", 0, 0, 1000), def.Generations)
	o.EpsGreedy = d.float(at, "eps_greedy", 0, "a probability from 0 to 1 (0: the default 0.05)", func(x float64) bool { return x >= 0 && x <= 1 })
	if o.EpsGreedy == 0 {
		o.EpsGreedy = def.EpsGreedy
	}
}

func (d *decoder) decodeDataset(b *hcl.Block, o *DatasetOptions) {
	content, diags := b.Body.Content(datasetSchema)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return
	}
	at := content.Attributes
	maxInt := int64(math.MaxInt32)
	anyF := func(float64) bool { return true }
	// Each attribute is decoded, then checked by dataset.Options.Check on
	// the defaults with that attribute alone changed, so that a diagnostic
	// points at the attribute at fault; the whole block is checked last.
	type field struct {
		name string
		set  func(*DatasetOptions)
	}
	var fields []field
	intField := func(name string, p func(*DatasetOptions) *int) {
		if _, ok := at[name]; !ok {
			return
		}
		v := int(d.int(at, name, int64(*p(o)), math.MinInt32, maxInt))
		*p(o) = v
		fields = append(fields, field{name, func(x *DatasetOptions) { *p(x) = v }})
	}
	floatField := func(name string, p func(*DatasetOptions) *float64) {
		if _, ok := at[name]; !ok {
			return
		}
		v := d.float(at, name, *p(o), "a number", anyF)
		*p(o) = v
		fields = append(fields, field{name, func(x *DatasetOptions) { *p(x) = v }})
	}
	n := len(d.diags)
	if ls, la := d.str(at, "latency_source", o.LatencySource, `a latency source label ("model:h100", "measured"), or "" for each workload's most common`); la != nil {
		o.LatencySource = ls
	}
	intField("min_construction", func(x *DatasetOptions) *int { return &x.MinConstruction })
	intField("min_records", func(x *DatasetOptions) *int { return &x.MinRecords })
	floatField("band_low", func(x *DatasetOptions) *float64 { return &x.BandLow })
	floatField("band_high", func(x *DatasetOptions) *float64 { return &x.BandHigh })
	floatField("min_speedup", func(x *DatasetOptions) *float64 { return &x.MinSpeedup })
	intField("pairs", func(x *DatasetOptions) *int { return &x.Pairs })
	intField("construction", func(x *DatasetOptions) *int { return &x.Construction })
	floatField("construction_within", func(x *DatasetOptions) *float64 { return &x.ConstructionWithin })
	intField("test_construction", func(x *DatasetOptions) *int { return &x.TestConstruction })
	intField("test_refinement", func(x *DatasetOptions) *int { return &x.TestRefinement })
	if len(d.diags) > n {
		return
	}
	for _, f := range fields {
		one := datasetFrom(dataset.DefaultOptions())
		f.set(&one)
		opts := one.Options(nil)
		if err := opts.Check(); err != nil {
			d.fail(at[f.name], strings.TrimPrefix(err.Error(), "dataset: ")+".")
		}
	}
	if len(d.diags) > n {
		return
	}
	opts := o.Options(nil)
	if err := opts.Check(); err != nil {
		subject := b.DefRange.Ptr()
		for _, name := range []string{"band_high", "band_low"} {
			if a, ok := at[name]; ok {
				subject = a.Expr.Range().Ptr()
				break
			}
		}
		d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid dataset block", Detail: strings.TrimPrefix(err.Error(), "dataset: ") + ".", Subject: subject})
	}
}
