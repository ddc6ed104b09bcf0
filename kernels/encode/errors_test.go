package encode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dragonx/kernels/trace"
)

func acceptedDraw(t *testing.T, fam string) (*trace.Trace, []byte) {
	t.Helper()
	f := benchFunc(t, fam, 0)
	for _, s := range draws(t, f, 1, 40) {
		if s.OK() {
			sc, err := Encode(f, s.Trace)
			if err != nil {
				t.Fatal(err)
			}
			return s.Trace, sc
		}
	}
	t.Fatalf("no accepted draw of %s/0 in 40", fam)
	return nil, nil
}

// TestLosslessRefuses: traces that a script cannot carry exactly are
// refused by Lossless with the reason, never encoded to a script that
// decodes to something else.
func TestLosslessRefuses(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	tr, _ := acceptedDraw(t, "GMM")
	cases := []struct {
		name string
		edit func(*trace.Trace)
		want string
	}{
		{"a postprocessor instruction dropped", func(t *trace.Trace) { t.Insts = t.Insts[:len(t.Insts)-1] }, "decodes to another trace"},
		{"an RV renamed", func(t *trace.Trace) {
			r, err := trace.Parse([]byte(strings.ReplaceAll(t.String(), `"b0"`, `"b7"`)))
			if err != nil {
				panic(err)
			}
			*t = *r
		}, "decodes to another trace"},
		{"an output that is not a TVM name", func(t *trace.Trace) { t.Insts[0].Outputs = []string{"x"} }, "not a TVM random-variable name"},
		{"an input naming no RV", func(t *trace.Trace) {
			t.Insts[2].Inputs = append([]trace.Value{trace.StringValue("b99")}, t.Insts[2].Inputs[1:]...)
		}, "neither a random variable"},
		{"a kind that cannot be written", func(t *trace.Trace) { t.Insts[1].Kind = "get-block" }, "cannot be written"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := tr.Clone()
			for i := range m.Insts {
				m.Insts[i].Inputs = append([]trace.Value(nil), m.Insts[i].Inputs...)
			}
			c.edit(m)
			_, err := Lossless(ctx, f, m, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Lossless: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestDecodeErrors: each kind of bad script gives its error, naming the
// line.
func TestDecodeErrors(t *testing.T) {
	ctx := context.Background()
	f := benchFunc(t, "GMM", 0)
	_, script := acceptedDraw(t, "GMM")
	lines := strings.SplitAfter(string(script), "\n")
	cases := []struct {
		name, script, want string
		syntax             bool
	}{
		{"empty line", "\n", "expected an instruction kind", true},
		{"no final newline", strings.TrimSuffix(string(script), "\n"), "expected the end of the line", true},
		{"unknown block", "GetBlock | #9 \"main\"\n", "block #9: the workload has 2 blocks", true},
		{"bad reference", "GetLoops b01\n", "expected a value", true},
		{"unterminated string", "Annotate b0 \"SSS\n", "unterminated string", true},
		{"inline without decision", "GetBlock | #1 \"main\"\nGetLoops b0\nSplit l0 (SamplePerfectTile l0 | 5 64) | 1 0\n", "has no decision", true},
		{"nested inline", "Split l0 (SamplePerfectTile l0 (X) = 1)\n", "cannot inline another", true},
		{"reference to an undefined loop", "GetBlock | #1 \"main\"\nGetLoops l3\n", "only 0 loops are defined", false},
		{"sampling without a decision", "GetBlock | #1 \"main\"\nGetLoops b0\nSamplePerfectTile l0 | 5 64\n", "must give its decision", false},
		{"instruction after EnterPostproc", "EnterPostproc\nGetBlock | #1 \"main\"\n", "after EnterPostproc", false},
		{"unknown kind", "Frobnicate\n", "unknown instruction kind", false},
		{"not canonical: spacing", strings.Replace(string(script), " | ", "  | ", 1), "not the canonical script", false},
		{"not canonical: block by name", strings.Replace(string(script), "#1", `"Z"`, 1), "not the canonical script", false},
		{"not canonical: decision not inlined", lines[0] + lines[1] + lines[2] + lines[3] +
			"SamplePerfectTile l0 | 5 64 = [1 1 1 1 1]\nSplit l0 v0 v1 v2 v3 v4 | 1 0\n", "not the canonical script", false},
		{"a decision that does not fit", strings.Replace(string(script), "= [1 1 4 8 4]", "= [1 1 4 8 5]", 1), "decision", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Decode(ctx, f, []byte(c.script), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode: %v, want an error containing %q", err, c.want)
			}
			if tr != nil {
				t.Fatal("a trace returned with the error")
			}
			if errors.Is(err, ErrSyntax) != c.syntax {
				t.Fatalf("errors.Is(err, ErrSyntax) = %v, want %v (%v)", !c.syntax, c.syntax, err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("the error does not name the line: %v", err)
			}
		})
	}
}
