package stages

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"dragonx/internal/dag"
	"dragonx/internal/safeio"
)

// Config is a loaded experiment: its variables with their final values, and
// its stage instances decoded by their kinds, in a stable dependency order.
type Config struct {
	// File is the experiment file as given; Dir its directory (absolute).
	File string
	Dir  string
	// Files holds every parsed source, for diagnostic snippets.
	Files map[string]*hcl.File

	Variables map[string]*Variable
	Locals    map[string]cty.Value
	// Instances are in execution order: every instance after its deps.
	Instances []*Instance
	// Graph has an edge dep -> instance, with vertices named Addr.String().
	Graph *dag.Graph
	// Cache holds the experiment's cache block, if any.
	Cache *CacheBlock
	// Executor is the experiment's default executor block, if any: where
	// the shards of sharded stages run unless a stage has its own.
	Executor *ExecutorSpec

	byAddr map[string]*Instance
	// stageBase is the evaluation context of stage envelopes and bodies
	// (variables, locals, functions), built once when they are final.
	stageBase *hcl.EvalContext
}

// Instance is one stage instance (a stage, or one for_each element of it).
type Instance struct {
	Addr      Addr
	Kind      Kind
	Stage     Stage
	DeclRange hcl.Range
	// Deps are the instances this one references, sorted by address.
	Deps []Addr
	// Executor is the stage's own executor block, or nil (then the
	// experiment's applies: Config.ExecutorOf). Never part of the key.
	Executor *ExecutorSpec
}

// Instance returns the instance at a, or nil.
func (c *Config) Instance(a Addr) *Instance { return c.byAddr[a.String()] }

// Variable is a declared input variable.
type Variable struct {
	Name        string
	Type        cty.Type // cty.DynamicPseudoType when no type is given
	Default     cty.Value
	Description string
	DeclRange   hcl.Range
	// Value is the final value: a -var flag, else a -var-file entry, else the
	// default.
	Value cty.Value

	hasDefault  bool // a default was written (even if it was invalid)
	validations []validation
}

// validation is a `validation { condition, error_message }` block of a
// variable: the condition, over var.<the variable> and the functions, must
// hold for the variable's final value.
type validation struct {
	condition hcl.Expression
	message   string
}

// CacheBlock is the experiment's `cache { ... }` block.
type CacheBlock struct {
	Remote    string
	DeclRange hcl.Range
}

// LoadOptions are the inputs of Load besides the file.
type LoadOptions struct {
	// Vars are "name=value" assignments from -var flags, in order.
	Vars []string
	// VarFiles are paths of HCL files of "name = value" lines (-var-file).
	VarFiles []string
}

var topSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "stage", LabelNames: []string{"name"}},
		{Type: "cache"},
		executorBlockSchema,
	},
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

var stageEnvelopeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind", Required: true},
		{Name: "for_each"},
	},
	Blocks: []hcl.BlockHeaderSchema{executorBlockSchema},
}

var cacheSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "remote"},
	},
}

// stageDecl is a stage block before decoding: the envelope and the body
// that its kind will decode.
type stageDecl struct {
	name      string
	kind      Kind
	block     *hcl.Block
	body      hcl.Body // the block body without kind, for_each and executor
	executor  *hcl.Block
	forEach   map[string]cty.Value
	hasEach   bool
	refs      []stageRef
	declRange hcl.Range
	broken    bool // the envelope had errors; do not decode
}

// stageRef is one reference from a stage body to another stage.
type stageRef struct {
	target string
	key    string
	keyed  bool   // a specific instance
	output string // "" when the traversal stops before an output name
	rng    hcl.Range
}

// Load parses and decodes the experiment file at path. All problems come
// back as diagnostics, as many as can be found in one pass; a nil *Config
// means the errors prevented decoding.
func Load(path string, opts LoadOptions) (*Config, hcl.Diagnostics) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, hcl.Diagnostics{sourceless("Cannot resolve experiment path", err.Error())}
	}
	src, err := safeio.ReadFile(abs, safeio.MaxSource, safeio.Options{})
	if err != nil {
		return nil, hcl.Diagnostics{sourceless("Cannot read experiment file", fmt.Sprintf("%v.", err))}
	}
	return LoadSource(path, src, opts)
}

