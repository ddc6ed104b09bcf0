package exec

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

func convertString(v cty.Value) (cty.Value, error) { return convert.Convert(v, cty.String) }

func convertNumber(v cty.Value) (cty.Value, error) { return convert.Convert(v, cty.Number) }
