package stages

import (
	"fmt"
	"reflect"

	"github.com/zclconf/go-cty/cty"
)

// OutputRef names one output of one stage instance: what the HCL expression
// stage.gen.out.nums evaluates to. It is the only source of edges in the
// stage graph.
type OutputRef struct {
	Stage  Addr
	Output string
}

// String returns the reference in HCL syntax.
func (r OutputRef) String() string { return r.Stage.String() + ".out." + r.Output }

// ArtifactType is the cty type of an output reference inside HCL evaluation.
// It is a capsule: it can be passed around, put in maps and lists, and
// compared, but not used as a string, because an output is a file or a
// directory, not text.
var ArtifactType = cty.CapsuleWithOps("stage output", reflect.TypeOf(OutputRef{}), &cty.CapsuleOps{
	GoString: func(v any) string { return v.(*OutputRef).String() },
	TypeGoString: func(reflect.Type) string {
		return "stages.ArtifactType"
	},
	Equals: func(a, b any) cty.Value {
		return cty.BoolVal(*a.(*OutputRef) == *b.(*OutputRef))
	},
	RawEquals: func(a, b any) bool { return *a.(*OutputRef) == *b.(*OutputRef) },
	// Converting an output to a string (as a template interpolation does)
	// fails with a message that says what to do instead.
	ConversionFrom: func(dst cty.Type) func(any, cty.Path) (cty.Value, error) {
		if !dst.Equals(cty.String) {
			return nil
		}
		return func(v any, p cty.Path) (cty.Value, error) {
			r := v.(*OutputRef)
			return cty.NilVal, fmt.Errorf("%s is a stage output (a file or directory), not a string; pass it where the stage kind expects an input, such as the inputs map of an exec stage", r)
		}
	},
})

// ArtifactVal wraps r as a cty value of ArtifactType.
func ArtifactVal(r OutputRef) cty.Value { return cty.CapsuleVal(ArtifactType, &r) }

// AsArtifact returns the OutputRef inside v, if v is a known artifact value.
func AsArtifact(v cty.Value) (OutputRef, bool) {
	if v.IsNull() || !v.IsKnown() || !v.Type().Equals(ArtifactType) {
		return OutputRef{}, false
	}
	return *v.EncapsulatedValue().(*OutputRef), true
}