// LoadSource is Load with the file's bytes already read; path names the
// file in diagnostics and anchors relative paths.
func LoadSource(path string, src []byte, opts LoadOptions) (*Config, hcl.Diagnostics) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, hcl.Diagnostics{sourceless("Cannot resolve experiment path", err.Error())}
	}
	parser := hclparse.NewParser()
	c := &Config{
		File:      path,
		Dir:       filepath.Dir(abs),
		Variables: map[string]*Variable{},
		Locals:    map[string]cty.Value{},
		byAddr:    map[string]*Instance{},
		Graph:     &dag.Graph{},
	}
	defer func() { c.Files = parser.Files() }()
	if d := checkNesting(src, path, hcl.InitialPos); d != nil {
		return c, hcl.Diagnostics{d}
	}
	f, diags := parser.ParseHCL(src, path)
	if diags.HasErrors() {
		c.Files = parser.Files()
		return c, diags
	}
	content, d := f.Body.Content(topSchema)
	diags = append(diags, d...)

	// Phase 1: variables and their values.
	diags = append(diags, c.decodeVariables(content.Blocks)...)
	diags = append(diags, c.assignVariables(parser, opts)...)
	if !diags.HasErrors() {
		diags = append(diags, c.checkValidations()...)
	}
	// Phase 2: locals.
	diags = append(diags, c.decodeLocals(content.Blocks)...)
	// Phase 3: cache and executor blocks.
	diags = append(diags, c.decodeCache(content.Blocks)...)
	diags = append(diags, c.decodeDefaultExecutor(content.Blocks)...)
	if diags.HasErrors() {
		// Stages depend on variables and locals; decoding them now would
		// report consequences rather than causes.
		c.Files = parser.Files()
		sortDiags(diags)
		return c, diags
	}
	// Phase 4: stage envelopes, references, for_each. Variables and locals
	// are final: one evaluation context serves every stage.
	c.stageBase = c.baseEval()
	decls, d := c.decodeStageEnvelopes(content.Blocks)
	diags = append(diags, d...)
	// Phase 5: decode each stage with its kind, in dependency order.
	diags = append(diags, c.decodeStages(decls)...)
	sortDiags(diags)
	return c, diags
}

// sortDiags orders diagnostics by position (those without one first), so
// the same file always gives the same text.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a == nil && b != nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
}

func (c *Config) baseEval() *hcl.EvalContext {
	vars := map[string]cty.Value{}
	for n, v := range c.Variables {
		vars[n] = v.Value
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":   cty.ObjectVal(vars),
			"local": cty.ObjectVal(c.Locals),
		},
		Functions: Functions(c.Dir),
	}
}

