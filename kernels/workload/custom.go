package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"dragonx/kernels/analysis"
	"dragonx/kernels/ir"
)

// Custom is a workload described block by block rather than by a family
// builder: the modules of shared/data/tvm-traces recorded outside the
// benchmark families (a Relay dense, Relax matmuls, softmax and RMS norm,
// a Winograd convolution). Parse accepts three layouts of
// {"family":"custom", ...}:
//
//   - flat: "params" (buffers with shapes), optional "alloc_buffers",
//     "blocks" in program order, each with "loops" ([name, extent] pairs,
//     outermost first), "iters" ({var, kind S or R, extent}), optional
//     "bindings" (one expression of the loop vars per iter var; by default
//     iter var i is bound to loop i), optional "init" and a "body", both
//     assignments in the expression syntax of ParseExpr, and optional
//     "annotations"; "func_attrs" and "block_annotations" (by block name)
//     add attributes;
//   - "tvm_module": the same blocks under functions[0] (one function), with
//     the root block's "alloc_buffers" listed as a block named "root";
//   - builtin: "blocks_in_order" and "equivalent_direct_conv" without block
//     bodies, for a TOPI module dragonx builds in Go (the CUDA NHWC
//     Winograd convolution with bias and ReLU); the blocks the builder
//     makes must be the ones listed.
//
// Block, buffer and loop names are kept exactly: traces look blocks up by
// name and cache stages are named after buffers.
type Custom struct {
	Name        string
	Description string

	doc       canonicalDoc
	dtype     ir.DType
	winograd  *Spec // builtin Winograd module: its direct-convolution spec
	canonical string
}

// canonicalDoc is the normalized description, in the flat layout; its JSON
// encoding is the canonical form.
type canonicalDoc struct {
	Family       string                     `json:"family"`
	Name         string                     `json:"name"`
	Description  string                     `json:"description,omitempty"`
	Func         string                     `json:"func,omitempty"`
	Params       []bufferDoc                `json:"params"`
	AllocBuffers []bufferDoc                `json:"alloc_buffers,omitempty"`
	Blocks       []blockDoc                 `json:"blocks,omitempty"`
	FuncAttrs    map[string]json.RawMessage `json:"func_attrs,omitempty"`
	// Builtin modules.
	BlocksInOrder        []string        `json:"blocks_in_order,omitempty"`
	EquivalentDirectConv json.RawMessage `json:"equivalent_direct_conv,omitempty"`
}

// customDoc is the union of the accepted layouts.
type customDoc struct {
	Family               string                                `json:"family"`
	Name                 string                                `json:"name"`
	Description          string                                `json:"description"`
	DType                string                                `json:"dtype"`
	Func                 string                                `json:"func"`
	Params               []bufferDoc                           `json:"params"`
	AllocBuffers         []bufferDoc                           `json:"alloc_buffers"`
	Blocks               []blockDoc                            `json:"blocks"`
	FuncAttrs            map[string]json.RawMessage            `json:"func_attrs"`
	BlockAnnotations     map[string]map[string]json.RawMessage `json:"block_annotations"`
	BlocksInOrder        []string                              `json:"blocks_in_order"`
	EquivalentDirectConv json.RawMessage                       `json:"equivalent_direct_conv"`
	TVMModule            *tvmModuleDoc                         `json:"tvm_module"`
}

type tvmModuleDoc struct {
	StructuralHash string        `json:"structural_hash"`
	TVMVersion     string        `json:"tvm_version"`
	Functions      []functionDoc `json:"functions"`
}

type functionDoc struct {
	Name   string      `json:"name"`
	Params []bufferDoc `json:"params"`
	Blocks []blockDoc  `json:"blocks"`
}

type bufferDoc struct {
	Param  string  `json:"param,omitempty"` // the handle's name in a Relax module; not used by the IR
	Buffer string  `json:"buffer"`
	Shape  []int64 `json:"shape"`
	DType  string  `json:"dtype,omitempty"`
}

