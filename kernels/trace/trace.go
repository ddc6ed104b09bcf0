package trace

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Trace is a MetaSchedule trace: instructions in order, and the decisions
// of the sampling ones (TVM's Trace, serialised by AsJSON).
type Trace struct {
	Insts []Inst
	// Decisions are [instruction index, value] pairs, in the order they
	// are written (TVM writes them by increasing index).
	Decisions []Decision
}

// Inst is one instruction: [kind, inputs, attrs, outputs].
type Inst struct {
	Kind    string
	Inputs  []Value
	Attrs   []Value
	Outputs []string
}

// Decision is the decision of instruction Index.
type Decision struct {
	Index int
	Value Value
}

// Parse reads a trace in TVM's JSON layout, [insts, decisions]. It checks
// the layout (each instruction a 4-element array with a string kind,
// arrays of inputs and attributes, and string outputs; each decision an
// [index, value] pair with an index in range, at most one per
// instruction), not what the instructions mean: Replay does that.
func Parse(data []byte) (*Trace, error) {
	if t, ok := parseFast(data); ok {
		return t, nil
	}
	v, err := parseValue(data)
	if err != nil {
		return nil, fmt.Errorf("kernels: trace: %w", err)
	}
	return FromValue(v)
}

// parseFast reads a well-formed trace straight into a Trace, without
// building values for the layout itself (instruction 4-tuples, outputs,
// decision pairs). Anything unexpected makes it give up, and Parse takes
// the general path, which explains the problem.
func parseFast(data []byte) (*Trace, bool) {
	p := newParser(data)
	expect := func(c byte) bool {
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == c {
			p.pos++
			return true
		}
		return false
	}
	peek := func(c byte) bool {
		p.space()
		return p.pos < len(p.data) && p.data[p.pos] == c
	}
	// Every instruction opens at least four arrays (itself, its inputs,
	// attributes and outputs): a quarter of the '[' bounds their number,
	// and TVM's traces (5 to 6 brackets per instruction with the
	// decisions) come close to it.
	t := &Trace{Insts: make([]Inst, 0, bytes.Count(data, []byte{'['})/4+1)}
	if !expect('[') || !expect('[') {
		return nil, false
	}
	names := make([]string, 0, len(data)/24+8)
	if !expect(']') {
		for {
			if !expect('[') || !peek('"') {
				return nil, false
			}
			kind, err := p.str()
			if err != nil || kind == "" || !expect(',') {
				return nil, false
			}
			in := Inst{Kind: kind}
			for k := 0; k < 2; k++ {
				v, err := p.value(1)
				if err != nil || v.Kind != Array || !expect(',') {
					return nil, false
				}
				if k == 0 {
					in.Inputs = v.Array
				} else {
					in.Attrs = v.Array
				}
			}
			if !expect('[') {
				return nil, false
			}
			start := len(names)
			if !expect(']') {
				for {
					if !peek('"') {
						return nil, false
					}
					o, err := p.str()
					if err != nil || o == "" {
						return nil, false
					}
					names = append(names, o)
					if expect(']') {
						break
					}
					if !expect(',') {
						return nil, false
					}
				}
			}
			in.Outputs = names[start:len(names):len(names)]
			t.Insts = append(t.Insts, in)
			if !expect(']') {
				return nil, false
			}
			if expect(']') {
				break
			}
			if !expect(',') {
				return nil, false
			}
		}
	}
	if !expect(',') || !expect('[') {
		return nil, false
	}
	if !expect(']') {
		// Decisions belong to the sampling instructions, as a rule.
		n := 0
		for _, in := range t.Insts {
			if strings.HasPrefix(in.Kind, "Sample") {
				n++
			}
		}
		t.Decisions = make([]Decision, 0, n)
		seen := make([]bool, len(t.Insts))
		for {
			if !expect('[') {
				return nil, false
			}
			iv, err := p.value(1)
			if err != nil || iv.Kind != Int || iv.Int < 0 || iv.Int >= int64(len(t.Insts)) || seen[iv.Int] || !expect(',') {
				return nil, false
			}
			seen[iv.Int] = true
			d, err := p.value(1)
			if err != nil || !expect(']') {
				return nil, false
			}
			t.Decisions = append(t.Decisions, Decision{Index: int(iv.Int), Value: d})
			if expect(']') {
				break
			}
			if !expect(',') {
				return nil, false
			}
		}
	}
	if !expect(']') {
		return nil, false
	}
	p.space()
	return t, p.pos == len(p.data)
}