func (c *Config) decodeVariables(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks.OfType("variable") {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid variable name",
				Detail:   fmt.Sprintf("%q is not a valid name. A name starts with a letter or underscore and may contain letters, digits, underscores and dashes.", name),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		if prev, dup := c.Variables[name]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate variable",
				Detail:   fmt.Sprintf("A variable named %q was already declared at %s. Variable names must be unique; rename or remove one of them.", name, prev.DeclRange),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		v := &Variable{Name: name, Type: cty.DynamicPseudoType, DeclRange: b.DefRange}
		content, d := b.Body.Content(variableSchema)
		diags = append(diags, d...)
		if a, ok := content.Attributes["type"]; ok {
			t, d := typeexpr.TypeConstraint(a.Expr)
			diags = append(diags, d...)
			if !d.HasErrors() {
				v.Type = t
			}
		}
		if a, ok := content.Attributes["description"]; ok {
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if !d.HasErrors() {
				if val.Type() != cty.String || val.IsNull() {
					diags = append(diags, attrError(a, "Invalid description", "The description must be a string."))
				} else {
					v.Description = val.AsString()
				}
			}
		}
		if a, ok := content.Attributes["default"]; ok {
			v.hasDefault = true
			val, d := a.Expr.Value(&hcl.EvalContext{Functions: Functions(c.Dir)})
			diags = append(diags, d...)
			if !d.HasErrors() {
				cv, err := convertTo(val, v.Type)
				if err != nil {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid default value for variable",
						Detail:   fmt.Sprintf("The default of variable %q does not match its type %s: %v.", name, typeexpr.TypeString(v.Type), err),
						Subject:  a.Expr.Range().Ptr(),
					})
				} else {
					v.Default = cv
				}
			}
		}
		for _, vb := range content.Blocks.OfType("validation") {
			vc, d := vb.Body.Content(validationSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			msgAttr := vc.Attributes["error_message"]
			msg, d := msgAttr.Expr.Value(nil)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			if msg.IsNull() || msg.Type() != cty.String || msg.AsString() == "" {
				diags = append(diags, attrError(msgAttr, "Invalid error_message", "The error message must be a non-empty string."))
				continue
			}
			v.validations = append(v.validations, validation{condition: vc.Attributes["condition"].Expr, message: msg.AsString()})
		}
		c.Variables[name] = v
	}
	return diags
}

// checkValidations evaluates every variable's validation blocks against its
// final value.
func (c *Config) checkValidations() hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(c.Variables))
	for n := range c.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := c.Variables[n]
		if len(v.validations) == 0 || v.Value == cty.NilVal || !v.Value.IsWhollyKnown() {
			continue
		}
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{n: v.Value})},
			Functions: Functions(c.Dir),
		}
		for _, val := range v.validations {
			ok, d := val.condition.Value(ctx)
			if d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			if ok.IsNull() || ok.Type() != cty.Bool || !ok.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation condition", Detail: "The condition must be true or false.", Subject: val.condition.Range().Ptr()})
				continue
			}
			if ok.False() {
				shown, _ := canonicalCty(v.Value)
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid value for variable",
					Detail:   fmt.Sprintf("Variable %q is %s: %s", n, shown, val.message),
					Subject:  val.condition.Range().Ptr(),
				})
				// Unknown from here on, so that what depends on it reports
				// the cause, not its consequences.
				v.Value = cty.DynamicVal
			}
		}
	}
	return diags
}

func (c *Config) assignVariables(parser *hclparse.Parser, opts LoadOptions) hcl.Diagnostics {
	var diags hcl.Diagnostics
	set := map[string]cty.Value{}
	for _, vf := range opts.VarFiles {
		src, err := safeio.ReadFile(vf, safeio.MaxSource, safeio.Options{})
		if err != nil {
			diags = append(diags, sourceless("Cannot read variable file", fmt.Sprintf("%v.", err)))
			continue
		}
		if d := checkNesting(src, vf, hcl.InitialPos); d != nil {
			diags = append(diags, d)
			continue
		}
		f, d := parser.ParseHCL(src, vf)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		names := make([]string, 0, len(attrs))
		for n := range attrs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			a := attrs[n]
			v, ok := c.Variables[n]
			if !ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Undeclared variable",
					Detail:   fmt.Sprintf("The variable file sets %q, but the experiment declares no such variable.%s", n, c.declaredVarsHint(n)),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			val, d := a.Expr.Value(nil)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			cv, err := convertTo(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid value for variable",
					Detail:   fmt.Sprintf("Variable %q has type %s: %v.", n, typeexpr.TypeString(v.Type), err),
					Subject:  a.Expr.Range().Ptr(),
				})
				continue
			}
			set[n] = cv
		}
	}
	for _, kv := range opts.Vars {
		n, raw, ok := strings.Cut(kv, "=")
		if !ok {
			diags = append(diags, sourceless("Invalid -var option", fmt.Sprintf("The option -var %q is not of the form NAME=VALUE.", kv)))
			continue
		}
		v, ok := c.Variables[n]
		if !ok {
			diags = append(diags, sourceless("Undeclared variable", fmt.Sprintf("-var sets %q, but the experiment declares no such variable.%s", n, c.declaredVarsHint(n))))
			continue
		}
		val, err := parseVarFlag(raw, v.Type)
		if err != nil {
			diags = append(diags, sourceless("Invalid value for variable", fmt.Sprintf("-var %s: variable %q has type %s: %v.", kv, n, typeexpr.TypeString(v.Type), err)))
			continue
		}
		set[n] = val
	}
	for n, v := range c.Variables {
		switch val, ok := set[n]; {
		case ok:
			v.Value = val
		case v.Default != cty.NilVal:
			v.Value = v.Default
		case v.hasDefault:
			// The default was reported as invalid already.
			v.Value = cty.DynamicVal
		default:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "No value for required variable",
				Detail:   fmt.Sprintf("Variable %q has no default. Give it one, or set it with -var %s=VALUE or in a -var-file.", n, n),
				Subject:  v.DeclRange.Ptr(),
			})
			v.Value = cty.DynamicVal
		}
	}
	return diags
}

