package cudagen

import (
	"fmt"
	"math"
	"strconv"

	"dragonx/kernels/internal/cexpr"
	"dragonx/kernels/ir"
)

// dialect is CUDA C++: integers in int (32 bits, as TVM's CUDA code
// indexes), bools as bool, float32 as float, float64 as double; constants
// as the shortest decimal that reads back as the same value; CUDA's math
// functions (min, fminf, rsqrtf, ...) and the kernel prelude's dx_*
// helpers for floor division and sigmoid.
var dialect = &cexpr.Dialect{
	Err:   ErrUnsupported,
	Int:   intLit,
	Real:  func(t ir.DType) string { return ctype(t) },
	Float: cexpr.Decimal,
	Cast: func(t ir.DType) (string, string) {
		if t == ir.Int8 || t == ir.UInt8 {
			// Narrow, then back to int: integers are int here.
			return "((int)(" + ctype(t) + ")(", "))"
		}
		return "((" + ctype(t) + ")(", "))"
	},
	Func: func(op ir.BinOp, t ir.DType) (string, error) {
		f32 := t == ir.Float32
		switch op {
		case ir.OpFloorDiv, ir.OpFloorMod:
			fn := "dx_" + op.String()
			switch {
			case t.IsFloat() && !f32:
				return "", fmt.Errorf("%w: %s of %s", ErrUnsupported, op, t)
			case f32:
				fn += "f"
			}
			return fn, nil
		case ir.OpMin, ir.OpMax:
			fn := op.String()
			if t.IsFloat() {
				fn = "f" + fn
				if f32 {
					fn += "f"
				}
			}
			return fn, nil
		}
		return "", nil
	},
	Call: func(op ir.CallOp, t ir.DType) (string, error) {
		var fn string
		switch op {
		case ir.CallSigmoid:
			if t != ir.Float32 {
				return "", fmt.Errorf("%w: sigmoid of %s", ErrUnsupported, t)
			}
			return "dx_sigmoidf", nil
		case ir.CallRsqrt:
			fn = "rsqrt"
		case ir.CallRound:
			fn = "rint"
		default:
			var ok bool
			if fn, ok = cexpr.MathName(op); !ok {
				return "", fmt.Errorf("%w: call %s", ErrUnsupported, op)
			}
		}
		if t == ir.Float32 {
			fn += "f"
		}
		return fn, nil
	},
}

// intLit writes an integer constant as an int, a bool as true or false.
func intLit(v int64, t ir.DType) (string, error) {
	switch {
	case t == ir.Bool:
		return strconv.FormatBool(v != 0), nil
	case v > math.MaxInt32 || v < math.MinInt32:
		return "", fmt.Errorf("%w: integer constant %d does not fit int", ErrUnsupported, v)
	case v < 0:
		return fmt.Sprintf("(%d)", v), nil
	}
	return strconv.FormatInt(v, 10), nil
}

func ctype(t ir.DType) string {
	switch t {
	case ir.Float32:
		return "float"
	case ir.Float64:
		return "double"
	case ir.Bool:
		return "bool"
	case ir.Int8:
		return "signed char"
	case ir.UInt8:
		return "unsigned char"
	}
	return "int"
}
