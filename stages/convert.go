package stages

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

func convertTo(v cty.Value, t cty.Type) (cty.Value, error) { return convert.Convert(v, t) }