func (c *Config) declaredVarsHint(given string) string {
	names := make([]string, 0, len(c.Variables))
	for n := range c.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := suggest(given, names); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	if len(names) == 0 {
		return " It declares no variables."
	}
	return " Declared variables: " + strings.Join(names, ", ") + "."
}

// parseVarFlag turns the text of a -var value into a value of type t:
// strings and untyped variables take the text as is; other types parse it
// as an HCL expression (a number, true, ["a", "b"], {k = 1}).
func parseVarFlag(raw string, t cty.Type) (cty.Value, error) {
	if t == cty.String || t == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	if d := checkNesting([]byte(raw), "-var", hcl.InitialPos); d != nil {
		return cty.NilVal, fmt.Errorf("cannot parse the value: it nests more than %d levels deep", MaxNesting)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "-var", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot parse %q: %s", raw, diags[0].Detail)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot evaluate %q: %s", raw, diags[0].Detail)
	}
	return convertTo(val, t)
}

func (c *Config) decodeLocals(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	attrs := map[string]*hcl.Attribute{}
	for _, b := range blocks.OfType("locals") {
		as, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for n, a := range as {
			if prev, dup := attrs[n]; dup {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate local value",
					Detail:   fmt.Sprintf("A local value named %q was already defined at %s. Local names must be unique.", n, prev.NameRange),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			attrs[n] = a
		}
	}
	var g dag.Graph
	for n, a := range attrs {
		g.Add(n)
		for _, t := range a.Expr.Variables() {
			switch t.RootName() {
			case "local":
				if len(t) < 2 {
					continue
				}
				ta, ok := t[1].(hcl.TraverseAttr)
				if !ok {
					continue
				}
				if _, ok := attrs[ta.Name]; !ok {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Reference to undeclared local value",
						Detail:   fmt.Sprintf("No local value named %q is defined.", ta.Name),
						Subject:  t.SourceRange().Ptr(),
					})
					continue
				}
				g.Connect(ta.Name, n)
			case "stage":
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Stage reference in a local value",
					Detail:   "Local values are evaluated before any stage runs, so they cannot refer to stage outputs. Refer to the stage output directly in the stage that needs it.",
					Subject:  t.SourceRange().Ptr(),
				})
			}
		}
	}
	for _, cyc := range g.Cycles() {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Dependency cycle between local values",
			Detail:   fmt.Sprintf("The local values refer to each other in a cycle: %s. Break the cycle.", dag.FormatCycle(prefixAll("local.", cyc), 10)),
			Subject:  attrs[cyc[0]].NameRange.Ptr(),
		})
	}
	if diags.HasErrors() {
		return diags
	}
	order, _ := g.TopoSort()
	for _, n := range order {
		v, d := attrs[n].Expr.Value(c.baseEval())
		diags = append(diags, d...)
		if d.HasErrors() {
			v = cty.DynamicVal
		}
		c.Locals[n] = v
	}
	return diags
}

