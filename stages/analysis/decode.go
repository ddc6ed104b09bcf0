package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"dragonx/plots"
	"dragonx/stages"
)

var schema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "benches"},
		{Name: "sft"},
		{Name: "rl"},
		{Name: "harvest"},
		{Name: "scale"},
		{Name: "networks"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "style"}},
}

// The files each input group reads, by the name of the upstream output
// (the bench, sft, rl and harvest kinds' output names).
var (
	benchFiles   = []string{"summary", "attempts", "per_task"}
	sftFiles     = []string{"loss", "metrics"}
	rlFiles      = []string{"curves", "metrics"}
	harvestFiles = []string{"stats", "construction", "refinement"}
	networkFiles = []string{"results"}
)

// fileNames are the names the inputs are placed under in the working
// directory.
var fileNames = map[string]string{
	"summary": "summary.json", "attempts": "attempts.jsonl", "per_task": "per_task.csv",
	"loss": "loss.csv", "metrics": "metrics.json", "curves": "curves.csv",
	"stats": "stats.json", "construction": "construction.jsonl", "refinement": "refinement.jsonl",
	"results": "networks.json",
}

// nameRE is what a bench or rl name may be: it names input paths and
// figure files.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// styleBlock is the style block: plots.Style's fields.
type styleBlock struct {
	Width    *float64 `hcl:"width,optional"`
	Height   *float64 `hcl:"height,optional"`
	FontSize *float64 `hcl:"font_size,optional"`
	Palette  *string  `hcl:"palette,optional"`
}

// Spec is a decoded analysis stage's parameters.
type Spec struct {
	Scale string      `json:"scale"`
	Style plots.Style `json:"style"`
	// Benches, RL: the names of the bench and rl input groups, sorted.
	Benches []string `json:"benches"`
	RL      []string `json:"rl"`
	SFT     bool     `json:"sft"`
	Harvest bool     `json:"harvest"`
	// Networks are the names of the netbench input groups, sorted.
	Networks []string `json:"networks,omitempty"`
}

// Decode decodes an analysis stage body.
func (Kind) Decode(body hcl.Body, dc *stages.DecodeContext) (stages.Stage, hcl.Diagnostics) {
	content, diags := body.Content(schema)
	if content == nil {
		return nil, diags
	}
	s := &Stage{spec: Spec{Style: plots.DefaultStyle()}}
	eval := func(name string) (cty.Value, *hcl.Attribute, bool) {
		a, ok := content.Attributes[name]
		if !ok {
			return cty.NilVal, nil, false
		}
		v, d := a.Expr.Value(dc.Eval)
		diags = append(diags, d...)
		if d.HasErrors() {
			return cty.NilVal, a, false
		}
		return v, a, true
	}
	if v, a, ok := eval("scale"); ok {
		if v.IsNull() || !v.Type().Equals(cty.String) {
			diags = append(diags, diag("Invalid scale", `scale must be a string: the scale the experiment runs at (paper.hcl passes var.scale), shown beside every number of ours.`, a.Expr.Range()))
		} else {
			s.spec.Scale = v.AsString()
		}
	}
	if v, a, ok := eval("benches"); ok {
		names, d := s.addGroups(v, a, "bench", benchFiles, "stage.bench.out")
		diags = append(diags, d...)
		s.spec.Benches = names
	}
	if v, a, ok := eval("rl"); ok {
		names, d := s.addGroups(v, a, "rl", rlFiles, "stage.rl.out")
		diags = append(diags, d...)
		s.spec.RL = names
	}
	if v, a, ok := eval("sft"); ok {
		diags = append(diags, s.addGroup(v, a, "sft", "sft", sftFiles, "stage.sft.out")...)
		s.spec.SFT = true
	}
	if v, a, ok := eval("harvest"); ok {
		diags = append(diags, s.addGroup(v, a, "harvest", "harvest", harvestFiles, "stage.harvest.out")...)
		s.spec.Harvest = true
	}
	if v, a, ok := eval("networks"); ok && !emptyMap(v) {
		// An empty map names no netbench: paper.hcl passes the netbench
		// stage's instances, none when var.network_bench is off.
		names, d := s.addGroups(v, a, "netbench", networkFiles, `stage.netbench["networks"].out`)
		diags = append(diags, d...)
		s.spec.Networks = names
	}
	var styleSeen *hcl.Block
	for _, b := range content.Blocks {
		if styleSeen != nil {
			diags = append(diags, diag("Duplicate style block", fmt.Sprintf("An analysis stage has at most one style block; the first is at %s.", styleSeen.DefRange), b.DefRange))
			continue
		}
		styleSeen = b
		diags = append(diags, s.decodeStyle(b, dc.Eval)...)
	}
	if !diags.HasErrors() && len(s.inputs) == 0 {
		diags = append(diags, diag("Nothing to analyse", "An analysis stage needs at least one of benches, sft, rl, harvest or networks.", dc.DeclRange))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	sort.Slice(s.inputs, func(i, j int) bool { return s.inputs[i].Name < s.inputs[j].Name })
	// The inputs enter the key through their names (which carry the bench
	// and rl names) and digests; scale and style are parameters.
	for _, p := range []struct {
		name string
		v    any
	}{{"scale", s.spec.Scale}, {"style", s.spec.Style}} {
		prm, err := stages.GoParam(p.name, p.v)
		if err != nil {
			return nil, append(diags, diag("Invalid "+p.name, err.Error()+".", dc.DeclRange))
		}
		s.params = append(s.params, prm)
	}
	return s, diags
}

// emptyMap says whether v is a known, empty map or object.
func emptyMap(v cty.Value) bool {
	t := v.Type()
	return v.IsKnown() && !v.IsNull() && (t.IsMapType() || t.IsObjectType()) && v.LengthInt() == 0
}

// addGroups decodes a map of named input groups (benches, rl).
func (s *Stage) addGroups(v cty.Value, a *hcl.Attribute, what string, files []string, example string) ([]string, hcl.Diagnostics) {
	t := v.Type()
	if v.IsNull() || !(t.IsObjectType() || t.IsMapType()) {
		return nil, hcl.Diagnostics{diag("Invalid "+a.Name, fmt.Sprintf("%s must be a map from a name to the outputs of a %s stage, e.g. { main = %s }.", a.Name, what, example), a.Expr.Range())}
	}
	var diags hcl.Diagnostics
	var names []string
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		name := k.AsString()
		if !nameRE.MatchString(name) {
			diags = append(diags, diag("Invalid "+a.Name, fmt.Sprintf("%s name %q: a name must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit (it names files).", what, name), a.Expr.Range()))
			continue
		}
		names = append(names, name)
		diags = append(diags, s.addGroup(ev, a, what+"/"+name, what, files, example)...)
	}
	if len(names) == 0 && !diags.HasErrors() {
		diags = append(diags, diag("Invalid "+a.Name, fmt.Sprintf("%s is empty; name at least one %s stage's outputs, e.g. { main = %s }.", a.Name, what, example), a.Expr.Range()))
	}
	sort.Strings(names)
	return names, diags
}

