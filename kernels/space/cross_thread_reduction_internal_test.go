package space

import (
	"strings"
	"testing"

	"dragonx/kernels/trace"
)

// TestThreadIdxExtentFromTrace: the factor is that of the Split that made
// the first threadIdx.x-bound loop a Split made (a loop made by Fuse, as
// MultiLevelTiling binds, is passed over), whether an RV or a constant;
// an extent the Split infers, or no Split at all, is an error.
func TestThreadIdxExtentFromTrace(t *testing.T) {
	parse := func(s string) *trace.Trace {
		tr, err := trace.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	head := `["GetBlock",[],["C","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2"]],` +
		`["Split",["l1","None",4],[1,0],["l3","l4"]],["Fuse",["l2"],[1],["l5"]],["Bind",["l5"],["threadIdx.x"],[]],` +
		`["SampleCategorical",[],[[8,16],[0.5,0.5]],["v6"]],`
	cases := []struct {
		tail, want, err string
	}{
		{`["Split",["l3","None","v6"],[1,0],["l7","l8"]],["Bind",["l8"],["threadIdx.x"],[]]`, `"v6"`, ""},
		{`["Bind",["l4"],["threadIdx.x"],[]]`, `4`, ""},
		{`["Split",["l3","v6","None"],[1,0],["l7","l8"]],["Bind",["l8"],["threadIdx.x"],[]]`, "", "inferred"},
		{`["Bind",["l3"],["blockIdx.x"],[]]`, "", "unable"},
	}
	for i, c := range cases {
		got, err := threadIdxExtentFromTrace(parse(`[[` + head + c.tail + `],[]]`))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("case %d: error %v, want one saying %q", i, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case c.err == "" && got.String() != c.want:
			t.Errorf("case %d: extent %s, want %s", i, got, c.want)
		}
	}
}