func (c *Config) decodeCache(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks.OfType("cache") {
		if c.Cache != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate cache block",
				Detail:   fmt.Sprintf("A cache block was already given at %s. Merge the two.", c.Cache.DeclRange),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		cb := &CacheBlock{DeclRange: b.DefRange}
		content, d := b.Body.Content(cacheSchema)
		diags = append(diags, d...)
		if a, ok := content.Attributes["remote"]; ok {
			v, d := a.Expr.Value(c.baseEval())
			diags = append(diags, d...)
			if !d.HasErrors() {
				if v.IsNull() || v.Type() != cty.String {
					diags = append(diags, attrError(a, "Invalid cache remote", "The remote must be a URL string, such as \"https://cache.example.com/dragonx\" or \"file:///mnt/team/dragonx-cache\"."))
				} else {
					cb.Remote = v.AsString()
				}
			}
		}
		c.Cache = cb
	}
	return diags
}

func (c *Config) decodeDefaultExecutor(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var first *hcl.Block
	for _, b := range blocks.OfType("executor") {
		if first != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate executor block",
				Detail:   fmt.Sprintf("The experiment's default executor was already given at %s. Keep one; a stage may override it with an executor block of its own.", first.DefRange),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		first = b
		spec, d := decodeExecutor(b, c.baseEval(), c.Dir)
		diags = append(diags, d...)
		if spec != nil && !d.HasErrors() {
			c.Executor = spec
		}
	}
	return diags
}

func (c *Config) decodeStageEnvelopes(blocks hcl.Blocks) (map[string]*stageDecl, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	decls := map[string]*stageDecl{}
	for _, b := range blocks.OfType("stage") {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid stage name",
				Detail:   fmt.Sprintf("%q is not a valid stage name. A name starts with a letter or underscore and may contain letters, digits, underscores and dashes.", name),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		if len(name) > MaxNameLength {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Stage name too long",
				Detail:   fmt.Sprintf("The stage name has %d characters; the limit is %d, because the name becomes a directory name under out/ and file systems refuse long names. Choose a shorter name.", len(name), MaxNameLength),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		if prev, dup := decls[name]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate stage name",
				Detail:   fmt.Sprintf("A stage named %q was already declared at %s. Stage names must be unique; rename one of them (use for_each for several instances of one stage).", name, prev.declRange),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		sd := &stageDecl{name: name, block: b, declRange: b.DefRange}
		decls[name] = sd
		content, remain, d := b.Body.PartialContent(stageEnvelopeSchema)
		diags = append(diags, d...)
		sd.body = remain
		if d.HasErrors() {
			sd.broken = true
		}
		if a, ok := content.Attributes["kind"]; ok {
			k, d := c.decodeKind(a)
			diags = append(diags, d...)
			if k == nil {
				sd.broken = true
			}
			sd.kind = k
		}
		for _, eb := range content.Blocks.OfType("executor") {
			if sd.executor != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate executor block",
					Detail:   fmt.Sprintf("Stage %q already has an executor block at %s. A stage runs on one executor.", name, sd.executor.DefRange),
					Subject:  eb.DefRange.Ptr(),
				})
				sd.broken = true
				continue
			}
			sd.executor = eb
		}
		if a, ok := content.Attributes["for_each"]; ok {
			fe, d := c.decodeForEach(a)
			diags = append(diags, d...)
			if d.HasErrors() {
				sd.broken = true
			}
			sd.forEach, sd.hasEach = fe, true
		}
	}
	// References, now that every stage name is known (in source order, so
	// that diagnostics come out in a stable order).
	for _, b := range blocks.OfType("stage") {
		sd := decls[b.Labels[0]]
		if sd == nil || sd.block != b {
			continue
		}
		refs, d := collectRefs(sd, decls)
		diags = append(diags, d...)
		sd.refs = refs
		if d.HasErrors() {
			sd.broken = true
		}
	}
	return decls, diags
}

