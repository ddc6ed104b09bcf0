package interp

import (
	"fmt"
	"math"

	"dragonx/kernels/ir"
)

type float interface{ ~float32 | ~float64 }

func dtypeOf[T float]() ir.DType {
	var z T
	if _, ok := any(z).(float32); ok {
		return ir.Float32
	}
	return ir.Float64
}

func (c *compiler) f32Expr(e ir.Expr) (f32Fn, error) { return floatExpr[float32](c, e) }
func (c *compiler) f64Expr(e ir.Expr) (f64Fn, error) { return floatExpr[float64](c, e) }

// floatExpr compiles a float expression computed in T (float32 arithmetic
// rounds every operation to float32, as the generated C and CUDA do).
func floatExpr[T float](c *compiler, e ir.Expr) (func(*frame) T, error) {
	if want := dtypeOf[T](); e.DType() != want {
		return nil, fmt.Errorf("%w: %s where %s is needed in %s", errType, e.DType(), want, ir.ExprString(e))
	}
	switch x := e.(type) {
	case *ir.FloatImm:
		v := T(x.Value())
		return func(*frame) T { return v }, nil
	case *ir.BufferLoad:
		off, bi, err := c.offset("load of", x.Buffer(), x.Indices())
		if err != nil {
			return nil, err
		}
		return func(fr *frame) T { return T(fr.bufs[bi][off(fr)]) }, nil
	case *ir.Binary:
		a, err := floatExpr[T](c, x.A())
		if err != nil {
			return nil, err
		}
		if k, ok := x.B().(*ir.FloatImm); ok && x.Op() == ir.OpMul {
			kv := T(k.Value())
			return func(fr *frame) T { return a(fr) * kv }, nil
		}
		b, err := floatExpr[T](c, x.B())
		if err != nil {
			return nil, err
		}
		switch x.Op() {
		case ir.OpAdd:
			return func(fr *frame) T { return a(fr) + b(fr) }, nil
		case ir.OpSub:
			return func(fr *frame) T { return a(fr) - b(fr) }, nil
		case ir.OpMul:
			return func(fr *frame) T { return a(fr) * b(fr) }, nil
		case ir.OpDiv:
			return func(fr *frame) T { return a(fr) / b(fr) }, nil
		case ir.OpMin:
			return func(fr *frame) T { return min(a(fr), b(fr)) }, nil
		case ir.OpMax:
			return func(fr *frame) T { return max(a(fr), b(fr)) }, nil
		case ir.OpFloorDiv:
			return func(fr *frame) T { return T(math.Floor(float64(a(fr) / b(fr)))) }, nil
		case ir.OpFloorMod:
			return func(fr *frame) T {
				u, v := a(fr), b(fr)
				return u - T(math.Floor(float64(u/v)))*v
			}, nil
		case ir.OpMod:
			return func(fr *frame) T { return T(math.Mod(float64(a(fr)), float64(b(fr)))) }, nil
		}
	case *ir.Select:
		cond, err := c.boolExpr(x.Cond())
		if err != nil {
			return nil, err
		}
		t, err := floatExpr[T](c, x.True())
		if err != nil {
			return nil, err
		}
		f, err := floatExpr[T](c, x.False())
		if err != nil {
			return nil, err
		}
		return func(fr *frame) T {
			tv, fv := t(fr), f(fr)
			if cond(fr) {
				return tv
			}
			return fv
		}, nil
	case *ir.Cast:
		if f, ok, err := castFrom[T](c, x.A()); ok {
			return f, err
		}
	case *ir.Call:
		return floatCall[T](c, x)
	}
	return nil, fmt.Errorf("cannot evaluate %s as %s", ir.ExprString(e), dtypeOf[T]())
}

// number is every Go type the interpreter computes in.
type number interface{ ~int64 | ~float32 | ~float64 }

// castFrom compiles e in its own type (integer or bool, float32, float64)
// and converts each result to T with Go's conversion. ok is false when e's
// type is none of those.
func castFrom[T number](c *compiler, e ir.Expr) (fn func(*frame) T, ok bool, err error) {
	from := e.DType()
	switch {
	case from.IsInt() || from.IsBool():
		return convert[int64, T](c.intExpr(e))
	case from == ir.Float32:
		return convert[float32, T](c.f32Expr(e))
	case from == ir.Float64:
		return convert[float64, T](c.f64Expr(e))
	}
	return nil, false, nil
}

func convert[F, T number](a func(*frame) F, err error) (func(*frame) T, bool, error) {
	if err != nil {
		return nil, true, err
	}
	return func(fr *frame) T { return T(a(fr)) }, true, nil
}

func floatCall[T float](c *compiler, x *ir.Call) (func(*frame) T, error) {
	args := x.Args()
	if x.Op() == ir.CallIfThenElse {
		cond, err := c.boolExpr(args[0])
		if err != nil {
			return nil, err
		}
		t, err := floatExpr[T](c, args[1])
		if err != nil {
			return nil, err
		}
		f, err := floatExpr[T](c, args[2])
		if err != nil {
			return nil, err
		}
		return func(fr *frame) T {
			if cond(fr) {
				return t(fr)
			}
			return f(fr)
		}, nil
	}
	a, err := floatExpr[T](c, args[0])
	if err != nil {
		return nil, err
	}
	if x.Op() == ir.CallPow {
		b, err := floatExpr[T](c, args[1])
		if err != nil {
			return nil, err
		}
		return func(fr *frame) T { return T(math.Pow(float64(a(fr)), float64(b(fr)))) }, nil
	}
	var fn func(float64) float64
	switch x.Op() {
	case ir.CallExp:
		fn = math.Exp
	case ir.CallLog:
		fn = math.Log
	case ir.CallSqrt:
		fn = math.Sqrt
	case ir.CallRsqrt:
		fn = func(v float64) float64 { return 1 / math.Sqrt(v) }
	case ir.CallTanh:
		fn = math.Tanh
	case ir.CallSigmoid:
		fn = func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	case ir.CallErf:
		fn = math.Erf
	case ir.CallFabs:
		fn = math.Abs
	case ir.CallFloor:
		fn = math.Floor
	case ir.CallCeil:
		fn = math.Ceil
	case ir.CallRound:
		fn = math.RoundToEven
	case ir.CallSin:
		fn = math.Sin
	case ir.CallCos:
		fn = math.Cos
	default:
		return nil, fmt.Errorf("cannot evaluate %s", x.Op())
	}
	return func(fr *frame) T { return T(fn(float64(a(fr)))) }, nil
}
