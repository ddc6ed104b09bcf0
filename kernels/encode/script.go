package encode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"dragonx/kernels/ir"
	"dragonx/kernels/trace"
)

// rvType is the type of a random variable, told by the first letter of
// its TVM name: b (block), l (loop), v (expression).
type rvType uint8

const (
	blockRV rvType = iota
	loopRV
	exprRV
)

const rvLetters = "blv"

func rvTypeOf(name string) (rvType, bool) {
	if name == "" {
		return 0, false
	}
	switch name[0] {
	case 'b':
		return blockRV, true
	case 'l':
		return loopRV, true
	case 'v':
		return exprRV, true
	}
	return 0, false
}

// ref is a positional reference: the idx-th RV of its type defined so far.
type ref struct {
	typ rvType
	idx int
}

// blockNames returns the names of f's blocks in pre-order, the root
// first: block name k of a script (#k).
func blockNames(f *ir.PrimFunc) map[string]int {
	m := map[string]int{}
	for i, b := range ir.Blocks(f) {
		if _, dup := m[b.Name]; !dup {
			m[b.Name] = i
		}
	}
	return m
}

// Encode writes the script text of trace t, a trace of workload f: the
// instructions up to and including EnterPostproc (what follows is what the
// postprocessors write, which Decode reruns), RVs referred to by position,
// block names of f by their index, and each sampling decision inlined into
// the instruction that uses its outputs (docs/encoding.md). It checks the
// syntax only: Lossless also checks that the script decodes back to t.
func Encode(f *ir.PrimFunc, t *trace.Trace) ([]byte, error) {
	script, _, err := EncodeSpans(f, t)
	return script, err
}

// Span locates the decision of instruction Inst in a script: bytes
// [Start, End).
type Span struct {
	Inst       int
	Start, End int
}

// EncodeSpans is Encode, and where each decision is written in the
// script, in script order.
func EncodeSpans(f *ir.PrimFunc, t *trace.Trace) ([]byte, []Span, error) {
	// Values as the JSON reads them back: a float that prints as an
	// integer is an integer, so that a script is a function of the JSON.
	tc, err := trace.Parse(t.AppendJSON(nil))
	if err != nil {
		return nil, nil, fmt.Errorf("encode: %w", err)
	}
	e := &encoder{blocks: blockNames(f), names: map[string]ref{}}
	n := len(tc.Insts)
	if p := tc.Postproc(); p >= 0 {
		n = p + 1
	}
	e.decisions = make([]*trace.Value, n)
	for _, d := range tc.Decisions {
		if d.Index < n {
			v := d.Value
			e.decisions[d.Index] = &v
		}
	}
	insts := tc.Insts[:n]
	for i := 0; i < n; i++ {
		in := insts[i]
		if err := isKind(in.Kind); err != nil {
			return nil, nil, fmt.Errorf("encode: inst %d: %w", i, err)
		}
		var inline *trace.Inst
		run := -1
		if i > 0 && e.inlined[i-1] {
			prev := insts[i-1]
			inline, run = &prev, runOf(in.Inputs, prev.Outputs)
		}
		if e.canInline(insts, i) {
			// Written inside the next instruction.
			continue
		}
		if err := e.inst(in, i, inline, run); err != nil {
			return nil, nil, err
		}
		e.buf.WriteByte('\n')
	}
	return e.buf.Bytes(), e.spans, nil
}

type encoder struct {
	buf       bytes.Buffer
	blocks    map[string]int
	names     map[string]ref
	counts    [3]int
	decisions []*trace.Value
	inlined   []bool // by instruction: written inside the next one
	spans     []Span
}

// canInline reports (and records) whether instruction i is written
// inside instruction i+1: it carries a decision and outputs, is not the
// host of an inlined instruction itself, and i+1's top-level inputs hold
// all its outputs as one run, in order, and nowhere else.
func (e *encoder) canInline(insts []trace.Inst, i int) bool {
	for len(e.inlined) <= i {
		e.inlined = append(e.inlined, false)
	}
	ok := e.decisions[i] != nil && len(insts[i].Outputs) > 0 && i+1 < len(insts) &&
		!(i > 0 && e.inlined[i-1]) && runOf(insts[i+1].Inputs, insts[i].Outputs) >= 0
	e.inlined[i] = ok
	return ok
}

// runOf returns where outs appear in inputs as one contiguous run at the
// top level, or -1 if they do not, or also appear elsewhere (nested or
// at the top level).
func runOf(inputs []trace.Value, outs []string) int {
	if len(outs) == 0 || len(outs) > len(inputs) {
		return -1
	}
	at := -1
	for k := 0; k+len(outs) <= len(inputs) && at < 0; k++ {
		match := true
		for j, o := range outs {
			if v := inputs[k+j]; v.Kind != trace.String || v.Str != o {
				match = false
				break
			}
		}
		if match {
			at = k
		}
	}
	if at < 0 {
		return -1
	}
	for k, v := range inputs {
		if k >= at && k < at+len(outs) {
			continue
		}
		if mentions(v, outs, 0) {
			return -1
		}
	}
	return at
}

func mentions(v trace.Value, names []string, depth int) bool {
	switch v.Kind {
	case trace.String:
		for _, n := range names {
			if v.Str == n {
				return true
			}
		}
	case trace.Array, trace.Object:
		if depth > maxDepth {
			return true
		}
		for _, x := range v.Array {
			if mentions(x, names, depth+1) {
				return true
			}
		}
	}
	return false
}