func (c *Config) decodeKind(a *hcl.Attribute) (Kind, hcl.Diagnostics) {
	v, diags := a.Expr.Value(c.stageBase)
	if diags.HasErrors() {
		return nil, diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return nil, hcl.Diagnostics{attrError(a, "Invalid stage kind", "The kind must be a string naming a stage kind, such as \"exec\".")}
	}
	name := v.AsString()
	k, ok := LookupKind(name)
	if !ok {
		detail := fmt.Sprintf("There is no stage kind %q.", name)
		if s := suggest(name, KindNames()); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		detail += " Available kinds: " + strings.Join(KindNames(), ", ") + "."
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unknown stage kind",
			Detail:   detail,
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	return k, nil
}

func (c *Config) decodeForEach(a *hcl.Attribute) (map[string]cty.Value, hcl.Diagnostics) {
	for _, t := range a.Expr.Variables() {
		if t.RootName() == "stage" {
			return nil, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Invalid for_each",
				Detail:   "for_each decides which instances exist before anything runs, so it cannot depend on stage outputs. Use variables, locals or literal values.",
				Subject:  t.SourceRange().Ptr(),
			}}
		}
	}
	v, diags := a.Expr.Value(c.stageBase)
	if diags.HasErrors() {
		return nil, diags
	}
	bad := func(detail string) (map[string]cty.Value, hcl.Diagnostics) {
		return nil, hcl.Diagnostics{attrError(a, "Invalid for_each", detail+" for_each takes a map (each.key, each.value) or a set or list of distinct strings (each.key = each.value = the string).")}
	}
	if v.IsNull() || !v.IsWhollyKnown() {
		return bad("The for_each value is null or unknown.")
	}
	out := map[string]cty.Value{}
	t := v.Type()
	switch {
	case t.IsMapType() || t.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			if len(k.AsString()) > MaxNameLength {
				return bad(fmt.Sprintf("The key %q... has %d bytes; the limit is %d, because a key becomes a directory name under out/.", clipKey(k.AsString()), len(k.AsString()), MaxNameLength))
			}
			out[k.AsString()] = e
		}
	case t.IsSetType() || t.IsListType() || t.IsTupleType():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			s, err := convertTo(e, cty.String)
			if err != nil || s.IsNull() {
				return bad("An element of the for_each collection is not a string.")
			}
			if len(s.AsString()) > MaxNameLength {
				return bad(fmt.Sprintf("The key %q... has %d bytes; the limit is %d, because a key becomes a directory name under out/.", clipKey(s.AsString()), len(s.AsString()), MaxNameLength))
			}
			if _, dup := out[s.AsString()]; dup {
				return bad(fmt.Sprintf("The element %q appears twice.", s.AsString()))
			}
			out[s.AsString()] = s
		}
	default:
		return bad(fmt.Sprintf("The value has type %s.", t.FriendlyName()))
	}
	// An empty collection gives no instance: a stage switched off by a
	// variable (for_each = var.on ? toset(["x"]) : toset([])).
	return out, nil
}

// collectRefs walks the stage body's syntax and returns every reference to
// another stage, validating stage names and instance keys.
func collectRefs(sd *stageDecl, decls map[string]*stageDecl) ([]stageRef, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var refs []stageRef
	body, ok := sd.block.Body.(*hclsyntax.Body)
	if !ok {
		return nil, nil
	}
	var visitBody func(b *hclsyntax.Body, top bool)
	visitExpr := func(e hclsyntax.Expression) {
		for _, t := range hclsyntax.Variables(e) {
			switch t.RootName() {
			case "stage":
				r, d := parseRef(t, sd, decls)
				diags = append(diags, d...)
				if !d.HasErrors() {
					refs = append(refs, r)
				}
			case "each":
				if !sd.hasEach {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Reference to each without for_each",
						Detail:   fmt.Sprintf("each.key and each.value exist only in stages with for_each, and stage %q has none.", sd.name),
						Subject:  t.SourceRange().Ptr(),
					})
				}
			}
		}
	}
	visitBody = func(b *hclsyntax.Body, top bool) {
		attrNames := make([]string, 0, len(b.Attributes))
		for n := range b.Attributes {
			attrNames = append(attrNames, n)
		}
		sort.Strings(attrNames)
		for _, n := range attrNames {
			if top && (n == "kind" || n == "for_each") {
				continue
			}
			visitExpr(b.Attributes[n].Expr)
		}
		for _, blk := range b.Blocks {
			if top && blk.Type == "executor" {
				// Decoded by the engine; stage references there are
				// reported by decodeExecutor.
				continue
			}
			visitBody(blk.Body, false)
		}
	}
	visitBody(body, true)
	return refs, diags
}