// addGroup decodes one input group: an object holding the files' outputs
// (a stage's out object, or an object written out), each an upstream
// output or a local path. Other attributes of the object (a stage's other
// outputs) are ignored.
func (s *Stage) addGroup(v cty.Value, a *hcl.Attribute, dir, what string, files []string, example string) hcl.Diagnostics {
	t := v.Type()
	bad := func(detail string) hcl.Diagnostics {
		return hcl.Diagnostics{diag("Invalid "+a.Name, detail, a.Expr.Range())}
	}
	if v.IsNull() || !(t.IsObjectType() || t.IsMapType()) {
		return bad(fmt.Sprintf("%s: want the outputs of a %s stage (%s) or an object with %s.", dir, what, example, strings.Join(files, ", ")))
	}
	var diags hcl.Diagnostics
	for _, f := range files {
		var ev cty.Value
		switch {
		case t.IsObjectType() && t.HasAttribute(f):
			ev = v.GetAttr(f)
		case t.IsMapType() && v.LengthInt() > 0 && v.HasIndex(cty.StringVal(f)).True():
			ev = v.Index(cty.StringVal(f))
		default:
			diags = append(diags, bad(fmt.Sprintf("%s has no %s: want the outputs of a %s stage (%s) or an object with %s.", dir, f, what, example, strings.Join(files, ", ")))...)
			continue
		}
		in := stages.Input{Name: dir + "/" + fileNames[f], Range: a.Expr.Range()}
		if ref, ok := stages.AsArtifact(ev); ok {
			in.Ref = &ref
		} else if !ev.IsNull() && ev.Type().Equals(cty.String) && ev.AsString() != "" {
			in.Local = ev.AsString()
		} else {
			diags = append(diags, bad(fmt.Sprintf("%s.%s must be an upstream output (%s.%s) or a local path string.", dir, f, example, f))...)
			continue
		}
		s.inputs = append(s.inputs, in)
	}
	return diags
}

func (s *Stage) decodeStyle(b *hcl.Block, ev *hcl.EvalContext) hcl.Diagnostics {
	var sb styleBlock
	diags := gohcl.DecodeBody(b.Body, ev, &sb)
	if diags.HasErrors() {
		return diags
	}
	st := plots.DefaultStyle()
	if sb.Width != nil {
		st.Width = *sb.Width
	}
	if sb.Height != nil {
		st.Height = *sb.Height
	}
	if sb.FontSize != nil {
		st.FontSize = *sb.FontSize
	}
	if sb.Palette != nil {
		st.Palette = *sb.Palette
	}
	if err := st.Validate(); err != nil {
		return hcl.Diagnostics{diag("Invalid style block", fmt.Sprintf("style: %v.", err), b.DefRange)}
	}
	s.spec.Style = st
	return nil
}

func diag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}