// FromValue reads a trace from a parsed JSON value (for traces embedded in
// tuning records).
func FromValue(v Value) (*Trace, error) {
	if v.Kind != Array || len(v.Array) != 2 || v.Array[0].Kind != Array || v.Array[1].Kind != Array {
		return nil, fmt.Errorf("kernels: trace: want [instructions, decisions], got %s", describeValue(v))
	}
	t := &Trace{Insts: make([]Inst, len(v.Array[0].Array))}
	for i, iv := range v.Array[0].Array {
		if iv.Kind != Array || len(iv.Array) != 4 {
			return nil, fmt.Errorf("kernels: trace: instruction %d: want [kind, inputs, attrs, outputs], got %s", i, describeValue(iv))
		}
		kind, inputs, attrs, outputs := iv.Array[0], iv.Array[1], iv.Array[2], iv.Array[3]
		if kind.Kind != String || kind.Str == "" {
			return nil, fmt.Errorf("kernels: trace: instruction %d: the kind must be a non-empty string, got %s", i, describeValue(kind))
		}
		if inputs.Kind != Array || attrs.Kind != Array || outputs.Kind != Array {
			return nil, fmt.Errorf("kernels: trace: instruction %d (%s): inputs, attrs and outputs must be arrays", i, kind.Str)
		}
		in := Inst{Kind: kind.Str, Inputs: inputs.Array, Attrs: attrs.Array, Outputs: make([]string, len(outputs.Array))}
		for k, o := range outputs.Array {
			if o.Kind != String || o.Str == "" {
				return nil, fmt.Errorf("kernels: trace: instruction %d (%s): output %d must be a name, got %s", i, kind.Str, k, describeValue(o))
			}
			in.Outputs[k] = o.Str
		}
		t.Insts[i] = in
	}
	seen := map[int]bool{}
	for _, dv := range v.Array[1].Array {
		if dv.Kind != Array || len(dv.Array) != 2 || dv.Array[0].Kind != Int {
			return nil, fmt.Errorf("kernels: trace: decisions must be [index, value] pairs, got %s", describeValue(dv))
		}
		idx := dv.Array[0].Int
		if idx < 0 || idx >= int64(len(t.Insts)) {
			return nil, fmt.Errorf("kernels: trace: decision for instruction %d, but the trace has %d instructions", idx, len(t.Insts))
		}
		if seen[int(idx)] {
			return nil, fmt.Errorf("kernels: trace: two decisions for instruction %d", idx)
		}
		seen[int(idx)] = true
		t.Decisions = append(t.Decisions, Decision{Index: int(idx), Value: dv.Array[1]})
	}
	return t, nil
}

func describeValue(v Value) string {
	s := v.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return v.Kind.String() + " " + s
}

// AppendJSON appends the trace in TVM's compact JSON, byte for byte what
// TVM's database writer produces for the same trace.
func (t *Trace) AppendJSON(b []byte) []byte {
	b = append(b, '[', '[')
	for i, in := range t.Insts {
		if i > 0 {
			b = append(b, ',')
		}
		b = in.AppendJSON(b)
	}
	b = append(b, ']', ',', '[')
	for i, d := range t.Decisions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = IntValue(int64(d.Index)).AppendJSON(b)
		b = append(b, ',')
		b = d.Value.AppendJSON(b)
		b = append(b, ']')
	}
	return append(b, ']', ']')
}