type blockDoc struct {
	Name         string                     `json:"name"`
	AllocBuffers []bufferDoc                `json:"alloc_buffers,omitempty"`
	Loops        []loopDoc                  `json:"loops,omitempty"`
	Iters        []iterDoc                  `json:"iters,omitempty"`
	Bindings     []string                   `json:"bindings,omitempty"`
	Init         string                     `json:"init,omitempty"`
	Body         string                     `json:"body,omitempty"`
	Annotations  map[string]json.RawMessage `json:"annotations,omitempty"`
}

type iterDoc struct {
	Var    string `json:"var"`
	Kind   string `json:"kind"`
	Extent int64  `json:"extent"`
}

// loopDoc is a loop written as a [name, extent] pair.
type loopDoc struct {
	Name   string
	Extent int64
}

// loopError is a malformed loop; encoding/json returns it unwrapped.
type loopError struct{ msg string }

func (e *loopError) Error() string { return e.msg }

func (l *loopDoc) UnmarshalJSON(data []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil || len(pair) != 2 {
		return &loopError{fmt.Sprintf("a loop is a [name, extent] pair, got %s", abbrev(data))}
	}
	if err := json.Unmarshal(pair[0], &l.Name); err != nil {
		return &loopError{fmt.Sprintf("a loop name is a string, got %s", abbrev(pair[0]))}
	}
	if !intLiteral.Match(pair[1]) || json.Unmarshal(pair[1], &l.Extent) != nil {
		return &loopError{fmt.Sprintf("a loop extent is an integer, got %s", abbrev(pair[1]))}
	}
	return nil
}

func (l loopDoc) MarshalJSON() ([]byte, error) {
	name, err := json.Marshal(l.Name)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "[%s,%d]", name, l.Extent), nil
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxCustomRank bounds buffer ranks; TVM's benchmark modules go up to 6.
const maxCustomRank = 8

// parseCustom decodes and validates a custom workload, building it once to
// check every expression.
func parseCustom(data []byte) (*Custom, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d customDoc
	if err := dec.Decode(&d); err != nil {
		return nil, customDecodeError(err)
	}
	c, err := normalize(&d)
	if err != nil {
		return nil, err
	}
	if _, err := c.Build(); err != nil {
		return nil, err
	}
	return c, nil
}

var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

func customDecodeError(err error) error {
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		return fieldErrorf(CustomFamily, m[1], "unknown field")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fieldErrorf(CustomFamily, te.Field, "want %s, got JSON %s", te.Type, te.Value)
	}
	var le *loopError
	if errors.As(err, &le) {
		return fieldErrorf(CustomFamily, "loops", "%s", le.msg)
	}
	return fmt.Errorf("kernels: workload custom: invalid JSON: %w", err)
}

func customErr(field, format string, args ...any) error {
	return fieldErrorf(CustomFamily, field, format, args...)
}

