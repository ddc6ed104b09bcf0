package trace_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"dragonx/kernels/trace"
)

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in string
		want     string
	}{
		{"empty", ``, "unexpected end of input"},
		{"not json", `[[["GetBlock",[],["a","main"],["b0"]]],[]`, "unterminated array"},
		{"not a pair", `[1]`, "want [instructions, decisions]"},
		{"three parts", `[[],[],[]]`, "want [instructions, decisions]"},
		{"instruction not a tuple", `[[["GetBlock",[],["a","main"]]],[]]`, "instruction 0: want [kind, inputs, attrs, outputs]"},
		{"kind not a string", `[[[1,[],[],[]]],[]]`, "instruction 0: the kind must be a non-empty string"},
		{"inputs not an array", `[[["GetLoops","b0",[],[]]],[]]`, "inputs, attrs and outputs must be arrays"},
		{"output not a name", `[[["GetLoops",["b0"],[],[3]]],[]]`, "output 0 must be a name"},
		{"decision not a pair", `[[["EnterPostproc",[],[],[]]],[[0]]]`, "decisions must be [index, value] pairs"},
		{"decision out of range", `[[["EnterPostproc",[],[],[]]],[[1,2]]]`, "decision for instruction 1, but the trace has 1 instructions"},
		{"two decisions", `[[["EnterPostproc",[],[],[]]],[[0,2],[0,3]]]`, "two decisions for instruction 0"},
		{"trailing data", `[[],[]] x`, "unexpected 'x' after the value"},
		{"leading zero", `[[["A",[01],[],[]]],[]]`, "leading zero"},
		{"bad escape", `[[["A",["\q"],[],[]]],[]]`, `unknown escape \q`},
		{"huge integer", `[[["A",[99999999999999999999],[],[]]],[]]`, "does not fit in 64 bits"},
		{"too deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), "nesting deeper than 64"},
		{"object key", `[[["A",[{1:2}],[],[]]],[]]`, "expected a string key"},
	}
	for _, c := range cases {
		_, err := trace.Parse([]byte(c.in))
		if err == nil {
			t.Errorf("%s: Parse(%q) succeeded, want an error mentioning %q", c.name, c.in, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "kernels: trace: ") {
			t.Errorf("%s: Parse(%q) = %v, want an error mentioning %q", c.name, c.in, err, c.want)
		}
	}
	_, err := trace.Parse([]byte(`[[["A",[01],[],[]]],[]]`))
	if !errors.Is(err, trace.ErrSyntax) {
		t.Errorf("a syntax error does not wrap ErrSyntax: %v", err)
	}
}

// TestValueFormat checks the JSON TVM writes: compact, floats with 20
// significant digits (C's %.20g), quotes escaped inside literals.
func TestValueFormat(t *testing.T) {
	cases := []struct {
		v    trace.Value
		want string
	}{
		{trace.FloatValue(0.2), "0.2000000000000000111"},
		{trace.FloatValue(0.25), "0.25"},
		{trace.FloatValue(1.0 / 6), "0.16666666666666665741"},
		{trace.FloatValue(0.125), "0.125"},
		{trace.FloatValue(2.7532844871794869994e-05), "2.7532844871794869994e-05"},
		{trace.FloatValue(1e21), "1e+21"},
		{trace.FloatValue(math.Inf(1)), "Infinity"},
		{trace.IntValue(-3), "-3"},
		{trace.StringValue(`"SSSRRSRS"`), `"\"SSSRRSRS\""`},
		{trace.StringValue("a\\b\n"), `"a\\b\n"`},
		{trace.BoolValue(true), "true"},
		{trace.ArrayValue(trace.IntsValue([]int64{1, 2}), trace.ArrayValue()), "[[1,2],[]]"},
		{trace.ObjectValue(trace.Member{Key: "a", Value: trace.IntValue(1)}, trace.Member{Key: "b", Value: trace.StringValue("x")}), `{"a":1,"b":"x"}`},
	}
	for _, c := range cases {
		if got := c.v.String(); got != c.want {
			t.Errorf("%v prints %s, want %s", c.v, got, c.want)
		}
	}
	// Values round-trip through the parser.
	for _, c := range cases {
		in := `[[["X",[` + c.want + `],[],[]]],[]]`
		tr, err := trace.Parse([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := tr.String(); got != in {
			t.Errorf("round trip of %s gives %s", in, got)
		}
		if !tr.Insts[0].Inputs[0].Equal(c.v) {
			t.Errorf("%s parses to %v, want %v", c.want, tr.Insts[0].Inputs[0], c.v)
		}
	}
}

func TestTraceHelpers(t *testing.T) {
	tr, data := readTrace(t, "cuda-dense-nt-128")
	if got := tr.Postproc(); got != 35 {
		t.Errorf("Postproc() = %d, want 35", got)
	}
	sketch := tr.WithoutPostproc()
	if len(sketch.Insts) != 35 || len(sketch.Decisions) != 6 {
		t.Errorf("WithoutPostproc: %d insts, %d decisions", len(sketch.Insts), len(sketch.Decisions))
	}
	if tr.String() != string(data) {
		t.Error("WithoutPostproc changed the original")
	}
	c := tr.Clone()
	c.SetDecision(25, trace.IntValue(3))
	if d, _ := c.Decision(25); d.Int != 3 {
		t.Errorf("SetDecision did not set: %v", d)
	}
	if d, _ := tr.Decision(25); d.Int != 1 {
		t.Errorf("SetDecision on a clone changed the original: %v", d)
	}
	py := tr.Python()
	for _, want := range []string{
		`b0 = sch.get_block("T_matmul_NT", "main")`,
		`v5, v6, v7, v8, v9 = sch.sample_perfect_tile(l2, 5, 64, decision=[8, 1, 16, 1, 1])`,
		`sch.annotate(b0, "SSSRRSRS", "meta_schedule.tiling_structure")`,
		`l59, l60, l61 = sch.split(l58, None, 128, 2, 1, 0)`,
	} {
		if !strings.Contains(py, want) {
			t.Errorf("Python() lacks %q", want)
		}
	}
	if k, ok := trace.LookupKind("GetSBlock"); !ok || !k.Pure {
		t.Error("GetSBlock is not a known pure kind")
	}
	if len(trace.Kinds()) < 28 {
		t.Errorf("%d kinds", len(trace.Kinds()))
	}
}
