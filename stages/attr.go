package stages

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// AttrValue evaluates attribute name of content, for a kind's Decode, as a
// value of type want. It returns ok false when the attribute is absent, and
// also, with a diagnostic at the attribute's expression, when it does not
// evaluate or is null, a stage output or of another type.
func AttrValue(content *hcl.BodyContent, name string, want cty.Type, eval *hcl.EvalContext) (*hcl.Attribute, cty.Value, hcl.Diagnostics, bool) {
	a, ok := content.Attributes[name]
	if !ok {
		return nil, cty.NilVal, nil, false
	}
	v, diags := a.Expr.Value(eval)
	if diags.HasErrors() {
		return nil, cty.NilVal, diags, false
	}
	bad := func(what string) (*hcl.Attribute, cty.Value, hcl.Diagnostics, bool) {
		return nil, cty.NilVal, append(diags, attrError(a, "Invalid "+name, fmt.Sprintf("%s must be a %s, not %s.", name, want.FriendlyName(), what))), false
	}
	if v.IsNull() {
		return bad("null")
	}
	if _, isRef := AsArtifact(v); isRef {
		return bad("a stage output")
	}
	cv, err := convertTo(v, want)
	if err != nil {
		return bad(v.Type().FriendlyName())
	}
	return a, cv, diags, true
}

// WholeNumber returns v, a number, as an int64 if it is a whole number in
// range.
func WholeNumber(v cty.Value) (int64, bool) {
	if v.IsNull() || !v.IsKnown() || !v.Type().Equals(cty.Number) {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	n, acc := bf.Int64()
	if acc != big.Exact {
		return 0, false
	}
	return n, true
}