// normalize checks the structure of a decoded description and brings it
// to the flat canonical layout.
func normalize(d *customDoc) (*Custom, error) {
	if d.Name == "" {
		return nil, customErr("name", "missing: a custom workload needs a name")
	}
	cd := canonicalDoc{Family: CustomFamily, Name: d.Name, Description: d.Description, Func: d.Func}
	dtype := d.DType
	if dtype == "" {
		dtype = "float32"
	}
	if _, err := ir.ParseDType(dtype); err != nil {
		return nil, customErr("dtype", "unknown dtype %q", dtype)
	}
	prefix := ""
	blocks := d.Blocks
	params := d.Params
	cd.AllocBuffers = d.AllocBuffers
	switch {
	case d.TVMModule != nil:
		if d.Params != nil || d.Blocks != nil || d.AllocBuffers != nil || d.BlocksInOrder != nil {
			return nil, customErr("tvm_module", "a tvm_module description holds its params and blocks inside")
		}
		if len(d.TVMModule.Functions) != 1 {
			return nil, customErr("tvm_module.functions", "want exactly one function, got %d", len(d.TVMModule.Functions))
		}
		fn := d.TVMModule.Functions[0]
		prefix = "tvm_module.functions[0]."
		if fn.Name != "" {
			cd.Func = fn.Name
		}
		params, blocks = fn.Params, nil
		for i, b := range fn.Blocks {
			if b.Name != ir.RootBlockName {
				blocks = append(blocks, b)
				continue
			}
			if i != 0 || len(b.Loops)+len(b.Iters)+len(b.Bindings) > 0 || b.Init != "" || b.Body != "" {
				return nil, customErr(fmt.Sprintf("%sblocks[%d]", prefix, i), "the root block comes first and only lists alloc_buffers")
			}
			cd.AllocBuffers = b.AllocBuffers
		}
	case d.BlocksInOrder != nil:
		for _, f := range []struct {
			name string
			set  bool
		}{{"blocks", d.Blocks != nil}, {"alloc_buffers", d.AllocBuffers != nil}, {"func_attrs", d.FuncAttrs != nil},
			{"block_annotations", d.BlockAnnotations != nil}, {"func", d.Func != ""}} {
			if f.set {
				return nil, customErr(f.name, "a builtin module (blocks_in_order) is built in Go and takes no %s", f.name)
			}
		}
		cd.BlocksInOrder = d.BlocksInOrder
		cd.EquivalentDirectConv = d.EquivalentDirectConv
	}
	if d.EquivalentDirectConv != nil && d.BlocksInOrder == nil {
		return nil, customErr("equivalent_direct_conv", "only a builtin module (blocks_in_order) takes it")
	}
	if cd.Func == "" && cd.BlocksInOrder == nil {
		cd.Func = "main"
	}
	if cd.Func != "" && !identifier.MatchString(cd.Func) {
		return nil, customErr(prefix+"name", "function name %q is not an identifier", cd.Func)
	}
	if len(params) == 0 {
		return nil, customErr(prefix+"params", "missing: a function needs parameters")
	}
	var err error
	if cd.Params, err = normBuffers(prefix+"params", params, dtype); err != nil {
		return nil, err
	}
	if cd.AllocBuffers, err = normBuffers("alloc_buffers", cd.AllocBuffers, dtype); err != nil {
		return nil, err
	}
	if len(d.FuncAttrs) > 0 {
		cd.FuncAttrs = d.FuncAttrs
	}
	c := &Custom{Name: d.Name, Description: d.Description}
	c.dtype, _ = ir.ParseDType(cd.Params[0].DType)
	if cd.BlocksInOrder != nil {
		if err := c.initWinograd(&cd); err != nil {
			return nil, err
		}
	} else {
		if len(blocks) == 0 {
			return nil, customErr(prefix+"blocks", "missing: a custom workload needs blocks")
		}
		names := map[string]bool{}
		for i, b := range blocks {
			where := fmt.Sprintf("%sblocks[%d]", prefix, i)
			nb, err := normBlock(where, b)
			if err != nil {
				return nil, err
			}
			if names[nb.Name] {
				return nil, customErr(where+".name", "block %s appears twice", nb.Name)
			}
			names[nb.Name] = true
			if ann, ok := d.BlockAnnotations[nb.Name]; ok {
				if nb.Annotations == nil {
					nb.Annotations = map[string]json.RawMessage{}
				}
				for k, v := range ann {
					nb.Annotations[k] = v
				}
			}
			cd.Blocks = append(cd.Blocks, nb)
		}
		for name := range d.BlockAnnotations {
			if !names[name] {
				return nil, customErr("block_annotations", "no block named %s", name)
			}
		}
	}
	c.doc = cd
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cd); err != nil {
		return nil, customErr("", "cannot encode the description: %v", err)
	}
	c.canonical = strings.TrimSuffix(buf.String(), "\n")
	return c, nil
}

func normBuffers(where string, bufs []bufferDoc, dtype string) ([]bufferDoc, error) {
	var out []bufferDoc
	for i, b := range bufs {
		w := fmt.Sprintf("%s[%d]", where, i)
		if !identifier.MatchString(b.Buffer) {
			return nil, customErr(w+".buffer", "buffer name %q is not an identifier", b.Buffer)
		}
		if len(b.Shape) == 0 || len(b.Shape) > maxCustomRank {
			return nil, customErr(w+".shape", "want 1 to %d extents, got %d", maxCustomRank, len(b.Shape))
		}
		n := int64(1)
		for _, e := range b.Shape {
			if e < 1 {
				return nil, customErr(w+".shape", "extent %d must be at least 1", e)
			}
			if e > maxElements || n*e > maxElements {
				return nil, customErr(w+".shape", "buffer %s would have more than %d elements", b.Buffer, maxElements)
			}
			n *= e
		}
		if b.DType == "" {
			b.DType = dtype
		}
		if t, err := ir.ParseDType(b.DType); err != nil || t.IsBool() {
			return nil, customErr(w+".dtype", "unsupported buffer dtype %q", b.DType)
		}
		out = append(out, b)
	}
	return out, nil
}