func parseRef(t hcl.Traversal, sd *stageDecl, decls map[string]*stageDecl) (stageRef, hcl.Diagnostics) {
	rng := t.SourceRange()
	fail := func(summary, detail string) (stageRef, hcl.Diagnostics) {
		return stageRef{}, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
	}
	if len(t) < 2 {
		return fail("Invalid stage reference", "Refer to a stage output as stage.NAME.out.OUTPUT.")
	}
	ta, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return fail("Invalid stage reference", "Refer to a stage by name, as stage.NAME.out.OUTPUT.")
	}
	target, ok := decls[ta.Name]
	if !ok {
		detail := fmt.Sprintf("There is no stage named %q.", ta.Name)
		// The names are listed only here, for a mistake: listing them for
		// every stage made loading quadratic.
		names := make([]string, 0, len(decls))
		for n := range decls {
			names = append(names, n)
		}
		sort.Strings(names)
		if s := suggest(ta.Name, names); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		return fail("Reference to undeclared stage", detail)
	}
	if target == sd {
		return fail("Self-referencing stage", fmt.Sprintf("Stage %q refers to its own outputs, which do not exist until it has run. Refer to an upstream stage instead.", sd.name))
	}
	r := stageRef{target: ta.Name, rng: rng}
	rest := t[2:]
	if len(rest) > 0 {
		if ix, ok := rest[0].(hcl.TraverseIndex); ok {
			if !target.hasEach {
				return fail("Unexpected instance key", fmt.Sprintf("Stage %q has no for_each, so it has a single instance: refer to it as stage.%s.out.OUTPUT.", ta.Name, ta.Name))
			}
			k, err := convertTo(ix.Key, cty.String)
			if err != nil || k.IsNull() || !k.IsKnown() {
				return fail("Invalid instance key", "An instance key must be a string.")
			}
			r.key, r.keyed = k.AsString(), true
			if target.forEach != nil {
				if _, ok := target.forEach[r.key]; !ok {
					return fail("Unknown stage instance", fmt.Sprintf("Stage %q has no instance %q. Its instances are: %s.", ta.Name, r.key, strings.Join(sortedValueKeys(target.forEach), ", ")))
				}
			}
			rest = rest[1:]
		} else if target.hasEach {
			return fail("Missing instance key", fmt.Sprintf("Stage %q has for_each. Refer to one instance as stage.%s[KEY].out.OUTPUT, or to all of them as stage.%s (an object of instances keyed by KEY).", ta.Name, ta.Name, ta.Name))
		}
	}
	if len(rest) > 0 {
		a, ok := rest[0].(hcl.TraverseAttr)
		if !ok || a.Name != "out" {
			return fail("Unsupported stage attribute", fmt.Sprintf("A stage has one attribute, out, holding its outputs: write stage.%s.out.OUTPUT.", ta.Name))
		}
		rest = rest[1:]
	}
	if len(rest) > 0 {
		if a, ok := rest[0].(hcl.TraverseAttr); ok {
			r.output = a.Name
		}
	}
	return r, nil
}

func sortedValueKeys(m map[string]cty.Value) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

func attrError(a *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: a.Expr.Range().Ptr()}
}

func sourceless(summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
}

// clipKey returns the start of a long instance key, for messages.
func clipKey(k string) string {
	r := []rune(k)
	if len(r) > 20 {
		r = r[:20]
	}
	return string(r)
}
