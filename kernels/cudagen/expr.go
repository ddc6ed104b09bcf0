package cudagen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"dragonx/kernels/ir"
)

// exprWriter prints ir expressions as CUDA C++: integers in int (32 bits,
// as TVM's CUDA code indexes), bools as bool, float32 as float, float64 as
// double.
type exprWriter struct {
	name func(*ir.Var) (string, error)
	load func(*ir.BufferLoad) (string, error)
}

func (w *exprWriter) expr(e ir.Expr) (string, error) {
	var sb strings.Builder
	if err := w.write(&sb, e); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (w *exprWriter) write(sb *strings.Builder, e ir.Expr) error {
	t := e.DType()
	if t == ir.Float16 {
		return fmt.Errorf("%w: float16 expression %s", ErrUnsupported, ir.ExprString(e))
	}
	switch x := e.(type) {
	case *ir.IntImm:
		switch {
		case t == ir.Bool:
			sb.WriteString(strconv.FormatBool(x.Value() != 0))
		case x.Value() > math.MaxInt32 || x.Value() < math.MinInt32:
			return fmt.Errorf("%w: integer constant %d does not fit int", ErrUnsupported, x.Value())
		case x.Value() < 0:
			fmt.Fprintf(sb, "(%d)", x.Value())
		default:
			sb.WriteString(strconv.FormatInt(x.Value(), 10))
		}
		return nil
	case *ir.FloatImm:
		sb.WriteString(floatLit(x.Value(), t))
		return nil
	case *ir.Var:
		n, err := w.name(x)
		if err != nil {
			return err
		}
		sb.WriteString(n)
		return nil
	case *ir.BufferLoad:
		s, err := w.load(x)
		if err != nil {
			return err
		}
		sb.WriteString(s)
		return nil
	case *ir.Not:
		sb.WriteString("(!")
		if err := w.write(sb, x.A()); err != nil {
			return err
		}
		sb.WriteString(")")
		return nil
	case *ir.Select:
		return w.ternary(sb, x.Cond(), x.True(), x.False())
	case *ir.Cast:
		return w.cast(sb, t, x.A())
	case *ir.Binary:
		return w.binary(sb, x)
	case *ir.Call:
		return w.call(sb, x)
	}
	return fmt.Errorf("%w: expression %T (%s)", ErrUnsupported, e, ir.ExprString(e))
}

// floatLit prints v exactly: the shortest decimal that reads back as the
// same float (or double).
func floatLit(v float64, t ir.DType) string {
	bits, suffix, typ := 32, "f", "float"
	if t == ir.Float64 {
		bits, suffix, typ = 64, "", "double"
	}
	switch {
	case math.IsNaN(v):
		return "((" + typ + ")NAN)"
	case math.IsInf(v, 1):
		return "((" + typ + ")INFINITY)"
	case math.IsInf(v, -1):
		return "(-(" + typ + ")INFINITY)"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if v < 0 || strings.HasPrefix(s, "-") {
		return "(" + s + suffix + ")"
	}
	return s + suffix
}

func (w *exprWriter) ternary(sb *strings.Builder, c, a, b ir.Expr) error {
	sb.WriteString("(")
	for i, e := range []ir.Expr{c, a, b} {
		if i == 1 {
			sb.WriteString(" ? ")
		} else if i == 2 {
			sb.WriteString(" : ")
		}
		if err := w.write(sb, e); err != nil {
			return err
		}
	}
	sb.WriteString(")")
	return nil
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

func (w *exprWriter) cast(sb *strings.Builder, t ir.DType, a ir.Expr) error {
	ct := ctype(t)
	if t.IsInt() && (t == ir.Int8 || t == ir.UInt8) {
		// Narrow, then back to int: integers are int here.
		sb.WriteString("((int)(" + ct + ")(")
	} else {
		sb.WriteString("((" + ct + ")(")
	}
	if err := w.write(sb, a); err != nil {
		return err
	}
	sb.WriteString("))")
	return nil
}

var binC = map[ir.BinOp]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/", ir.OpMod: "%", ir.OpEQ: "==", ir.OpNE: "!=",
	ir.OpLT: "<", ir.OpLE: "<=", ir.OpGT: ">", ir.OpGE: ">=", ir.OpAnd: "&&", ir.OpOr: "||",
}

func (w *exprWriter) binary(sb *strings.Builder, x *ir.Binary) error {
	at := x.A().DType()
	float := at.IsFloat()
	f32 := at == ir.Float32
	fn := ""
	switch x.Op() {
	case ir.OpMod:
		if float {
			fn = "fmod"
			if f32 {
				fn = "fmodf"
			}
		}
	case ir.OpFloorDiv, ir.OpFloorMod:
		if !float && nonNegative(x.A()) && positiveConst(x.B()) {
			// C's truncating / and % are floor division and modulo here.
			op := "/"
			if x.Op() == ir.OpFloorMod {
				op = "%"
			}
			return w.infix(sb, x, op)
		}
		switch {
		case float && !f32:
			return fmt.Errorf("%w: %s of %s", ErrUnsupported, x.Op(), at)
		case float:
			fn = "dx_floordivf"
			if x.Op() == ir.OpFloorMod {
				fn = "dx_floormodf"
			}
		default:
			fn = "dx_floordiv"
			if x.Op() == ir.OpFloorMod {
				fn = "dx_floormod"
			}
		}
	case ir.OpMin, ir.OpMax:
		fn = x.Op().String()
		if float {
			fn = "f" + fn
			if f32 {
				fn += "f"
			}
		}
	}
	if fn != "" {
		sb.WriteString(fn + "(")
		if err := w.write(sb, x.A()); err != nil {
			return err
		}
		sb.WriteString(", ")
		if err := w.write(sb, x.B()); err != nil {
			return err
		}
		sb.WriteString(")")
		return nil
	}
	op, ok := binC[x.Op()]
	if !ok {
		return fmt.Errorf("%w: operator %s", ErrUnsupported, x.Op())
	}
	return w.infix(sb, x, op)
}

func (w *exprWriter) infix(sb *strings.Builder, x *ir.Binary, op string) error {
	sb.WriteString("(")
	if err := w.write(sb, x.A()); err != nil {
		return err
	}
	sb.WriteString(" " + op + " ")
	if err := w.write(sb, x.B()); err != nil {
		return err
	}
	sb.WriteString(")")
	return nil
}

// nonNegative reports whether integer expression e is never negative:
// loop variables, thread and block indices, non-negative constants, and
// sums, products, divisions and modulos by positive constants, minima and
// maxima of such.
func nonNegative(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.IntImm:
		return x.Value() >= 0
	case *ir.Var:
		return true // only loop variables and launch indices are in scope
	case *ir.Cast:
		return x.DType().IsInt() && x.A().DType().IsInt() && x.DType().Bits() >= x.A().DType().Bits() && nonNegative(x.A())
	case *ir.Binary:
		switch x.Op() {
		case ir.OpAdd, ir.OpMul, ir.OpMin, ir.OpMax:
			return nonNegative(x.A()) && nonNegative(x.B())
		case ir.OpFloorDiv, ir.OpFloorMod, ir.OpDiv, ir.OpMod:
			return nonNegative(x.A()) && positiveConst(x.B())
		}
	}
	return false
}

func positiveConst(e ir.Expr) bool {
	c, ok := e.(*ir.IntImm)
	return ok && c.Value() > 0
}

var callF = map[ir.CallOp]string{
	ir.CallExp: "exp", ir.CallLog: "log", ir.CallSqrt: "sqrt", ir.CallRsqrt: "rsqrt", ir.CallTanh: "tanh",
	ir.CallErf: "erf", ir.CallPow: "pow", ir.CallFabs: "fabs", ir.CallFloor: "floor", ir.CallCeil: "ceil",
	ir.CallRound: "rint", ir.CallSin: "sin", ir.CallCos: "cos",
}

func (w *exprWriter) call(sb *strings.Builder, x *ir.Call) error {
	args := x.Args()
	if len(args) != x.Op().Arity() {
		return fmt.Errorf("%w: %s with %d arguments", ErrUnsupported, x.Op(), len(args))
	}
	if x.Op() == ir.CallIfThenElse {
		return w.ternary(sb, args[0], args[1], args[2])
	}
	t := x.DType()
	if !t.IsFloat() {
		return fmt.Errorf("%w: %s of %s", ErrUnsupported, x.Op(), t)
	}
	var fn string
	if x.Op() == ir.CallSigmoid {
		if t != ir.Float32 {
			return fmt.Errorf("%w: sigmoid of %s", ErrUnsupported, t)
		}
		fn = "dx_sigmoidf"
	} else {
		base, ok := callF[x.Op()]
		if !ok {
			return fmt.Errorf("%w: call %s", ErrUnsupported, x.Op())
		}
		fn = base
		if t == ir.Float32 {
			fn += "f"
		}
	}
	sb.WriteString(fn + "(")
	for i, a := range args {
		if i > 0 {
			sb.WriteString(", ")
		}
		if err := w.write(sb, a); err != nil {
			return err
		}
	}
	sb.WriteString(")")
	return nil
}