func normBlock(where string, b blockDoc) (blockDoc, error) {
	if !identifier.MatchString(b.Name) || b.Name == ir.RootBlockName {
		return b, customErr(where+".name", "block name %q is not an identifier other than root", b.Name)
	}
	if len(b.AllocBuffers) > 0 {
		return b, customErr(where+".alloc_buffers", "only the root block allocates buffers")
	}
	if len(b.Iters) == 0 {
		return b, customErr(where+".iters", "missing: a block needs iter vars")
	}
	seen := map[string]bool{}
	for i, l := range b.Loops {
		w := fmt.Sprintf("%s.loops[%d]", where, i)
		if !identifier.MatchString(l.Name) || seen[l.Name] {
			return b, customErr(w, "loop name %q is not a new identifier", l.Name)
		}
		if l.Extent < 1 || l.Extent > maxElements {
			return b, customErr(w, "extent %d is not in [1, %d]", l.Extent, maxElements)
		}
		seen[l.Name] = true
	}
	seen = map[string]bool{}
	for i, it := range b.Iters {
		w := fmt.Sprintf("%s.iters[%d]", where, i)
		if !identifier.MatchString(it.Var) || seen[it.Var] {
			return b, customErr(w+".var", "iter var name %q is not a new identifier", it.Var)
		}
		seen[it.Var] = true
		if it.Kind != "S" && it.Kind != "R" {
			return b, customErr(w+".kind", "kind %q is not S (spatial) or R (reduce)", it.Kind)
		}
		if it.Extent < 1 || it.Extent > maxElements {
			return b, customErr(w+".extent", "extent %d is not in [1, %d]", it.Extent, maxElements)
		}
	}
	if b.Bindings == nil {
		if len(b.Loops) != len(b.Iters) {
			return b, customErr(where+".bindings", "missing: with %d loops and %d iter vars the bindings must be given", len(b.Loops), len(b.Iters))
		}
		for _, l := range b.Loops {
			b.Bindings = append(b.Bindings, l.Name)
		}
	}
	if len(b.Bindings) != len(b.Iters) {
		return b, customErr(where+".bindings", "%d bindings for %d iter vars", len(b.Bindings), len(b.Iters))
	}
	if b.Body == "" {
		return b, customErr(where+".body", "missing: a block needs a body")
	}
	return b, nil
}

// Canonical returns the normalized description as compact JSON (flat
// layout, dtypes explicit, bindings explicit, block_annotations merged into
// their blocks, object keys sorted). Expressions are kept as written.
func (c *Custom) Canonical() string { return c.canonical }

// BlockNames lists the blocks in program order.
func (c *Custom) BlockNames() []string {
	if c.winograd != nil {
		return append([]string(nil), c.doc.BlocksInOrder...)
	}
	var names []string
	for _, b := range c.doc.Blocks {
		names = append(names, b.Name)
	}
	return names
}