// AppendJSON appends one instruction, [kind,inputs,attrs,outputs].
func (in Inst) AppendJSON(b []byte) []byte {
	b = append(b, '[')
	b = appendString(b, in.Kind)
	b = append(b, ',')
	b = ArrayValue(in.Inputs...).AppendJSON(b)
	b = append(b, ',')
	b = ArrayValue(in.Attrs...).AppendJSON(b)
	b = append(b, ',', '[')
	for i, o := range in.Outputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, o)
	}
	return append(b, ']', ']')
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (t *Trace) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// String returns the trace's JSON.
func (t *Trace) String() string { return string(t.AppendJSON(nil)) }

// Decision returns the decision of instruction i.
func (t *Trace) Decision(i int) (Value, bool) {
	for _, d := range t.Decisions {
		if d.Index == i {
			return d.Value, true
		}
	}
	return Value{}, false
}

// decisionOf returns the decision of instruction i in place (nil if none),
// as Decision finds it, without copying it; the pointer is valid until the
// decisions change.
func (t *Trace) decisionOf(i int) *Value {
	for k := range t.Decisions {
		if t.Decisions[k].Index == i {
			return &t.Decisions[k].Value
		}
	}
	return nil
}

// SetDecision sets (or replaces) the decision of instruction i, keeping
// decisions sorted by index.
func (t *Trace) SetDecision(i int, v Value) {
	for k, d := range t.Decisions {
		if d.Index == i {
			t.Decisions[k].Value = v
			return
		}
	}
	t.Decisions = append(t.Decisions, Decision{Index: i, Value: v})
	slices.SortStableFunc(t.Decisions, func(a, b Decision) int { return a.Index - b.Index })
}

// Postproc returns the index of the EnterPostproc instruction, or -1.
func (t *Trace) Postproc() int {
	for i, in := range t.Insts {
		if in.Kind == "EnterPostproc" {
			return i
		}
	}
	return -1
}

// WithoutPostproc returns the trace cut before EnterPostproc (TVM's
// remove_postproc), sharing instructions with t.
func (t *Trace) WithoutPostproc() *Trace {
	n := t.Postproc()
	if n < 0 {
		return t.Clone()
	}
	out := &Trace{Insts: slices.Clone(t.Insts[:n])}
	for _, d := range t.Decisions {
		if d.Index < n {
			out.Decisions = append(out.Decisions, d)
		}
	}
	return out
}

// Clone returns a copy whose instruction and decision lists can be
// changed independently (values are shared; they are never modified).
func (t *Trace) Clone() *Trace {
	return &Trace{Insts: slices.Clone(t.Insts), Decisions: slices.Clone(t.Decisions)}
}

// Python returns the trace as TVM prints it in Python (sch.get_block(...)),
// one line per instruction: for reading, not for parsing.
func (t *Trace) Python() string {
	var b strings.Builder
	for i, in := range t.Insts {
		d, hasDecision := t.Decision(i)
		b.WriteString(in.python(d, hasDecision))
		b.WriteByte('\n')
	}
	return b.String()
}

func (in Inst) python(d Value, hasDecision bool) string {
	var args []string
	for _, v := range in.Inputs {
		args = append(args, pyValue(v, true))
	}
	for _, v := range in.Attrs {
		args = append(args, pyValue(v, false))
	}
	if hasDecision {
		args = append(args, "decision="+pyValue(d, false))
	}
	call := "sch." + snake(in.Kind) + "(" + strings.Join(args, ", ") + ")"
	if len(in.Outputs) > 0 {
		return strings.Join(in.Outputs, ", ") + " = " + call
	}
	return call
}

func pyValue(v Value, input bool) string {
	switch v.Kind {
	case String:
		if input {
			return v.Str // an RV name, None, or a literal already quoted
		}
		return `"` + v.Str + `"`
	case Array:
		parts := make([]string, len(v.Array))
		for i, x := range v.Array {
			parts[i] = pyValue(x, input)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case Bool:
		if v.Int != 0 {
			return "True"
		}
		return "False"
	case Null:
		return "None"
	}
	return v.String()
}

func snake(kind string) string {
	if kind == "RFactor" {
		return "rfactor" // TVM's name, not r_factor
	}
	var b strings.Builder
	for i, r := range kind {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