// inst writes instruction in (index i), with instruction inline written
// in place of the run of its outputs at input run, and names its outputs.
func (e *encoder) inst(in trace.Inst, i int, inline *trace.Inst, run int) error {
	e.buf.WriteString(in.Kind)
	for k := 0; k < len(in.Inputs); k++ {
		if inline != nil && k == run {
			e.buf.WriteString(" (")
			if err := e.inst(*inline, i-1, nil, -1); err != nil {
				return err
			}
			e.buf.WriteByte(')')
			k += len(inline.Outputs) - 1
			continue
		}
		e.buf.WriteByte(' ')
		if err := e.input(in.Inputs[k], 0); err != nil {
			return fmt.Errorf("encode: inst %d %s: input %d: %w", i, in.Kind, k, err)
		}
	}
	if len(in.Attrs) > 0 {
		e.buf.WriteString(" |")
		for k, a := range in.Attrs {
			e.buf.WriteByte(' ')
			if err := e.attr(a, 0); err != nil {
				return fmt.Errorf("encode: inst %d %s: attribute %d: %w", i, in.Kind, k, err)
			}
		}
	}
	if d := e.decisions[i]; d != nil {
		e.buf.WriteString(" = ")
		start := e.buf.Len()
		if err := e.attr(*d, 0); err != nil {
			return fmt.Errorf("encode: inst %d %s: decision: %w", i, in.Kind, err)
		}
		e.spans = append(e.spans, Span{Inst: i, Start: start, End: e.buf.Len()})
	}
	for k, o := range in.Outputs {
		typ, ok := rvTypeOf(o)
		if !ok {
			return fmt.Errorf("encode: inst %d %s: output %d is %q, not a TVM random-variable name (b, l or v and a number)", i, in.Kind, k, o)
		}
		if _, dup := e.names[o]; dup {
			return fmt.Errorf("encode: inst %d %s: output %d redefines %s", i, in.Kind, k, o)
		}
		e.names[o] = ref{typ, e.counts[typ]}
		e.counts[typ]++
	}
	return nil
}

// maxDepth bounds the nesting of values, in both directions.
const maxDepth = 32

func (e *encoder) input(v trace.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch v.Kind {
	case trace.String:
		if r, ok := e.names[v.Str]; ok {
			e.buf.WriteByte(rvLetters[r.typ])
			e.buf.WriteString(strconv.Itoa(r.idx))
			return nil
		}
		if v.Str == "None" {
			e.buf.WriteString("None")
			return nil
		}
		if len(v.Str) >= 2 && v.Str[0] == '"' && v.Str[len(v.Str)-1] == '"' {
			e.buf.WriteString(strconv.Quote(v.Str[1 : len(v.Str)-1]))
			return nil
		}
		return fmt.Errorf("%q is neither a random variable defined earlier, None, nor a quoted literal", v.Str)
	case trace.Array:
		e.buf.WriteByte('[')
		for k, x := range v.Array {
			if k > 0 {
				e.buf.WriteByte(' ')
			}
			if err := e.input(x, depth+1); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
		return nil
	case trace.Object:
		return e.object(v, depth, e.input)
	}
	return e.scalar(v)
}

func (e *encoder) attr(v trace.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch v.Kind {
	case trace.String:
		if k, ok := e.blocks[v.Str]; ok {
			e.buf.WriteByte('#')
			e.buf.WriteString(strconv.Itoa(k))
			return nil
		}
		e.buf.WriteString(strconv.Quote(v.Str))
		return nil
	case trace.Array:
		e.buf.WriteByte('[')
		for k, x := range v.Array {
			if k > 0 {
				e.buf.WriteByte(' ')
			}
			if err := e.attr(x, depth+1); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
		return nil
	case trace.Object:
		return e.object(v, depth, e.attr)
	}
	return e.scalar(v)
}

func (e *encoder) object(v trace.Value, depth int, elem func(trace.Value, int) error) error {
	e.buf.WriteByte('{')
	for k := 0; k+1 < len(v.Array); k += 2 {
		if k > 0 {
			e.buf.WriteByte(' ')
		}
		e.buf.WriteString(strconv.Quote(v.Array[k].Str))
		e.buf.WriteByte(' ')
		if err := elem(v.Array[k+1], depth+1); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

func (e *encoder) scalar(v trace.Value) error {
	switch v.Kind {
	case trace.Null:
		e.buf.WriteString("null")
	case trace.Bool:
		e.buf.WriteString(strconv.FormatBool(v.Int != 0))
	case trace.Int:
		e.buf.WriteString(strconv.FormatInt(v.Int, 10))
	case trace.Float:
		e.buf.WriteString(formatFloat(v.Float()))
	default:
		return fmt.Errorf("unexpected %s value", v.Kind)
	}
	return nil
}

// formatFloat writes f in the shortest form that reads back the same
// float64, always with a '.' or an exponent so that it reads as a float.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == 'e' {
			return s
		}
	}
	return s + ".0"
}

// reserved are the words of the script that are not instruction kinds.
var reserved = map[string]bool{"None": true, "NaN": true, "Infinity": true, "true": true, "false": true, "null": true}

// isKind checks that name can be written as an instruction kind: a
// capital letter, then letters, digits or '_', and not a reserved word.
func isKind(name string) error {
	if name == "" || name[0] < 'A' || name[0] > 'Z' || reserved[name] {
		return fmt.Errorf("instruction kind %q cannot be written in a script (want a capitalised identifier)", name)
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("instruction kind %q cannot be written in a script (want a capitalised identifier)", name)
		}
	}
	return nil
}