// Build returns a new function for the description.
func (c *Custom) Build() (*ir.PrimFunc, error) {
	if c.winograd != nil {
		return c.buildWinograd()
	}
	mk := func(bs []bufferDoc) []*ir.Buffer {
		var out []*ir.Buffer
		for _, b := range bs {
			t, _ := ir.ParseDType(b.DType)
			out = append(out, ir.NewBuffer(b.Buffer, t, b.Shape, "global"))
		}
		return out
	}
	params, allocs := mk(c.doc.Params), mk(c.doc.AllocBuffers)
	bufs := append(append([]*ir.Buffer(nil), params...), allocs...)
	var stmts []ir.Stmt
	for i, b := range c.doc.Blocks {
		s, err := buildBlock(fmt.Sprintf("blocks[%d]", i), b, bufs)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
	}
	f := ir.NewPrimFunc(c.doc.Func, params, allocs, ir.Seq(stmts...))
	for _, k := range sortedKeys(c.doc.FuncAttrs) {
		v, err := annValue(c.doc.FuncAttrs[k])
		if err != nil {
			return nil, customErr("func_attrs."+k, "%v", err)
		}
		f.Attrs.Set(k, v)
	}
	if err := analysis.VerifyWellFormed(f); err != nil {
		return nil, customErr("blocks", "the module is not well formed: %v", err)
	}
	return f, nil
}

func buildBlock(where string, b blockDoc, bufs []*ir.Buffer) (ir.Stmt, error) {
	loops := make([]*ir.Var, len(b.Loops))
	for i, l := range b.Loops {
		loops[i] = ir.NewVar(l.Name, ir.LoopVarType(l.Extent))
	}
	blk := &ir.Block{Name: b.Name}
	values := make([]ir.Expr, len(b.Iters))
	for i, it := range b.Iters {
		kind := ir.Spatial
		if it.Kind == "R" {
			kind = ir.Reduce
		}
		v := ir.NewVar(it.Var, ir.LoopVarType(it.Extent))
		blk.IterVars = append(blk.IterVars, ir.IterVar{Var: v, Dom: ir.Dom{Min: 0, Extent: it.Extent}, Kind: kind})
		e, err := ParseExpr(b.Bindings[i], Env{Vars: loops})
		if err != nil {
			return nil, customErr(fmt.Sprintf("%s.bindings[%d]", where, i), "%v", err)
		}
		if !e.DType().IsInt() {
			return nil, customErr(fmt.Sprintf("%s.bindings[%d]", where, i), "binding of type %s", e.DType())
		}
		values[i] = ir.CastTo(v.DType(), e)
	}
	env := Env{Buffers: bufs}
	for _, iv := range blk.IterVars {
		env.Vars = append(env.Vars, iv.Var)
	}
	if b.Init != "" {
		st, err := ParseStore(b.Init, env)
		if err != nil {
			return nil, customErr(where+".init", "%v", err)
		}
		blk.Init = st
	}
	st, err := ParseStore(b.Body, env)
	if err != nil {
		return nil, customErr(where+".body", "%v", err)
	}
	blk.Body = st
	for _, k := range sortedKeys(b.Annotations) {
		v, err := annValue(b.Annotations[k])
		if err != nil {
			return nil, customErr(where+".annotations."+k, "%v", err)
		}
		blk.Annotations.Set(k, v)
	}
	blk.Reads, blk.Writes = analysis.BlockAccessRegion(blk)
	var s ir.Stmt = &ir.BlockRealize{IterValues: values, Block: blk}
	for i := len(loops) - 1; i >= 0; i-- {
		s = ir.Loop(loops[i], b.Loops[i].Extent, s)
	}
	return s, nil
}

// annValue converts a JSON annotation value: integers to AnnInt, other
// numbers to AnnFloat, strings, bools, and arrays of those.
func annValue(raw json.RawMessage) (ir.AnnValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return annFromAny(v, 0)
}

func annFromAny(v any, depth int) (ir.AnnValue, error) {
	if depth > 16 {
		return nil, errors.New("annotation nested too deeply")
	}
	switch x := v.(type) {
	case json.Number:
		if intLiteral.MatchString(string(x)) {
			n, err := x.Int64()
			if err != nil {
				return nil, fmt.Errorf("integer %s out of range", x)
			}
			return ir.AnnInt(n), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", x)
		}
		return ir.AnnFloat(f), nil
	case string:
		return ir.AnnString(x), nil
	case bool:
		return ir.AnnBool(x), nil
	case []any:
		arr := ir.AnnArray{}
		for _, e := range x {
			a, err := annFromAny(e, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, a)
		}
		return arr, nil
	}
	return nil, fmt.Errorf("unsupported annotation value %v (want a number, string, bool or array)", v)
}
